// The parts of dist/ that need no second process: launch detection, input
// sharding, rank seeds, the consistency checks' comparisons.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <set>

#include "towerflow/dist/consistency.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/sharding.h"
#include "towerflow/graph/ops/state_ops.h"

namespace tw::dist {
namespace {

// Sets launcher variables for one test and removes them after.
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

TEST(LaunchTest, ReadsOpenMpiPmixAndPmiVariables) {
  EXPECT_FALSE(DetectLaunch().multi_process);
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    Launch l = DetectLaunch();
    EXPECT_TRUE(l.multi_process);
    EXPECT_EQ(l.rank, 2);
    EXPECT_EQ(l.size, 4);
    EXPECT_EQ(l.local_rank, 0);
    EXPECT_EQ(l.local_size, 2);
    EXPECT_EQ(l.launcher, "OpenMPI");
  }
  {
    ScopedEnv env({{"PMI_SIZE", "3"}, {"PMI_RANK", "1"}});
    Launch l = DetectLaunch();
    EXPECT_TRUE(l.multi_process);
    EXPECT_EQ(l.rank, 1);
    EXPECT_EQ(l.launcher, "PMI");
    EXPECT_EQ(l.local_rank, -1);
  }
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}});
    EXPECT_FALSE(DetectLaunch().multi_process);  // mpirun -np 1: one process
  }
  for (const char* bad : {"x", "2x", "-1", ""}) {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", bad}, {"OMPI_COMM_WORLD_RANK", "0"}});
    EXPECT_FALSE(DetectLaunch().multi_process) << bad;
  }
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}});  // rank past the size
    EXPECT_FALSE(DetectLaunch().multi_process);
  }
}

TEST(ShardingTest, FilesByRankWhenThereAreEnoughElseRecordsByIndex) {
  const std::vector<std::string> five = {"a", "b", "c", "d", "e"};
  std::multiset<std::string> seen;
  for (int r = 0; r < 2; ++r) {
    InputShard s = ShardInput(five, r, 2);
    EXPECT_EQ(s.record_shard_count, 1);
    seen.insert(s.files.begin(), s.files.end());
  }
  EXPECT_EQ(seen, std::multiset<std::string>(five.begin(), five.end()));  // each file once
  EXPECT_EQ(ShardInput(five, 1, 2).files, (std::vector<std::string>{"b", "d"}));
  InputShard few = ShardInput({"a", "b"}, 2, 3);
  EXPECT_EQ(few.files, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(few.record_shard_count, 3);
  EXPECT_EQ(few.record_shard_index, 2);
  EXPECT_EQ(ShardInput(five, 0, 1).files, five);
}

TEST(ShardingTest, RankSeedsDifferAndRankZeroKeepsTheSeed) {
  EXPECT_EQ(RankSeed(7, 0), 7);
  std::set<int64_t> seeds;
  for (int r = 0; r < 64; ++r) {
    const int64_t s = RankSeed(7, r);
    EXPECT_GE(s, 0);
    EXPECT_EQ(s, RankSeed(7, r));
    seeds.insert(s);
  }
  EXPECT_EQ(seeds.size(), 64u);
  EXPECT_NE(RankSeed(7, 1), RankSeed(8, 1));
}

TEST(ConsistencyTest, GraphFingerprintNamesVariablesAndOps) {
  Graph a, b;
  GetVariable(Scope(a), "w", TensorShape{3, 4});
  GetVariable(Scope(b), "w", TensorShape{3, 5});
  std::vector<std::string> fa = GraphFingerprint(a), fb = GraphFingerprint(b);
  EXPECT_NE(std::find(fa.begin(), fa.end(), "variable w float [3,4]"), fa.end()) << ::testing::PrintToString(fa);
  EXPECT_NE(fa, fb);
  Graph c;
  GetVariable(Scope(c), "w", TensorShape{3, 4});
  EXPECT_EQ(GraphFingerprint(c), fa);  // deterministic
}

TEST(ConsistencyTest, SameBatchWarningNamesTheRanks) {
  EXPECT_EQ(SameBatchWarning({"a", "b", "c"}), "");
  const std::string w = SameBatchWarning({"a", "b", "a", "a"});
  EXPECT_NE(w.find("ranks 0, 2 and 3 received the same first batch"), std::string::npos) << w;
  EXPECT_NE(SameBatchWarning({"x", "x"}).find("ranks 0 and 1"), std::string::npos);
}

TEST(ConsistencyTest, DriftedReplicasNameTheRankAndVariable) {
  auto fp = [](uint64_t a, uint64_t b) {
    return std::string(reinterpret_cast<const char*>(&a), 8) + std::string(reinterpret_cast<const char*>(&b), 8);
  };
  EXPECT_TRUE(CheckReplicasIdentical({fp(1, 2), fp(1, 2), fp(1, 2)}, {"w", "b"}, 5).ok());
  Status s = CheckReplicasIdentical({fp(1, 2), fp(1, 2), fp(1, 3)}, {"w", "b"}, 5);
  EXPECT_TRUE(errors::IsInternal(s));
  EXPECT_NE(s.message().find("at step 5 rank 2's variable 'b'"), std::string::npos) << s.message();
  EXPECT_NE(Fingerprint64("ab", 2), Fingerprint64("ba", 2));
}

}  // namespace
}  // namespace tw::dist
