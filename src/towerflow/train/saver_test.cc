// Saver: a model trained with Momentum is saved and restored into a fresh
// session bit for bit (slots and global_step included) and trains on
// identically; a restore that cannot apply to every variable changes none.
#include "towerflow/train/saver.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"
#include "towerflow/graph/ops/random_ops.h"
#include "towerflow/train/momentum.h"

namespace tw::train {
namespace {

namespace fs = std::filesystem;

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.TotalBytes() == b.TotalBytes() &&
         (a.TotalBytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0);
}

// loss = mean((x w + b - y)^2) minimized by Momentum (slots "w/Momentum",
// "b/Momentum") with a global step, plus a float64 non-trainable "scale" that
// only `bump` changes.
struct Model {
  Graph graph;
  Variable w, b, scale, step;
  Node* train = nullptr;
  Node* bump = nullptr;
  std::unique_ptr<Saver> saver;
};

std::unique_ptr<Model> BuildModel() {
  auto m = std::make_unique<Model>();
  Scope root(m->graph);
  m->w = GetVariable(root, "w", TensorShape{2, 1}, {.initializer = ConstantInitializer(0.5)});
  m->b = GetVariable(root, "b", TensorShape{1}, {.initializer = ConstantInitializer(0.1)});
  m->scale = GetVariable(root, "scale", TensorShape{},
                         {.dtype = kFloat64, .initializer = ConstantInitializer(2.5), .trainable = false});
  Output x = Const(root, {1.0f, 2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 0.0f, 1.0f}, TensorShape{4, 2});
  Output y = Const(root, {1.0f, -1.0f, 2.0f, 0.25f}, TensorShape{4, 1});
  Output pred = Add(root, MatMul(root, x, m->w.value), m->b.value);
  Output loss = Mean(root, Square(root, Sub(root, pred, y)), {0, 1});
  m->step = GetOrCreateGlobalStep(root);
  Momentum opt({.learning_rate = 0.05, .momentum = 0.9});
  m->train = opt.Minimize(root, loss, &m->step);
  m->bump = AssignAdd(root, m->scale, ScalarLike(root, 0.125, kFloat64)).node;
  m->saver = std::make_unique<Saver>(root);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  return m;
}

std::vector<Tensor> Values(Session& session, const std::vector<Variable>& vars) {
  std::vector<Output> fetches;
  for (const Variable& v : vars) fetches.push_back(v.value);
  auto r = session.Run(fetches);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<Tensor>{};
}

class SaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) / StrCat("saver_", info->name(), "_", ::getpid())).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    model_ = BuildModel();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A session whose variables are initialized and trained `steps` steps.
  std::unique_ptr<Session> Trained(int steps) {
    auto session = std::make_unique<Session>(model_->graph, SessionOptions{.inter_op_threads = 1});
    EXPECT_TRUE(session->Run(GlobalVariablesInitializer(model_->graph)).ok());
    for (int i = 0; i < steps; ++i) EXPECT_TRUE(session->Run(model_->train).ok());
    if (steps > 0) {
      EXPECT_TRUE(session->Run(model_->bump).ok());
    }
    return session;
  }

  const std::vector<Variable>& vars() const { return model_->saver->variables(); }

  std::string dir_;
  std::unique_ptr<Model> model_;
};

TEST_F(SaverTest, BuildsTheRestoreGraphUnderSave) {
  std::vector<std::string> names;
  for (const Variable& v : vars()) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"w", "b", "scale", "global_step", "w/Momentum", "b/Momentum"}));
  ASSERT_NE(model_->saver->restore_op(), nullptr);
  EXPECT_EQ(model_->saver->restore_op()->name(), "save/restore_all");
  EXPECT_EQ(model_->saver->restore_op()->op(), "NoOp");
}

