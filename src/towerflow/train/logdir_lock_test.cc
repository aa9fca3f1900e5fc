// LogdirLock: a second lock on a directory is refused naming the holder; the
// lock goes with its holder; a path that cannot be a directory is an error.
#include "towerflow/train/logdir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tw::train {
namespace {

namespace fs = std::filesystem;

class LogdirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / ("logdir_lock_" + std::string(info->name()) + "_" +
                                               std::to_string(::getpid())))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(LogdirLockTest, ASecondLockIsRefusedNamingTheHolderUntilTheFirstGoes) {
  auto first = LogdirLock::Acquire(dir_ + "/run");  // creates the directory
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(fs::is_directory(dir_ + "/run"));
  auto second = LogdirLock::Acquire(dir_ + "/run");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("--logdir " + dir_ + "/run is in use by another training (pid " +
                                           std::to_string(::getpid())),
            std::string::npos)
      << second.status().ToString();
  first->reset();
  auto third = LogdirLock::Acquire(dir_ + "/run");
  EXPECT_TRUE(third.ok()) << third.status().ToString();
}

TEST_F(LogdirLockTest, AHolderKilledLeavesNoStaleLock) {
  fs::create_directories(dir_);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = LogdirLock::Acquire(dir_);
    const char byte = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    ::pause();  // until killed
    ::_exit(0);
  }
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');
  EXPECT_EQ(LogdirLock::Acquire(dir_).status().code(), Code::kFailedPrecondition);
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  auto after = LogdirLock::Acquire(dir_);
  EXPECT_TRUE(after.ok()) << after.status().ToString();
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(LogdirLockTest, ALogdirThatIsAFileIsAnError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/file") << "x";
  auto lock = LogdirLock::Acquire(dir_ + "/file");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find(dir_ + "/file"), std::string::npos) << lock.status().ToString();
}

}  // namespace
}  // namespace tw::train
