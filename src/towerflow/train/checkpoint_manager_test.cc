// CheckpointManager: retention and the index file, falling back past corrupt
// checkpoints, scanning when the index is gone, leftover temporaries, and the
// errors for empty directories.
#include "towerflow/train/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "towerflow/data/crc32c.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/train/optimizer.h"

namespace tw::train {
namespace {

namespace fs = std::filesystem;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// A pid no process has: above Linux's largest pid_max (2^22).
constexpr char kDeadPid[] = "999999999";

class CheckpointManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / StrCat("ckpt_mgr_", info->name(), "_", ::getpid())).string();
    fs::remove_all(dir_);
    Scope root(graph_);
    w_ = GetVariable(root, "w", TensorShape{2}, {.initializer = ZerosInitializer()});
    value_ = Placeholder(root, kFloat32, PartialShape{2});
    set_w_ = Assign(root, w_, value_).node;
    saver_ = std::make_unique<Saver>(root);
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    session_ = std::make_unique<Session>(graph_);
    ASSERT_TRUE(session_->Run(GlobalVariablesInitializer(graph_)).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::vector<std::string> Paths(const std::vector<std::string>& names) const {
    std::vector<std::string> out;
    for (const std::string& n : names) out.push_back(Path(n));
    return out;
  }
  std::vector<std::string> DirectoryEntries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  void SetW(float v) {
    auto r = session_->Run({{value_, Tensor::Vec<float>({v, -v})}}, {}, {set_w_});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  float W() {
    auto r = session_->Run({w_.value});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? (*r)[0].flat<float>()[0] : -1.0f;
  }
  // Saves checkpoint `step` with w = [step, -step].
  void SaveStep(const CheckpointManager& manager, int64_t step) {
    SetW(static_cast<float>(step));
    auto path = manager.Save(*session_, *saver_, step, {{"run", "test"}});
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    EXPECT_EQ(*path, manager.CheckpointPath(step));
  }

  std::string dir_;
  Graph graph_;
  Variable w_;
  Output value_;
  Node* set_w_ = nullptr;
  std::unique_ptr<Saver> saver_;
  std::unique_ptr<Session> session_;
};

TEST_F(CheckpointManagerTest, KeepsTheNewestAndListsThemInTheIndex) {
  CheckpointManager manager(dir_, 3);
  for (int64_t step : {10, 20, 30, 40, 50}) SaveStep(manager, step);
  EXPECT_EQ(manager.Checkpoints(),
            Paths({"ckpt-30.safetensors", "ckpt-40.safetensors", "ckpt-50.safetensors"}));
  EXPECT_EQ(DirectoryEntries(), (std::vector<std::string>{"checkpoint", "ckpt-30.safetensors",
                                                          "ckpt-40.safetensors", "ckpt-50.safetensors"}));
  EXPECT_EQ(ReadText(manager.IndexPath()),
            "# towerflow checkpoint index: kept checkpoints, oldest first\n"
            "ckpt-30.safetensors\nckpt-40.safetensors\nckpt-50.safetensors\n");
  auto metadata = ReadSafetensorsMetadata(Path("ckpt-50.safetensors"));
  ASSERT_TRUE(metadata.ok());
  // The CRC32C of w = [50, -50] as little-endian floats.
  const float w[2] = {50.0f, -50.0f};
  char crc[9];
  std::snprintf(crc, sizeof(crc), "%08x", Crc32cValue(reinterpret_cast<const uint8_t*>(w), sizeof(w)));
  EXPECT_EQ(*metadata, (std::map<std::string, std::string>{
                           {"crc32c:w", crc}, {"global_step", "50"}, {"run", "test"}}));
}

TEST_F(CheckpointManagerTest, SavingAStepAgainMakesItNewestAndZeroKeepsAll) {
  CheckpointManager manager(dir_, 0, "model");
  for (int64_t step : {1, 2, 3}) SaveStep(manager, step);
  SaveStep(manager, 2);
  EXPECT_EQ(manager.Checkpoints(),
            Paths({"model-1.safetensors", "model-3.safetensors", "model-2.safetensors"}));
  EXPECT_EQ(manager.LatestStep(), 2);
  auto negative = manager.Save(*session_, *saver_, -1);
  EXPECT_EQ(negative.status().code(), Code::kInvalidArgument);
}

TEST_F(CheckpointManagerTest, RestoresTheNewest) {
  CheckpointManager manager(Path("nested/dir"), 2);  // Save creates the directories
  for (int64_t step : {7, 8}) SaveStep(manager, step);
  SetW(-1);
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->path, manager.CheckpointPath(8));
  EXPECT_EQ(restored->step, 8);
  EXPECT_TRUE(restored->rejected.empty());
  EXPECT_EQ(W(), 8.0f);
}

TEST_F(CheckpointManagerTest, FallsBackPastCorruptCheckpoints) {
  CheckpointManager manager(dir_);
  for (int64_t step : {1, 2, 3}) SaveStep(manager, step);
  fs::resize_file(Path("ckpt-3.safetensors"), fs::file_size(Path("ckpt-3.safetensors")) - 1);
  WriteText(Path("ckpt-2.safetensors"), "garbage");
  SetW(-1);
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 1);
  EXPECT_EQ(W(), 1.0f);
  ASSERT_EQ(restored->rejected.size(), 2u);
  EXPECT_EQ(restored->rejected[0].code(), Code::kDataLoss);
  EXPECT_NE(restored->rejected[0].message().find(Path("ckpt-3.safetensors")), std::string::npos);
  EXPECT_EQ(restored->rejected[1].code(), Code::kDataLoss);
  EXPECT_NE(restored->rejected[1].message().find(Path("ckpt-2.safetensors")), std::string::npos);

