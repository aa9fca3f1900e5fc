// The waits of a multi-process job that no single collective's timeout
// covers: a rank 0 that hangs (the others name it), a rank that hangs before
// it leaves the job (Finalize's timed start), and a rank that never starts
// (the start's watchdog). Each WorldFaultsMpiTest runs a DISABLED_ rank
// program of this binary under mpirun (mpirun_test_util.h) and waits with a
// hard timeout: the job must end by itself, non-zero, well before it.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "towerflow/dist/launch.h"
#include "towerflow/dist/mpirun_test_util.h"
#include "towerflow/dist/world.h"

namespace tw::dist {
namespace {

// ---- rank programs (run by mpirun, one per process) ----

// Rank 0 never joins a call: the others, which give up after it, name it.
TEST(WorldFaultRanks, DISABLED_RankZeroHangs) {
  auto started = World::Start({.collective_timeout_seconds = 1});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  w.set_step(23);
  if (w.rank() == 0) std::this_thread::sleep_for(std::chrono::seconds(60));  // the job ends before
  double x = 1;
  Status s = w.AllReduce({.channel = Channel::kGradients, .what = "bucket_0"}, kFloat64, &x, 1, ReduceOp::kSum);
  std::printf("rank %d: %s\n", w.rank(), s.ToString().c_str());
  w.Abort(3);
}

// Rank 1 hangs after its last collective, before it leaves: the others,
// already leaving, end the job.
TEST(WorldFaultRanks, DISABLED_HangBeforeLeaving) {
  auto started = World::Start({.collective_timeout_seconds = 1});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  World& w = **started;
  double x = 1;
  ASSERT_TRUE(w.AllReduce({.what = "the last collective"}, kFloat64, &x, 1, ReduceOp::kSum).ok());
  if (w.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
  w.Finalize();
}

// Rank 1 hangs before it starts: the others' start gives up.
TEST(WorldFaultRanks, DISABLED_HangBeforeStart) {
  if (DetectLaunch().rank == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
  auto started = World::Start({.collective_timeout_seconds = 60, .start_timeout_seconds = 2});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  (*started)->Finalize();
}

// ---- the tests (run by ctest) ----

void ExpectEndedByItself(const testing::ShellResult& r) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job did not end by itself: " << r.output;
  EXPECT_LT(r.seconds, 40) << r.output;
}

TEST(WorldFaultsMpiTest, ARankZeroThatHangsIsNamedByTheOthers) {
  auto r = testing::RunRankProgram(2, "WorldFaultRanks.DISABLED_RankZeroHangs", 60);
  ExpectEndedByItself(r);
  EXPECT_NE(r.output.find("rank 1: DeadlineExceeded: rank 1 ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("at step 23"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rank 0 is most likely the rank that hangs"), std::string::npos) << r.output;
}

TEST(WorldFaultsMpiTest, ARankThatHangsBeforeLeavingEndsTheJob) {
  auto r = testing::RunRankProgram(3, "WorldFaultRanks.DISABLED_HangBeforeLeaving", 60);
  ExpectEndedByItself(r);
  EXPECT_NE(r.output.find("the ranks' leaving of the job"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DeadlineExceeded"), std::string::npos) << r.output;
}

TEST(WorldFaultsMpiTest, ARankThatNeverStartsEndsTheJob) {
  auto r = testing::RunRankProgram(2, "WorldFaultRanks.DISABLED_HangBeforeStart", 60);
  ExpectEndedByItself(r);
  EXPECT_NE(r.output.find("rank 0 of 2: the job's 2 ranks did not all start within 2 s"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace tw::dist
