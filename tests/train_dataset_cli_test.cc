// `towerflow train --input dataset` end to end: it trains as the queue input
// does, a resumed run continues the input's epoch from the checkpoint (so a
// deterministic run stopped and resumed equals one run straight through, bit
// for bit), corrupt data stops it with DataLoss naming file and offset, and
// its shuffle buffer fill reaches TensorBoard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "towerflow/train/event_reader.h"
#include "towerflow/train/safetensors.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReadFile;

class TrainDatasetCliTest : public testing::CliTest {
 protected:
  json Last(const testing::CliResult& r) {
    std::string s = r.out;
    while (!s.empty() && s.back() == '\n') s.pop_back();
    const size_t nl = s.rfind('\n');
    return json::parse(nl == std::string::npos ? s : s.substr(nl + 1), nullptr, false);
  }
  void MakeData(int64_t examples) {
    auto r = Run({"convert", "seed-synthetic", "--out", (dir_ / "data").string(), "--n-features", "8", "--examples",
                  std::to_string(examples), "--shards", "2", "--seed", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    data_ = (dir_ / "data" / "train-*.tfrecord").string();
  }
  std::vector<std::string> Args(const std::string& logdir, int64_t steps) {
    return {"train", "--data", data_, "--model", "seed", "--hidden", "32,32", "--devices", "cpu:0,cpu:1",
            "--batch-size", "32", "--steps", std::to_string(steps), "--lr", "0.01", "--logdir",
            (dir_ / logdir).string(), "--seed", "7", "--min-after-dequeue", "200", "--intra-op-threads", "1",
            "--checkpoint-every-secs", "0", "--input", "dataset"};
  }
  std::string data_;
};

TEST_F(TrainDatasetCliTest, TrainsAndReportsItsInput) {
  MakeData(3000);
  std::vector<std::string> args = Args("run", 150);
  args.insert(args.end(), {"--eval-data", data_, "--summary-every-steps", "50"});
  auto r = Run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  json last = Last(r);
  EXPECT_EQ(last["input"], "dataset");
  EXPECT_EQ(last["global_step"], 150);
  EXPECT_GT(last["test_accuracy"].get<double>(), 0.85) << r.out;
  EXPECT_NE(r.out.find("input autotune: "), std::string::npos) << r.out;
  // The checkpoint holds the input's position.
  auto metadata = train::ReadSafetensorsMetadata((dir_ / "run" / "ckpt-150.safetensors").string());
  ASSERT_TRUE(metadata.ok()) << metadata.status().ToString();
  EXPECT_TRUE(metadata->count("input_state")) << "no input_state in the checkpoint";
  // TensorBoard gets the shuffle buffer's fill.
  bool fill = false;
  for (const auto& e : fs::directory_iterator(dir_ / "run")) {
    if (e.path().filename().string().rfind("events.out.tfevents", 0) != 0) continue;
    auto events = train::ReadEventFile(e.path().string());
    ASSERT_TRUE(events.ok()) << events.status().ToString();
    for (const auto& record : *events) {
      for (const auto& v : record.event.summary().value()) {
        if (v.tag() == "input/shuffle_buffer_fill") {
          fill = true;
          EXPECT_GE(v.simple_value(), 0.0f);
          EXPECT_LE(v.simple_value(), 1.0f);
        }
      }
    }
  }
  EXPECT_TRUE(fill);
}

TEST_F(TrainDatasetCliTest, AResumedRunContinuesTheEpochExactly) {
  MakeData(2000);
  // 40 steps of two towers of 32 = 2560 records: into the second epoch.
  std::vector<std::string> straight = Args("straight", 40);
  straight.push_back("--deterministic");
  auto whole = Run(straight);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::vector<std::string> first = Args("split", 15);
  first.push_back("--deterministic");
  ASSERT_EQ(Run(first).exit_code, 0);
  std::vector<std::string> second = Args("split", 40);
  second.insert(second.end(), {"--deterministic", "--resume"});
  auto resumed = Run(second);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("the input continues its epoch"), std::string::npos) << resumed.out;
  EXPECT_EQ(Last(resumed)["final_loss"], Last(whole)["final_loss"]);
  // Every weight and slot, bit for bit (the metadata, holding the input's
  // position, differs only in where the later epochs' shuffles start).
  auto a = train::ReadSafetensors((dir_ / "straight" / "ckpt-40.safetensors").string());
  auto b = train::ReadSafetensors((dir_ / "split" / "ckpt-40.safetensors").string());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (size_t i = 0; i < a->tensors.size(); ++i) {
    const auto& [name, tensor] = a->tensors[i];
    EXPECT_EQ(name, b->tensors[i].first);
    ASSERT_EQ(tensor.TotalBytes(), b->tensors[i].second.TotalBytes()) << name;
    EXPECT_EQ(std::memcmp(tensor.raw_data(), b->tensors[i].second.raw_data(), tensor.TotalBytes()), 0) << name;
  }
}

TEST_F(TrainDatasetCliTest, ACorruptRecordIsDataLossNamingFileAndOffset) {
  MakeData(1000);
  const fs::path shard = dir_ / "data" / "train-00000-of-00002.tfrecord";
  const uint64_t size = fs::file_size(shard);
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x5a');
    f.put('\xa5');
  }
  auto r = Run(Args("run", 1000));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("DataLoss"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(shard.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("corrupted record at "), std::string::npos) << r.err;
  std::vector<std::string> skip = Args("skip", 100);
  skip.push_back("--skip-corrupt-records");
  auto skipped = Run(skip);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
}

}  // namespace
}  // namespace tw
