// `towerflow train --optimizer`: each update rule trains the seed model on two
// towers to a useful test accuracy, its checkpoint holds its slots under TF's
// names (with TF's first values where a slot starts away from zero), and a
// resumed run picks the slots up again.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "towerflow/train/safetensors.h"

namespace tw {
namespace {

using nlohmann::json;

class TrainOptimizersCliTest : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    testing::CliResult r = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8",
                                "--examples", "3000", "--shards", "2", "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    data_ = (dir_ / "data" / "train-*.tfrecord").string();
  }

  // Trains `steps` steps with `optimizer` into logdir dir_/<optimizer>; returns
  // the run's last stdout line, parsed.
  // The rates: each rule's own scale (measured on this data: test accuracy
  // 0.985-0.994 after 300 steps; at the CLI's defaults the adaptive rules
  // need more steps, 0.84-0.91).
  json Train(const std::string& optimizer, int64_t steps, bool resume = false) {
    const char* lr = optimizer == "sgd" || optimizer == "adagrad" ? "0.1" : "0.01";
    std::vector<std::string> args = {
        "train", "--data", data_, "--eval-data", data_, "--model", "seed", "--hidden", "16", "--devices",
        "cpu:0,cpu:1", "--batch-size", "32", "--steps", std::to_string(steps), "--optimizer", optimizer, "--lr", lr,
        "--logdir", (dir_ / optimizer).string(), "--seed", "7", "--min-after-dequeue", "200",
        "--intra-op-threads", "1", "--checkpoint-every-secs", "0"};
    if (resume) args.push_back("--resume");
    testing::CliResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string s = r.out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    const size_t nl = s.rfind('\n');
    json j = json::parse(nl == std::string::npos ? s : s.substr(nl + 1), nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out << r.err;
    return j;
  }

  std::string data_;
};

TEST_F(TrainOptimizersCliTest, EachOptimizerTrainsAndCheckpointsItsSlots) {
  struct Case {
    std::string optimizer;
    std::vector<std::string> slots;  // of hidden1/kernel, as TF names them
  };
  const std::vector<Case> cases = {
      {"sgd", {}},
      {"momentum", {"Momentum"}},
      {"adam", {"Adam", "Adam_1"}},
      {"rmsprop", {"RMSProp", "RMSProp_1"}},
      {"adagrad", {"Adagrad"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.optimizer);
    json j = Train(c.optimizer, 300);
    if (!j.is_object()) continue;
    EXPECT_GT(j["test_accuracy"].get<double>(), 0.95) << j.dump();
    auto file = train::ReadSafetensors(j["checkpoint"].get<std::string>());
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    const Tensor* kernel = file->Find("hidden1/kernel");
    ASSERT_NE(kernel, nullptr);
    for (const std::string& slot : c.slots) {
      const Tensor* t = file->Find("hidden1/kernel/" + slot);
      ASSERT_NE(t, nullptr) << slot;
      EXPECT_EQ(t->shape(), kernel->shape()) << slot;
    }
    // No slot beyond TF's: the next name is free.
    const std::string next = c.slots.empty() ? "" : c.slots.front() + "_" + std::to_string(c.slots.size());
    if (!next.empty()) EXPECT_EQ(file->Find("hidden1/kernel/" + next), nullptr) << next;
  }
}

// RMSProp's mean square starts at one and Adagrad's accumulator at 0.1, and
// both only grow from there (RMSProp's is a mean of squares pulled from one
// towards the gradients' squares; Adagrad's adds squares): after training, an
// accumulator at zero would mean a slot that was never initialized or restored.
TEST_F(TrainOptimizersCliTest, AdaptiveSlotsStartAwayFromZeroAndSurviveAResume) {
  for (const std::string optimizer : {"rmsprop", "adagrad"}) {
    SCOPED_TRACE(optimizer);
    json first = Train(optimizer, 100);
    if (!first.is_object()) continue;
    auto before = train::ReadSafetensors(first["checkpoint"].get<std::string>());
    ASSERT_TRUE(before.ok()) << before.status().ToString();
    const std::string slot = optimizer == "rmsprop" ? "hidden1/kernel/RMSProp" : "hidden1/kernel/Adagrad";
    const Tensor* s = before->Find(slot);
    ASSERT_NE(s, nullptr);
    const std::vector<float> values = s->ToVector<float>();
    for (float v : values) {
      EXPECT_GT(v, 0.0f) << slot;
      if (optimizer == "adagrad") EXPECT_GE(v, 0.1f) << slot;
    }
    json second = Train(optimizer, 200, /*resume=*/true);
    if (!second.is_object()) continue;
    EXPECT_EQ(second["global_step"], 200);
    EXPECT_EQ(second["steps"], 100);
    auto after = train::ReadSafetensors(second["checkpoint"].get<std::string>());
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    const Tensor* t = after->Find(slot);
    ASSERT_NE(t, nullptr);
    if (optimizer == "adagrad") {
      // Resumed, the accumulator went on from the checkpoint's: it only grows.
      const std::vector<float> later = t->ToVector<float>();
      ASSERT_EQ(later.size(), values.size());
      for (size_t i = 0; i < later.size(); ++i) EXPECT_GE(later[i], values[i]) << slot << "[" << i << "]";
    }
  }
}

}  // namespace
}  // namespace tw
