// Which ranks of a multi-process job would put two NCCL ranks on one physical
// GPU, or mix ranks on CPUs with ranks on GPUs (cli/devices.h's SharedGpuNote): the decision every rank takes alike
// from the gathered hosts and PCI bus ids, after which the gradient buckets
// go through the CPU instead of NCCL. The all-gather itself runs in every
// multi-process test (train_mpi_test): CPU towers say "cpu" and keep MPI.
#include <gtest/gtest.h>

#include "towerflow/cli/devices.h"

namespace tw::cli {
namespace {

TEST(SharedGpuTest, RanksOnTheirOwnGpusOrOnCpusKeepTheirDevice) {
  EXPECT_EQ(SharedGpuNote({}), "");
  EXPECT_EQ(SharedGpuNote({"cpu", "cpu", "cpu"}), "") << "CPU towers share nothing NCCL needs";
  EXPECT_EQ(SharedGpuNote({"a 0000:3b:00.0", "a 0000:5e:00.0", "b 0000:3b:00.0", "b 0000:5e:00.0"}), "")
      << "one bus id on two hosts is two GPUs";
}

TEST(SharedGpuTest, TwoRanksOnOneGpuAreNamed) {
  // Two ranks each seeing "GPU 0" of their own (CUDA_VISIBLE_DEVICES) have
  // different bus ids; two ranks on logical GPUs of one card have the same.
  const std::string note = SharedGpuNote({"a 0000:3b:00.0", "a 0000:5e:00.0", "a 0000:3b:00.0"});
  EXPECT_NE(note.find("ranks 0 and 2 share a GPU (a 0000:3b:00.0)"), std::string::npos) << note;
  EXPECT_NE(note.find("MPI"), std::string::npos) << note;
  EXPECT_NE(SharedGpuNote({"h CUDA device 0", "h CUDA device 0"}), "") << "no bus id: the ordinal names it";
}

TEST(SharedGpuTest, RanksOnCpusBesideRanksOnGpusAllTakeMpi) {
  const std::string note = SharedGpuNote({"a 0000:3b:00.0", "cpu", "b 0000:3b:00.0"});
  EXPECT_NE(note.find("rank 1 trains on CPUs and rank 0 on a GPU (a 0000:3b:00.0)"), std::string::npos) << note;
}

}  // namespace
}  // namespace tw::cli