  fs::remove(Path("ckpt-1.safetensors"));
  auto none = manager.RestoreLatest(*session_, *saver_);
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  for (const char* name : {"ckpt-3.safetensors", "ckpt-2.safetensors", "ckpt-1.safetensors"}) {
    EXPECT_NE(none.status().message().find(Path(name)), std::string::npos) << none.status().ToString();
  }
  EXPECT_NE(none.status().message().find("no valid checkpoint in " + dir_ + ": 3 rejected"),
            std::string::npos)
      << none.status().ToString();
  EXPECT_EQ(W(), 1.0f);
}

// The byte offset in `path` of tensor `name`'s first data byte.
uint64_t TensorDataOffset(const std::string& path, const std::string& name) {
  const std::string bytes = ReadText(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof(n));
  const std::string header = bytes.substr(8, n);
  const size_t at = header.find("\"" + name + "\":");
  const size_t offsets = header.find("\"data_offsets\":[", at);
  return 8 + n + std::stoull(header.substr(offsets + 16));
}

TEST_F(CheckpointManagerTest, AFlippedWeightByteIsDataLossAndTheOneBeforeIsRestored) {
  CheckpointManager manager(dir_);
  for (int64_t step : {1, 2}) SaveStep(manager, step);
  const std::string newest = Path("ckpt-2.safetensors");
  std::string bytes = ReadText(newest);
  bytes[TensorDataOffset(newest, "w") + 1] ^= 0x10;  // still a finite float: only the CRC can tell
  WriteText(newest, bytes);
  SetW(-1);
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 1);
  EXPECT_EQ(W(), 1.0f);
  ASSERT_EQ(restored->rejected.size(), 1u);
  EXPECT_EQ(restored->rejected[0].code(), Code::kDataLoss);
  EXPECT_NE(restored->rejected[0].message().find(newest + ": tensor 'w': the CRC32C of its 8 bytes"),
            std::string::npos)
      << restored->rejected[0].ToString();
  EXPECT_NE(restored->rejected[0].message().find("the data is corrupt"), std::string::npos);
  // Loading the file alone says the same.
  EXPECT_EQ(ReadSafetensors(newest).status().code(), Code::kDataLoss);
}

