// Errors while iterating belong to their element, as in tf.data: the next
// GetNext goes on with the element after it, through every transformation.
// The expected sequences are tf.data's for the same pipelines (TensorFlow
// 2.20: a check_numerics failure at element 2 in place of the division by
// zero here), except where noted (a TFRecord file that cannot be opened).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "towerflow/data/dataset.h"
#include "towerflow/data/dataset/dataset_test_util.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw::data {
namespace {

namespace fs = std::filesystem;

Output I64(const Scope& s, int64_t v) { return Const(s, Tensor::Scalar<int64_t>(v)); }

// x -> 10 / (x - 2): an integer division by zero at element 2.
MapFn DivideByXMinus2() {
  return [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Div(s.WithOpName("divide"), I64(s, 10), Sub(s, x[0], I64(s, 2)))};
  };
}

// What each GetNext gives, up to the end: an int64 scalar or vector as its
// values joined by ',', "error" (InvalidArgument naming the map's node),
// another code's name, or "end".
std::vector<std::string> Outcomes(const Dataset& d, int max = 40) {
  std::vector<std::string> out;
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  auto it = d.MakeIterator();
  EXPECT_TRUE(it.ok()) << it.status().ToString();
  if (!it.ok()) return out;
  for (int i = 0; i < max; ++i) {
    Element e;
    Status s = (*it)->GetNext(&e);
    if (s.code() == Code::kOutOfRange) {
      out.push_back("end");
      // Still the end.
      EXPECT_EQ((*it)->GetNext(&e).code(), Code::kOutOfRange);
      break;
    }
    if (!s.ok()) {
      const bool map_error = s.code() == Code::kInvalidArgument && s.message().find("divide") != std::string::npos;
      out.push_back(map_error ? "error" : std::string(CodeName(s.code())));
      continue;
    }
    std::string v;
    if (e[0].dtype() == kString) {
      v = e[0].scalar<std::string>();
    } else {
      for (int64_t x : e[0].ToVector<int64_t>()) v += (v.empty() ? "" : ",") + std::to_string(x);
    }
    out.push_back(v);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(ElementErrorsTest, AMapsErrorIsItsElementsAndTheNextElementFollows) {
  const V expected = {"-5", "-10", "error", "10", "5", "end"};
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2())), expected);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2(), {.num_parallel_calls = 2})), expected);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2(), {.num_parallel_calls = kAutotune})), expected);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Prefetch(2)), expected);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2(), {.num_parallel_calls = 3}).Prefetch(1)), expected);
  // Through a map after it, and a filter.
  EXPECT_EQ(Outcomes(Dataset::Range(5)
                         .Map(DivideByXMinus2(), {.num_parallel_calls = 2})
                         .Map([](const Scope& s, const std::vector<Output>& x) { return std::vector<Output>{x[0]}; },
                              {.num_parallel_calls = 2})),
            expected);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Filter([](const Scope& s, const std::vector<Output>& x) {
              return GreaterEqual(s, x[0], I64(s, -100));
            })),
            expected);
  // Take counts elements, not errors; Skip skips elements.
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Take(3)), (V{"-5", "-10", "error", "10", "end"}));
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Skip(3)), (V{"error", "5", "end"}));
}

TEST(ElementErrorsTest, ABatchHoldingAFailedElementFailsAndTheNextBatchFollows) {
  const V expected = {"-5,-10", "error", "5,3", "end"};
  EXPECT_EQ(Outcomes(Dataset::Range(6).Map(DivideByXMinus2()).Batch(2)), expected);
  // Fused: map and batch in one stage.
  EXPECT_EQ(Outcomes(Dataset::Range(6).Map(DivideByXMinus2(), {.num_parallel_calls = 2}).Batch(2)), expected);
  EXPECT_EQ(Outcomes(Dataset::Range(6).Map(DivideByXMinus2(), {.num_parallel_calls = 2}).Batch(2).Unbatch()),
            (V{"-5", "-10", "error", "5", "3", "end"}));
}

TEST(ElementErrorsTest, RepeatShuffleAndInterleaveGoOnAfterAnError) {
  EXPECT_EQ(Outcomes(Dataset::Range(3).Map(DivideByXMinus2()).Repeat(2)),
            (V{"-5", "-10", "error", "-5", "-10", "error", "end"}));
  // Shuffle: the error comes once, every other element too.
  V shuffled = Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Shuffle(10, {.seed = 1}));
  ASSERT_EQ(shuffled.size(), 6u);
  EXPECT_EQ(shuffled.back(), "end");
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, (V{"-10", "-5", "10", "5", "end", "error"}));
  // Interleave (cycle 2, block 1): the failed element does not move the cycle on.
  const V interleaved = {"-5", "-5", "-10", "-10", "error", "10", "error", "10", "5", "5", "end"};
  auto two = [](const Element&) -> StatusOr<Dataset> { return Dataset::Range(5).Map(DivideByXMinus2()); };
  EXPECT_EQ(Outcomes(Dataset::Range(2).Interleave(two, {.cycle_length = 2})), interleaved);
  EXPECT_EQ(Outcomes(Dataset::Range(2).Interleave(two, {.cycle_length = 2, .num_parallel_calls = 2})), interleaved);
}

