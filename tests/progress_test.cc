// Progress (cli/progress.h): when a line is drawn, and Due() agreeing with it,
// since the training loop computes the state (every queue's size) only when
// Due() says a line will be drawn.
#include "towerflow/cli/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace tw::cli {
namespace {

// What was written to `f` so far.
std::string Contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) s.push_back(static_cast<char>(c));
  return s;
}

ProgressState Step(int64_t step) {
  ProgressState s;
  s.step = step;
  s.total_steps = 10;
  s.loss = 0.5;
  return s;
}

TEST(ProgressTest, PlainOutputPrintsOncePerPeriod) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress progress(f, /*terminal=*/false, 1.0);
  EXPECT_FALSE(progress.Due());  // the first line comes a period after the start
  progress.Update(Step(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_TRUE(progress.Due());
  progress.Update(Step(2));
  EXPECT_FALSE(progress.Due());
  progress.Update(Step(3));  // within the period: not printed
  progress.Finish(Step(4));  // always printed
  const std::string out = Contents(f);
  EXPECT_EQ(out, "step 2/10 loss 0.5000 0 ex/s\nstep 4/10 loss 0.5000 0 ex/s\n");
  std::fclose(f);
}

TEST(ProgressTest, PlainOutputWithAZeroPeriodPrintsEveryStep) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress progress(f, /*terminal=*/false, 0);
  for (int64_t step = 1; step <= 3; ++step) {
    EXPECT_TRUE(progress.Due());
    progress.Update(Step(step));
  }
  const std::string out = Contents(f);
  for (const char* line : {"step 1/10", "step 2/10", "step 3/10"}) {
    EXPECT_NE(out.find(line), std::string::npos) << out;
  }
  std::fclose(f);
}

TEST(ProgressTest, TerminalRedrawsAtMostTenTimesASecond) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  Progress progress(f, /*terminal=*/true, 3600);
  EXPECT_TRUE(progress.Due());  // the bar is not on screen yet
  const auto drawn = std::chrono::steady_clock::now();
  progress.Update(Step(1));
  const bool due = progress.Due();
  progress.Update(Step(2));
  // Within a tenth of a second of the last draw nothing is redrawn (checked
  // only when this thread was not held up that long, as on a loaded machine).
  const bool quick = std::chrono::steady_clock::now() - drawn < std::chrono::milliseconds(50);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_TRUE(progress.Due());
  progress.Update(Step(4));
  const std::string out = Contents(f);
  EXPECT_NE(out.find("1/10"), std::string::npos) << out;
  if (quick) {
    EXPECT_FALSE(due);
    EXPECT_EQ(out.find("2/10"), std::string::npos) << out;
  }
  EXPECT_NE(out.find("4/10"), std::string::npos) << out;
  std::fclose(f);
}

}  // namespace
}  // namespace tw::cli