TEST_F(CheckpointManagerTest, AGlobalStepThatDisagreesIsDataLoss) {
  CheckpointManager manager(dir_);
  SaveStep(manager, 39);
  // ckpt-6600 says 6600 in its name and metadata, but its tensor says -5.
  ASSERT_TRUE(WriteSafetensors(Path("ckpt-6600.safetensors"),
                               {{"w", Tensor::Vec<float>({1, 2})}, {"global_step", Tensor::Scalar<int64_t>(-5)}},
                               {{"global_step", "6600"}})
                  .ok());
  // ckpt-7000 says 7000 in its name, 12 in its metadata.
  ASSERT_TRUE(WriteSafetensors(Path("ckpt-7000.safetensors"), {{"w", Tensor::Vec<float>({1, 2})}},
                               {{"global_step", "12"}})
                  .ok());
  fs::remove(manager.IndexPath());  // scanning finds both
  auto latest = manager.ReadLatest();
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(latest->step, 39);
  ASSERT_EQ(latest->rejected.size(), 2u);
  EXPECT_EQ(latest->rejected[0].code(), Code::kDataLoss);
  EXPECT_NE(latest->rejected[0].message().find(
                "ckpt-7000.safetensors: the global step disagrees: its file name says 7000, metadata global_step says 12"),
            std::string::npos)
      << latest->rejected[0].ToString();
  EXPECT_NE(latest->rejected[1].message().find("its file name says 6600, metadata global_step says 6600, "
                                               "tensor global_step says -5"),
            std::string::npos)
      << latest->rejected[1].ToString();
}

TEST(CheckpointManagerSaveTest, AGlobalStepVariableThatDisagreesIsNotSaved) {
  const std::string dir = (fs::path(::testing::TempDir()) / StrCat("ckpt_mgr_step_", ::getpid())).string();
  fs::remove_all(dir);
  Graph graph;
  Scope root(graph);
  Variable step = GetOrCreateGlobalStep(root);
  Saver saver(root);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  ASSERT_TRUE(session.Run(GlobalVariablesInitializer(graph)).ok());
  CheckpointManager manager(dir);
  auto saved = manager.Save(session, saver, 0);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  auto wrong = manager.Save(session, saver, 5);
  EXPECT_EQ(wrong.status().code(), Code::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("as step 5 but variable 'global_step' holds 0"), std::string::npos)
      << wrong.status().ToString();
  EXPECT_FALSE(fs::exists(manager.CheckpointPath(5)));
  EXPECT_TRUE(step.valid());
  fs::remove_all(dir);
}

TEST_F(CheckpointManagerTest, NonFiniteCheckpointsNeverRotateOutTheLastFiniteOne) {
  CheckpointManager manager(dir_, 2);
  SaveStep(manager, 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t step : {2, 3, 4}) {
    SetW(nan);
    auto path = manager.Save(*session_, *saver_, step);
    ASSERT_TRUE(path.ok()) << path.status().ToString();
  }
  // Two kept, as asked, and the finite one they would have rotated out.
  EXPECT_EQ(manager.Checkpoints(), Paths({"ckpt-1.safetensors", "ckpt-3.safetensors", "ckpt-4.safetensors"}));
  auto metadata = ReadSafetensorsMetadata(Path("ckpt-4.safetensors"));
  ASSERT_TRUE(metadata.ok());
  EXPECT_EQ(metadata->at(kNonFiniteMetadataKey), "w");
  EXPECT_EQ(ReadSafetensorsMetadata(Path("ckpt-1.safetensors"))->count(kNonFiniteMetadataKey), 0u);
  // Restoring skips the diverged ones.
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 1);
  EXPECT_EQ(W(), 1.0f);
  ASSERT_EQ(restored->rejected.size(), 2u);
  EXPECT_EQ(restored->rejected[0].code(), Code::kFailedPrecondition);
  EXPECT_NE(restored->rejected[0].message().find("tensor 'w' holds NaN or Inf (first at flat index 0)"),
            std::string::npos)
      << restored->rejected[0].ToString();
  // A finite save lets the old one go again.
  SaveStep(manager, 5);
  SaveStep(manager, 6);
  EXPECT_EQ(manager.Checkpoints(), Paths({"ckpt-5.safetensors", "ckpt-6.safetensors"}));
}

