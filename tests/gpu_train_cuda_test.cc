// Training on a GPU is training: the same model from the same initial values
// on the same batches takes the same steps on /device:GPU:0 as on
// /device:CPU:0, and two towers on two logical GPUs take the steps one tower
// takes on the two halves' concatenation (towers are data parallelism).
//
// Through the library: the MLP 784-256-256-10 of `towerflow train --model mlp`
// (cli/models.cc, compiled in), towers built by Replicate with the variables on
// /device:CPU:0 as the trainer does, 50 steps of momentum SGD at batch 100 on
// fixed synthetic batches fed through placeholders (the queue pipeline orders
// examples nondeterministically), every run starting from the reference run's
// initial values (restored with a Saver). Float32 throughout and no TF32, so
// the runs differ only by summation order: the losses agree within float
// tolerance, the accuracy within noise.
//
// Through the binary: `towerflow train --devices gpu` (with --logical-gpus 2,
// and mirrored variables) against --devices cpu:0 on seed-schema data: the
// JSON line names the GPUs, the test accuracy agrees within noise, eval reads
// the checkpoints, and a GPU that does not exist is a one-line usage error.
// Adam with the variables on the GPU (its moments and beta powers GPU
// variables, read by the update in device memory) takes the steps of Adam on
// the CPU. Every test skips without a GPU (label cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "towerflow/cli/models.h"
#include "towerflow/kernels/gpu_parity_test_util.h"
#include "towerflow/train/adam.h"
#include "towerflow/train/momentum.h"
#include "towerflow/train/replicate.h"
#include "towerflow/train/saver.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int64_t kBatch = 100;  // per step, over all towers
constexpr int64_t kSteps = 50;
constexpr int64_t kPixels = 784;
constexpr int64_t kClasses = 10;

// kSteps batches of Fashion-MNIST-shaped rows: each label's image is a fixed
// random template of its class (30%) mixed with uniform noise (70%), pixels in
// [0, 1]; within the 50 steps the loss falls from 2.4 to about 0.5.
struct Data {
  std::vector<float> x;    // [kSteps * kBatch, kPixels]
  std::vector<int32_t> y;  // [kSteps * kBatch]
};

Data MakeData() {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> uniform(0, 1);
  std::uniform_int_distribution<int32_t> label(0, kClasses - 1);
  std::vector<float> templates(kClasses * kPixels);
  for (float& t : templates) t = uniform(rng);
  Data d;
  const int64_t rows = kSteps * kBatch;
  d.x.resize(static_cast<size_t>(rows * kPixels));
  d.y.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t c = label(rng);
    d.y[static_cast<size_t>(r)] = c;
    for (int64_t p = 0; p < kPixels; ++p) {
      d.x[static_cast<size_t>(r * kPixels + p)] =
          0.3f * templates[static_cast<size_t>(c * kPixels + p)] + 0.7f * uniform(rng);
    }
  }
  return d;
}

struct Curve {
  std::vector<double> losses;  // per step, before its update
  double accuracy = 0;         // over every step's batch, before its update
};

// The optimizer and where the variables live.
struct Setup {
  bool adam = false;  // else momentum
  std::string variable_device = "/device:CPU:0";
};