TEST_F(SaverTest, RestoresEveryVariableBitForBitAndTrainsOnIdentically) {
  auto trained = Trained(3);
  const std::vector<Tensor> saved = Values(*trained, vars());
  const std::string path = Path("model.safetensors");
  ASSERT_TRUE(model_->saver->Save(*trained, path, {{"note", "three steps"}}).ok());

  // The file holds every variable under its full name, and the metadata.
  auto file = ReadSafetensors(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->tensors.size(), vars().size());
  for (size_t i = 0; i < vars().size(); ++i) {
    EXPECT_EQ(file->tensors[i].first, vars()[i].name);
    EXPECT_TRUE(SameBits(file->tensors[i].second, saved[i])) << vars()[i].name;
  }
  // The metadata given, and a CRC32C of every tensor.
  EXPECT_EQ(file->metadata.at("note"), "three steps");
  EXPECT_EQ(file->metadata.size(), 1 + vars().size());
  for (const Variable& v : vars()) EXPECT_EQ(file->metadata.count("crc32c:" + v.name), 1u) << v.name;
  EXPECT_EQ(file->Find("global_step")->scalar<int64_t>(), 3);

  // A fresh session starts from the initial values: every variable differs.
  auto fresh = Trained(0);
  const std::vector<Tensor> initial = Values(*fresh, vars());
  for (size_t i = 0; i < vars().size(); ++i) EXPECT_FALSE(SameBits(initial[i], saved[i])) << vars()[i].name;

  ASSERT_TRUE(model_->saver->Restore(*fresh, path).ok());
  const std::vector<Tensor> restored = Values(*fresh, vars());
  for (size_t i = 0; i < vars().size(); ++i) EXPECT_TRUE(SameBits(restored[i], saved[i])) << vars()[i].name;

  // Momentum's accumulators came back too: the next steps agree bit for bit.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(trained->Run(model_->train).ok());
    ASSERT_TRUE(fresh->Run(model_->train).ok());
  }
  const std::vector<Tensor> a = Values(*trained, vars());
  const std::vector<Tensor> b = Values(*fresh, vars());
  for (size_t i = 0; i < vars().size(); ++i) EXPECT_TRUE(SameBits(a[i], b[i])) << vars()[i].name;
  EXPECT_EQ(b[3].scalar<int64_t>(), 5);
}

// Restores into `session` from `path` must fail with `code` and a message holding
// every one of `expected`, leaving every variable as it was.
void ExpectRestoreChangesNothing(Session& session, const Saver& saver, const std::string& path, Code code,
                                 const std::vector<std::string>& expected) {
  const std::vector<Tensor> before = Values(session, saver.variables());
  Status s = saver.Restore(session, path);
  EXPECT_EQ(s.code(), code) << s.ToString();
  for (const std::string& e : expected) EXPECT_NE(s.message().find(e), std::string::npos) << s.ToString();
  const std::vector<Tensor> after = Values(session, saver.variables());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(SameBits(before[i], after[i])) << saver.variables()[i].name;
}

TEST_F(SaverTest, MissingVariableRestoresNothing) {
  auto trained = Trained(2);
  // A checkpoint of the model's variables but the last slot, written after one
  // more step, so that a partial restore would be visible.
  std::vector<Variable> partial(vars().begin(), vars().end() - 1);
  Scope root(model_->graph);
  Saver partial_saver(root, partial);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_TRUE(trained->Run(model_->train).ok());
  const std::string path = Path("partial.safetensors");
  ASSERT_TRUE(partial_saver.Save(*trained, path).ok());

  auto fresh = Trained(0);
  ExpectRestoreChangesNothing(*fresh, *model_->saver, path, Code::kNotFound,
                              {"variable 'b/Momentum' is not in checkpoint " + path});
  // The partial saver itself restores what it saved.
  ASSERT_TRUE(partial_saver.Restore(*fresh, path).ok());
  EXPECT_EQ(Values(*fresh, {model_->step})[0].scalar<int64_t>(), 3);
}

