// Which ranks of a multi-process job would put two NCCL ranks on one physical
// GPU, or mix ranks on CPUs with ranks on GPUs (cli/devices.h's SharedGpuNote): the decision every rank takes alike
// from the gathered hosts and PCI bus ids, after which the gradient buckets
// go through the CPU instead of NCCL. The all-gather itself runs in every
// multi-process test (train_mpi_test): CPU towers say "cpu" and keep MPI.
// Also which GPUs each rank of a host takes and opens (RankGpus), and the
// ordinals a session opens from SessionOptions (OpenedCudaGpus).
#include <gtest/gtest.h>

#include "towerflow/cli/devices.h"
#include "towerflow/device/device_set.h"

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

// The towers and opened GPUs of every local rank, as "towers | opened".
std::vector<std::string> Ranks(int physical, int logical, int ranks) {
  std::vector<std::string> out;
  for (int r = 0; r < ranks; ++r) {
    const ResolvedDevices d = RankGpus(physical, logical, {.local_rank = r, .local_size = ranks});
    EXPECT_TRUE(d.uses_gpus);
    std::string line;
    for (size_t t = 0; t < d.towers.size(); ++t) {
      const std::string& tower = d.towers[t];
      line += (line.empty() ? "" : ",") + tower.substr(tower.rfind(':') + 1);
      // Every tower is on a GPU the rank opens, and on the card that holds
      // the host's logical GPU it stands for (the rank's share, in order).
      const int ordinal = CudaOrdinalOf(tower, logical, d.visible_gpus);
      EXPECT_GE(ordinal, 0) << tower << " of rank " << r;
      const int per_rank = std::max(1, physical * logical / ranks);
      const int gpus = physical * logical;
      const int host_index = gpus >= ranks ? r * per_rank + static_cast<int>(t) : r % gpus;
      EXPECT_EQ(ordinal, host_index / logical) << tower << " of rank " << r;
    }
    line += " |";
    for (const int o : d.visible_gpus) line += " " + std::to_string(o);
    out.push_back(line);
  }
  return out;
}

TEST(RankGpusTest, OneRankTakesEveryGpuAsCudaNumbersThem) {
  EXPECT_EQ(Ranks(1, 1, 1), std::vector<std::string>({"0 |"}));
  EXPECT_EQ(Ranks(4, 1, 1), std::vector<std::string>({"0,1,2,3 |"}));
  EXPECT_EQ(Ranks(2, 2, 1), std::vector<std::string>({"0,1,2,3 |"}));
}

TEST(RankGpusTest, RanksOpenOnlyTheirOwnGpusRenumberedFromZero) {
  // 8 GPUs, 8 ranks: rank r trains on CUDA device r, which is its GPU:0.
  const std::vector<std::string> eight = Ranks(8, 1, 8);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(eight[static_cast<size_t>(r)], "0 | " + std::to_string(r));
  EXPECT_EQ(Ranks(4, 1, 2), std::vector<std::string>({"0,1 | 0 1", "0,1 | 2 3"}));
  // 3 GPUs for 2 ranks: one each, the third unused (even towers per rank).
  EXPECT_EQ(Ranks(3, 1, 2), std::vector<std::string>({"0 | 0", "0 | 1"}));
}

TEST(RankGpusTest, LogicalGpusStayOnTheirCard) {
  // 2 cards of 2 logical GPUs, 4 ranks: ranks 0 and 1 share card 0.
  EXPECT_EQ(Ranks(2, 2, 4), std::vector<std::string>({"0 | 0", "1 | 0", "0 | 1", "1 | 1"}));
  // One card of 2 logical GPUs, 2 ranks: each opens the card, on its own half.
  EXPECT_EQ(Ranks(1, 2, 2), std::vector<std::string>({"0 | 0", "1 | 0"}));
  // 2 cards of 3 logical GPUs, 2 ranks: 3 towers each, one card each.
  EXPECT_EQ(Ranks(2, 3, 2), std::vector<std::string>({"0,1,2 | 0", "0,1,2 | 1"}));
  // 3 cards of 2 logical GPUs, 2 ranks: rank 1 begins in the middle of card 1,
  // whose first logical GPU (its GPU:0) is rank 0's third tower.
  EXPECT_EQ(Ranks(3, 2, 2), std::vector<std::string>({"0,1,2 | 0 1", "1,2,3 | 1 2"}));
}

TEST(RankGpusTest, MoreRanksThanGpusShareThemRoundRobin) {
  // 3 ranks on 2 GPUs: rank 2 shares GPU 0 with rank 0 (their buckets then
  // cross through the CPU: SharedGpuNote).
  EXPECT_EQ(Ranks(2, 1, 3), std::vector<std::string>({"0 | 0", "0 | 1", "0 | 0"}));
}

TEST(RankGpusTest, CudaOrdinalOfFollowsTheOpenedList) {
  EXPECT_EQ(CudaOrdinalOf("/device:GPU:0", 1, {5}), 5);
  EXPECT_EQ(CudaOrdinalOf("/device:GPU:3", 2, {4, 6}), 6);
  EXPECT_EQ(CudaOrdinalOf("/device:GPU:3", 2, {}), 1) << "every GPU open: CUDA's numbering";
  EXPECT_EQ(CudaOrdinalOf("/device:GPU:4", 2, {4, 6}), -1) << "past the list";
  EXPECT_EQ(CudaOrdinalOf("/device:CPU:0", 1, {}), -1);
}

TEST(OpenedCudaGpusTest, VisibleGpusPickAndOrderThePhysicalGpus) {
  auto all = OpenedCudaGpus({}, 3);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, std::vector<int>({0, 1, 2}));
  auto none = OpenedCudaGpus({}, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto capped = OpenedCudaGpus({.max_gpus = 2}, 3);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(*capped, std::vector<int>({0, 1}));
  auto picked = OpenedCudaGpus({.visible_gpus = {2, 0}}, 3);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(*picked, std::vector<int>({2, 0}));
  auto picked_capped = OpenedCudaGpus({.max_gpus = 1, .visible_gpus = {2, 0}}, 3);
  ASSERT_TRUE(picked_capped.ok());
  EXPECT_EQ(*picked_capped, std::vector<int>({2}));
  EXPECT_TRUE(OpenedCudaGpus({.max_gpus = 0, .visible_gpus = {1}}, 3)->empty()) << "max_gpus 0 opens none";
  auto cpu_only = OpenedCudaGpus({.visible_gpus = {0}}, 0);
  ASSERT_TRUE(cpu_only.ok()) << "a rank's list on a machine without GPUs: " << cpu_only.status().ToString();
  EXPECT_TRUE(cpu_only->empty());
}

TEST(OpenedCudaGpusTest, BadListsAreInvalidArgumentNamingTheEntry) {
  auto missing = OpenedCudaGpus({.visible_gpus = {0, 3}}, 2);
  ASSERT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_NE(std::string(missing.status().message()).find("visible_gpus[1] = 3 is not a visible GPU: 2 visible, 0..1"),
            std::string::npos)
      << missing.status().ToString();
  auto twice = OpenedCudaGpus({.visible_gpus = {1, 1}}, 2);
  ASSERT_EQ(twice.status().code(), Code::kInvalidArgument);
  EXPECT_NE(std::string(twice.status().message()).find("lists GPU 1 twice"), std::string::npos) << twice.status().ToString();
  EXPECT_EQ(OpenedCudaGpus({.visible_gpus = {-1}}, 2).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(OpenedCudaGpus({.max_gpus = -2}, 2).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tw::cli