TEST(ElementErrorsTest, IgnoreErrorsSkipsFailedElementsAndCountsThem) {
  auto it = Dataset::Range(7).Map(DivideByXMinus2(), {.num_parallel_calls = 2}).Batch(2).IgnoreErrors().MakeIterator();
  ASSERT_TRUE(it.ok()) << it.status().ToString();
  std::vector<std::vector<int64_t>> batches;
  Element e;
  Status s;
  while ((s = (*it)->GetNext(&e)).ok()) batches.push_back(e[0].ToVector<int64_t>());
  EXPECT_EQ(s.code(), Code::kOutOfRange) << s.ToString();
  EXPECT_EQ(batches, (std::vector<std::vector<int64_t>>{{-5, -10}, {5, 3}, {2}}));
  EXPECT_EQ((*it)->Gauges()["Errors ignored"], 1);
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).IgnoreErrors()), (V{"-5", "-10", "10", "5", "end"}));
}

// IgnoreErrors over an input that fails on every element, without end: a
// GetNext waiting in it (on the consumer's thread, or on a Prefetch's worker)
// returns Cancelled when the iterator is cancelled from another thread.
TEST(ElementErrorsTest, IgnoringAnEndlessRunOfErrorsStopsWhenCancelled) {
  MapFn always_fails = [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Div(s.WithOpName("divide"), I64(s, 10), Sub(s, x[0], x[0]))};
  };
  const Dataset failing = Dataset::Range(0, std::numeric_limits<int64_t>::max()).Map(always_fails).IgnoreErrors();
  for (const Dataset& d : {failing, failing.Prefetch(1)}) {
    auto it = d.MakeIterator();
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    Status got;
    std::thread consumer([&] {
      Element e;
      got = (*it)->GetNext(&e);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    (*it)->Cancel();
    consumer.join();
    EXPECT_EQ(got.code(), Code::kCancelled) << got.ToString();
    EXPECT_GT((*it)->Gauges()["Errors ignored"], 0);
  }
}

// The fused Batch(Shuffle(Unbatch(...))) treats a failed element as the
// unfused chain does (an identity Map in between keeps it unfused).
TEST(ElementErrorsTest, AFusedShuffleBatchFailsAsTheUnfusedOne) {
  MapFn identity = [](const Scope& s, const std::vector<Output>& x) { return x; };
  const Dataset batches = Dataset::Range(8).Map(DivideByXMinus2()).Batch(2);
  const V fused = Outcomes(batches.Unbatch().Shuffle(1).Batch(2));
  const V unfused = Outcomes(batches.Unbatch().Map(identity).Shuffle(1).Batch(2));
  EXPECT_EQ(fused, unfused);
  EXPECT_EQ(fused, (V{"-5,-10", "error", "3,2", "2", "end"}));
}

// A parallel stage holding a failed element in its buffer saves it in its
// place; a restored iterator gives the same elements and error.
TEST(ElementErrorsTest, APositionHoldingAnErrorIsSavedAndRestored) {
  const Dataset d = Dataset::Range(8).Map(DivideByXMinus2(), {.num_parallel_calls = 2}).Prefetch(4);
  auto it = d.MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  ASSERT_TRUE((*it)->GetNext(&e).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the buffers fill, element 2 among them
  IteratorState state;
  ASSERT_TRUE((*it)->Save(&state).ok());
  auto rest = [](Iterator& iter) {
    V out;
    Element x;
    for (int i = 0; i < 20; ++i) {
      Status s = iter.GetNext(&x);
      if (s.code() == Code::kOutOfRange) break;
      out.push_back(s.ok() ? std::to_string(x[0].scalar<int64_t>()) : std::string(CodeName(s.code())));
    }
    return out;
  };
  const V original = rest(**it);
  EXPECT_EQ(original, (V{"-10", "InvalidArgument", "10", "5", "3", "2", "2"}));
  auto restored = d.MakeIterator();
  ASSERT_TRUE(restored.ok());
  ASSERT_TRUE((*restored)->Restore(state).ok());
  EXPECT_EQ(rest(**restored), original);
}

TEST(ElementErrorsTest, ACachedEpochReplaysTheElementsWithoutTheirErrors) {
  EXPECT_EQ(Outcomes(Dataset::Range(5).Map(DivideByXMinus2()).Cache().Repeat(2)),
            (V{"-5", "-10", "error", "10", "5", "-5", "-10", "10", "5", "end"}));
}

class ElementErrorsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tw_element_errors_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// A corrupt file (tf.data: its DataLoss, then the next file) and a missing
// one (tf.data retries it forever; here its NotFound comes once, then the
// next file).
TEST_F(ElementErrorsFileTest, AFileThatFailsIsItsErrorOnceAndTheNextFileFollows) {
  const std::string corrupt = (dir_ / "corrupt.tfrecord").string(), good = (dir_ / "good.tfrecord").string();
  testing::WriteRecords(corrupt, "c", 5);
  testing::WriteRecords(good, "g", 2);
  {
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(corrupt) / 2));
    f.put('\x7f');
  }
  const std::vector<std::string> files = {corrupt, good, (dir_ / "missing.tfrecord").string(), good};
  EXPECT_EQ(Outcomes(Dataset::TFRecord(files)),
            (V{"c0", "c1", "DataLoss", "g0", "g1", "NotFound", "g0", "g1", "end"}));
  EXPECT_EQ(Outcomes(Dataset::TFRecord(files).IgnoreErrors()), (V{"c0", "c1", "g0", "g1", "g0", "g1", "end"}));
  EXPECT_EQ(Outcomes(Dataset::TFRecord(files).Prefetch(4).IgnoreErrors()),
            (V{"c0", "c1", "g0", "g1", "g0", "g1", "end"}));
}

}  // namespace
}  // namespace tw::data
