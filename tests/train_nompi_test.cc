// A towerflow built without MPI, launched as one of several processes (the
// variables mpirun sets): a clear usage error, not a lone single-process run
// that the user takes for a job. Built only without MPI (the sanitizer trees).
#include <gtest/gtest.h>

#include "cli_test_util.h"

namespace tw {
namespace {

class TrainNoMpiTest : public testing::CliTest {};

TEST_F(TrainNoMpiTest, LaunchedByMpirunItSaysMpiSupportIsMissing) {
  auto data = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8", "--examples",
                   "500", "--shards", "2"});
  ASSERT_EQ(data.exit_code, 0) << data.err;
  auto r = Run({"train", "--data", (dir_ / "data" / "train-*").string(), "--model", "seed", "--devices", "cpu:0",
                "--steps", "5", "--logdir", (dir_ / "run").string()},
               "env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("launched as rank 1 of 2 by OpenMPI, but this towerflow was built without MPI support"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "run" / "checkpoint"));
}

}  // namespace
}  // namespace tw