TEST_F(CheckpointManagerTest, ACheckpointThatDoesNotFitStopsTheSearch) {
  CheckpointManager manager(dir_);
  SaveStep(manager, 1);
  ASSERT_TRUE(WriteSafetensors(Path("ckpt-2.safetensors"), {{"other", Tensor::Scalar(1.0f)}}).ok());
  fs::remove(manager.IndexPath());  // scanning finds ckpt-2 as the newest
  auto restored = manager.RestoreLatest(*session_, *saver_);
  EXPECT_EQ(restored.status().code(), Code::kNotFound);
  EXPECT_NE(
      restored.status().message().find("variable 'w' is not in checkpoint " + Path("ckpt-2.safetensors")),
      std::string::npos)
      << restored.status().ToString();
}

TEST_F(CheckpointManagerTest, ScansTheDirectoryWhenTheIndexIsMissingOrCorrupt) {
  CheckpointManager manager(dir_, 10);
  for (int64_t step : {2, 10, 9}) SaveStep(manager, step);
  ASSERT_EQ(manager.Checkpoints(),
            Paths({"ckpt-2.safetensors", "ckpt-10.safetensors", "ckpt-9.safetensors"}));
  for (const char* other :
       {"other-5.safetensors", "ckpt-05.safetensors", "ckpt-x.safetensors", "ckpt-4.safetensors.bak"}) {
    WriteText(Path(other), "not a checkpoint");
  }
  const std::vector<std::string> by_step =
      Paths({"ckpt-2.safetensors", "ckpt-9.safetensors", "ckpt-10.safetensors"});
  EXPECT_EQ(manager.LatestStep(), 9);
  fs::remove(manager.IndexPath());
  EXPECT_EQ(manager.Checkpoints(), by_step);
  EXPECT_EQ(manager.LatestStep(), 10);
  for (const char* index :
       {"garbage\n", "# towerflow checkpoint index: kept checkpoints, oldest first\nckpt-2.safetensors",
        "# towerflow checkpoint index: kept checkpoints, oldest first\n../ckpt-2.safetensors\n",
        "# towerflow checkpoint index: kept checkpoints, oldest "
        "first\nckpt-2.safetensors\nckpt-2.safetensors\n"}) {
    WriteText(manager.IndexPath(), index);
    EXPECT_EQ(manager.Checkpoints(), by_step) << index;
  }
  SetW(-1);
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 10);
  EXPECT_EQ(W(), 10.0f);
}

TEST_F(CheckpointManagerTest, IgnoresTemporariesAndTheNextSaveRemovesStaleOnes) {
  CheckpointManager manager(dir_);
  SaveStep(manager, 1);
  const std::string stale_ckpt = StrCat("ckpt-2.safetensors.tmp-", kDeadPid);
  const std::string stale_index = StrCat("checkpoint.tmp-", kDeadPid);
  const std::string live = "ckpt-3.safetensors.tmp-1";  // pid 1 always exists
  const std::string foreign = StrCat("notes.txt.tmp-", kDeadPid);
  for (const std::string& name : {stale_ckpt, stale_index, live, foreign})
    WriteText(Path(name), "half written");
  EXPECT_EQ(manager.Checkpoints(), Paths({"ckpt-1.safetensors"}));
  fs::remove(manager.IndexPath());
  EXPECT_EQ(manager.Checkpoints(), Paths({"ckpt-1.safetensors"}));
  auto restored = manager.RestoreLatest(*session_, *saver_);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_TRUE(restored->rejected.empty());

  SaveStep(manager, 4);
  EXPECT_EQ(DirectoryEntries(), (std::vector<std::string>{"checkpoint", "ckpt-1.safetensors", live,
                                                          "ckpt-4.safetensors", foreign}));
}

TEST_F(CheckpointManagerTest, NoCheckpointIsNotFoundNamingTheDirectory) {
  CheckpointManager missing(Path("absent"));
  auto restored = missing.RestoreLatest(*session_, *saver_);
  EXPECT_EQ(restored.status().code(), Code::kNotFound);
  EXPECT_NE(restored.status().message().find("no checkpoint in " + Path("absent")), std::string::npos)
      << restored.status().ToString();
  EXPECT_TRUE(missing.Checkpoints().empty());
  EXPECT_EQ(missing.LatestStep(), std::nullopt);

  fs::create_directories(dir_);
  WriteText(Path("ckpt-1.safetensors.tmp-1"), "x");
  CheckpointManager empty(dir_);
  EXPECT_EQ(empty.RestoreLatest(*session_, *saver_).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace tw::train