// Trains kSteps steps with one tower per device, each on its share of the
// batch. `init` is a checkpoint of the initial values: written when `write_init`
// (the reference run), else restored.
Curve Train(const Data& data, const std::vector<std::string>& devices, const SessionOptions& options,
            const std::string& init, bool write_init, const Setup& setup = {}) {
  Curve curve;
  Graph graph;
  graph.set_seed(7);
  Scope root(graph);
  const Scope cpu = root.WithDevice("/device:CPU:0");
  const int64_t towers = static_cast<int64_t>(devices.size());
  const int64_t rows = kBatch / towers;
  std::vector<Output> xs, ys, correct;
  train::BatchSourceFn source = [&](const Scope&) {
    const std::string i = std::to_string(xs.size());
    xs.push_back(Placeholder(cpu.WithOpName("x" + i), kFloat32, PartialShape({rows, kPixels})));
    ys.push_back(Placeholder(cpu.WithOpName("y" + i), kInt32, PartialShape({rows})));
    return tw::Batch{xs.back(), ys.back()};
  };
  cli::ModelConfig config{.name = "mlp", .hidden = {256, 256}};
  train::Momentum momentum({.learning_rate = 0.01, .momentum = 0.9});
  train::Adam adam({.learning_rate = 0.001});
  train::Optimizer& optimizer = setup.adam ? static_cast<train::Optimizer&>(adam) : momentum;
  train::ReplicaStep step = train::Replicate(
      root, devices, source, optimizer,
      [&](const Scope& tower, const tw::Batch& batch) {
        cli::ModelOutputs m = cli::BuildModel(tower, batch, config, /*training=*/true);
        if (tower.name_scope().rfind("tower_", 0) == 0) correct.push_back(m.correct);
        return m.loss;
      },
      {.variable_device = setup.variable_device, .global_step = true});
  train::Saver saver(root);
  EXPECT_TRUE(root.ok()) << root.status().ToString();
  if (!root.ok()) return curve;
  Session session(graph, options);
  Status s = session.Run(GlobalVariablesInitializer(graph));
  if (s.ok()) s = write_init ? saver.Save(session, init) : saver.Restore(session, init);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return curve;

  double right = 0, counted = 0;
  for (int64_t k = 0; k < kSteps; ++k) {
    FeedList feeds;
    for (int64_t t = 0; t < towers; ++t) {
      const int64_t first = k * kBatch + t * rows;
      std::vector<float> x(data.x.begin() + first * kPixels, data.x.begin() + (first + rows) * kPixels);
      std::vector<int32_t> y(data.y.begin() + first, data.y.begin() + first + rows);
      feeds.emplace_back(xs[static_cast<size_t>(t)], Tensor::FromVector<float>(x, TensorShape({rows, kPixels})));
      feeds.emplace_back(ys[static_cast<size_t>(t)], Tensor::FromVector<int32_t>(y, TensorShape({rows})));
    }
    std::vector<Output> fetches = {step.loss};
    fetches.insert(fetches.end(), correct.begin(), correct.end());
    auto out = session.Run(feeds, fetches, {step.train_op});
    EXPECT_TRUE(out.ok()) << "step " << k + 1 << " on " << devices[0] << ": " << out.status().ToString();
    if (!out.ok()) return curve;
    curve.losses.push_back((*out)[0].scalar<float>());
    for (size_t t = 1; t < out->size(); ++t) {
      for (float v : (*out)[t].ToVector<float>()) right += v;
      counted += static_cast<double>((*out)[t].NumElements());
    }
  }
  curve.accuracy = counted > 0 ? right / counted : 0;
  return curve;
}

class GpuTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TW_SKIP_WITHOUT_GPU();
    dir_ = fs::path(::testing::TempDir()) / ("tw_gpu_train_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    init_ = (dir_ / "init.safetensors").string();
    data_ = MakeData();
    SessionOptions cpu_only;
    cpu_only.max_gpus = 0;
    reference_ = Train(data_, {"/device:CPU:0"}, cpu_only, init_, /*write_init=*/true);
    ASSERT_EQ(reference_.losses.size(), static_cast<size_t>(kSteps));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Step by step within float tolerance: the first step starts from equal
  // weights (summation order alone), later ones carry the drift of earlier ones.
  static void ExpectSameCurve(const Curve& got, const Curve& want, const std::string& what) {
    ASSERT_EQ(got.losses.size(), want.losses.size()) << what;
    EXPECT_NEAR(got.losses[0], want.losses[0], 1e-4 * std::max(1.0, std::fabs(want.losses[0]))) << what;
    for (size_t k = 0; k < want.losses.size(); ++k) {
      EXPECT_NEAR(got.losses[k], want.losses[k], 2e-3 * std::max(1.0, std::fabs(want.losses[k])))
          << what << ", step " << k + 1;
    }
    // 5000 predictions; only near-ties of the logits may flip.
    EXPECT_NEAR(got.accuracy, want.accuracy, 0.01) << what;
  }

  fs::path dir_;
  std::string init_;
  Data data_;
  Curve reference_;
};