// Saver({"name": var}): variables saved under other names, and restored from
// them into variables named otherwise (fine-tuning from a pretrained file).
TEST_F(SaverTest, NamedVariablesAreSavedAndRestoredUnderTheirNames) {
  auto trained = Trained(2);
  Scope root(model_->graph);
  Saver named(root, {{"pretrained/kernel", model_->w}, {"pretrained/bias", model_->b}});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  EXPECT_EQ(named.keys(), (std::vector<std::string>{"pretrained/kernel", "pretrained/bias"}));
  const std::string path = Path("named.safetensors");
  ASSERT_TRUE(named.Save(*trained, path).ok());
  auto file = ReadSafetensors(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  std::vector<std::string> in_file;
  for (const auto& [name, t] : file->tensors) in_file.push_back(name);
  std::sort(in_file.begin(), in_file.end());
  EXPECT_EQ(in_file, (std::vector<std::string>{"pretrained/bias", "pretrained/kernel"}));

  auto fresh = Trained(0);
  ASSERT_TRUE(named.Restore(*fresh, path).ok());
  EXPECT_TRUE(SameBits(Values(*fresh, {model_->w})[0], Values(*trained, {model_->w})[0]));
  EXPECT_TRUE(SameBits(Values(*fresh, {model_->b})[0], Values(*trained, {model_->b})[0]));
  // The model's own saver does not find its names there, and says which.
  Status missing = model_->saver->Restore(*fresh, path);
  EXPECT_EQ(missing.code(), Code::kNotFound);
  // A name given twice is refused.
  Scope twice(model_->graph);
  Saver dup(twice, {{"x", model_->w}, {"x", model_->b}});
  EXPECT_NE(twice.status().message().find("two variables are saved as 'x'"), std::string::npos)
      << twice.status().ToString();
  // The named saver over a file without one of its names says both names.
  Scope one(model_->graph);
  Saver other(one, {{"elsewhere", model_->w}});
  Status s = other.Restore(*fresh, path);
  EXPECT_NE(s.message().find("variable 'w' (saved as 'elsewhere') is not in checkpoint"), std::string::npos)
      << s.ToString();
}

TEST_F(SaverTest, ShapeOrDtypeMismatchRestoresNothing) {
  auto trained = Trained(1);
  const std::vector<Tensor> values = Values(*trained, vars());
  auto write_with = [&](const std::string& name, size_t replaced, const Tensor& t) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (size_t i = 0; i < vars().size(); ++i)
      tensors.emplace_back(vars()[i].name, i == replaced ? t : values[i]);
    EXPECT_TRUE(WriteSafetensors(Path(name), tensors).ok());
    return Path(name);
  };
  auto fresh = Trained(0);
  const std::string shape_path =
      write_with("shape.safetensors", 4, Tensor::Vec<float>({1, 2}));  // w/Momentum
  ExpectRestoreChangesNothing(
      *fresh, *model_->saver, shape_path, Code::kInvalidArgument,
      {"variable 'w/Momentum' has shape [2,1] but checkpoint " + shape_path + " holds [2]"});
  const std::string dtype_path =
      write_with("dtype.safetensors", 3, Tensor::Scalar<int32_t>(3));  // global_step
  ExpectRestoreChangesNothing(
      *fresh, *model_->saver, dtype_path, Code::kInvalidArgument,
      {"variable 'global_step' is int64 but checkpoint " + dtype_path + " holds int32"});
}

TEST_F(SaverTest, CorruptOrMissingFileRestoresNothing) {
  auto trained = Trained(1);
  const std::string path = Path("model.safetensors");
  ASSERT_TRUE(model_->saver->Save(*trained, path).ok());
  fs::resize_file(path, fs::file_size(path) - 3);
  auto fresh = Trained(0);
  ExpectRestoreChangesNothing(*fresh, *model_->saver, path, Code::kDataLoss, {path, "end past the"});
  ExpectRestoreChangesNothing(*fresh, *model_->saver, Path("absent"), Code::kNotFound, {Path("absent")});
}

TEST_F(SaverTest, SavingUninitializedVariablesFails) {
  Session session(model_->graph);
  const std::string path = Path("never.safetensors");
  Status s = model_->saver->Save(session, path);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(SaverTest, NoVariablesIsAnErrorInTheScope) {
  Graph graph;
  Scope root(graph);
  Saver saver(root);
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("no variables to save"), std::string::npos)
      << root.status().ToString();
  Session session(graph);
  EXPECT_EQ(saver.Save(session, Path("x.safetensors")).code(), Code::kInvalidArgument);
  EXPECT_EQ(saver.Restore(session, Path("x.safetensors")).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace tw::train