TEST_F(GpuTrainTest, OneGpuTakesTheStepsOfTheCpu) {
  // The reference learns: otherwise agreeing would say little.
  EXPECT_LT(reference_.losses.back(), 0.5 * reference_.losses.front());
  SessionOptions gpu;
  gpu.allow_soft_placement = true;  // as the trainer with GPU towers
  Curve one = Train(data_, {"/device:GPU:0"}, gpu, init_, false);
  ExpectSameCurve(one, reference_, "GPU:0 vs CPU:0");
}

TEST_F(GpuTrainTest, TwoLogicalGpusTakeTheStepsOfOne) {
  SessionOptions one_gpu;
  one_gpu.allow_soft_placement = true;
  Curve one = Train(data_, {"/device:GPU:0"}, one_gpu, init_, false);
  SessionOptions two = one_gpu;
  two.logical_gpus_per_gpu = 2;
  Curve both = Train(data_, {"/device:GPU:0", "/device:GPU:1"}, two, init_, false);
  ExpectSameCurve(both, one, "2 towers on 2 logical GPUs vs 1 GPU");
  ExpectSameCurve(both, reference_, "2 towers on 2 logical GPUs vs CPU:0");
}

TEST_F(GpuTrainTest, AdamWithItsVariablesOnTheGpuTakesTheStepsOfTheCpu) {
  const std::string adam_init = (dir_ / "adam_init.safetensors").string();
  SessionOptions cpu_only;
  cpu_only.max_gpus = 0;
  Curve cpu = Train(data_, {"/device:CPU:0"}, cpu_only, adam_init, /*write_init=*/true, {.adam = true});
  ASSERT_EQ(cpu.losses.size(), static_cast<size_t>(kSteps));
  EXPECT_LT(cpu.losses.back(), cpu.losses.front());  // it learns
  SessionOptions gpu;
  gpu.allow_soft_placement = true;
  Curve one = Train(data_, {"/device:GPU:0"}, gpu, adam_init, false,
                    {.adam = true, .variable_device = "/device:GPU:0"});
  ExpectSameCurve(one, cpu, "Adam, variables on GPU:0 vs CPU:0");
}

// `towerflow train` on GPUs: the binary, its flags and its JSON line.
class GpuTrainCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    TW_SKIP_WITHOUT_GPU();
    CliTest::SetUp();
    testing::CliResult r = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8",
                                "--examples", "4000", "--shards", "2", "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    data_ = (dir_ / "data" / "train-*.tfrecord").string();
  }
  void TearDown() override {
    if (!dir_.empty()) CliTest::TearDown();  // empty when skipped
  }

  // 300 steps of the seed model (about 0.97 test accuracy on CPUs); the JSON line.
  json Train(const std::string& logdir, const std::vector<std::string>& devices_and_flags) {
    std::vector<std::string> args = {"train", "--data", data_, "--eval-data", data_, "--model", "seed",
                                     "--hidden", "32,32", "--batch-size", "32", "--steps", "300", "--lr", "0.01",
                                     "--seed", "7", "--min-after-dequeue", "200", "--logdir",
                                     (dir_ / logdir).string()};
    args.insert(args.end(), devices_and_flags.begin(), devices_and_flags.end());
    testing::CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const size_t nl = out.rfind('\n');
    json j = json::parse(nl == std::string::npos ? out : out.substr(nl + 1), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j.is_discarded() ? json::object() : j;
  }

  // `towerflow eval` of the run's newest checkpoint: its accuracy.
  double Eval(const std::string& logdir) {
    testing::CliResult r = Run({"eval", "--checkpoint", (dir_ / logdir).string(), "--data", data_});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    json j = json::parse(out.substr(out.rfind('\n') + 1), nullptr, false);
    return j.is_discarded() ? -1 : j.value("accuracy", -1.0);
  }

  std::string data_;
};

TEST_F(GpuTrainCliTest, GpuTowersLearnWhatCpuTowersLearn) {
  json cpu = Train("cpu", {"--devices", "cpu:0"});
  ASSERT_TRUE(cpu.contains("test_accuracy")) << cpu.dump();
  EXPECT_FALSE(cpu.contains("gpus")) << cpu.dump();
  EXPECT_GT(cpu["test_accuracy"].get<double>(), 0.9);

  json gpu = Train("gpu", {"--devices", "gpu"});
  ASSERT_TRUE(gpu.contains("test_accuracy")) << gpu.dump();
  EXPECT_EQ(gpu["towers"], VisibleCudaGpuCount());
  EXPECT_EQ(gpu["devices"][0], "/device:GPU:0");
  ASSERT_TRUE(gpu.contains("gpus")) << gpu.dump();
  EXPECT_EQ(gpu["gpus"].size(), static_cast<size_t>(VisibleCudaGpuCount()));
  EXPECT_NE(gpu["gpus"][0].get<std::string>().find("name: "), std::string::npos) << gpu["gpus"].dump();
  // Shuffling differs run to run (the queue), so within noise: 4000 examples.
  EXPECT_NEAR(gpu["test_accuracy"].get<double>(), cpu["test_accuracy"].get<double>(), 0.04) << gpu.dump();
  EXPECT_NEAR(Eval("gpu"), gpu["test_accuracy"].get<double>(), 1e-3);

  json two = Train("two", {"--devices", "/gpu:0,/gpu:1", "--logical-gpus", "2", "--allow-tf32"});
  ASSERT_TRUE(two.contains("gpus")) << two.dump();
  EXPECT_EQ(two["towers"], 2);
  EXPECT_EQ(two["devices"], json::array({"/device:GPU:0", "/device:GPU:1"}));
  EXPECT_EQ(two["gpus"].size(), 2u);
  EXPECT_EQ(two["examples"], 300 * 32 * 2);
  EXPECT_NEAR(two["test_accuracy"].get<double>(), cpu["test_accuracy"].get<double>(), 0.04) << two.dump();
}

TEST_F(GpuTrainCliTest, MirroredVariablesOnGpusTrainAndEvaluate) {
  json mirrored = Train("mirrored", {"--devices", "gpu", "--logical-gpus", "2", "--variables", "mirrored"});
  ASSERT_TRUE(mirrored.contains("test_accuracy")) << mirrored.dump();
  EXPECT_EQ(mirrored["towers"], 2 * VisibleCudaGpuCount());
  EXPECT_GT(mirrored["test_accuracy"].get<double>(), 0.9) << mirrored.dump();  // as CPU towers
  // The checkpoint holds tower 0's copies; eval rebuilds the model in their scope.
  EXPECT_NEAR(Eval("mirrored"), mirrored["test_accuracy"].get<double>(), 1e-3);
}

TEST_F(GpuTrainCliTest, AGpuThatDoesNotExistIsAUsageError) {
  const std::string missing = "gpu:" + std::to_string(VisibleCudaGpuCount());
  testing::CliResult r = Run({"train", "--data", data_, "--model", "seed", "--logdir", (dir_ / "run").string(),
                              "--devices", missing});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("/device:GPU:" + std::to_string(VisibleCudaGpuCount()) + " does not exist"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Two logical GPUs per GPU make it exist.
  r = Run({"train", "--data", data_, "--model", "seed", "--hidden", "8", "--steps", "5", "--min-after-dequeue", "10",
           "--logdir", (dir_ / "run").string(), "--devices", missing, "--logical-gpus", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
}

}  // namespace
}  // namespace tw
