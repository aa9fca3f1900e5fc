// Map and Filter (graph functions), parallel orders, errors inside a map,
// autotune, exactly-once delivery, cancellation, and saving and restoring an
// iterator's position.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "towerflow/data/dataset.h"
#include "towerflow/data/dataset/dataset_test_util.h"
#include "towerflow/data/example_builder.h"
#include "towerflow/data/io_ops.h"
#include "towerflow/data/record_test_util.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw::data {
namespace {

using testing::Drain;
using testing::Ints;
using testing::Seq;
using testing::Values;

Output I64(const Scope& s, int64_t v) { return Const(s, Tensor::Scalar<int64_t>(v)); }

// x -> x * 10
MapFn Times10() {
  return [](const Scope& s, const std::vector<Output>& x) { return std::vector<Output>{Mul(s, x[0], I64(s, 10))}; };
}

TEST(MapDatasetTest, MapRunsTheGraphOnEveryElement) {
  EXPECT_EQ(Ints(Dataset::Range(5).Map(Times10())), (std::vector<int64_t>{0, 10, 20, 30, 40}));
  // Several outputs, a passed-through input among them.
  auto pairs = Drain(Dataset::Range(3).Map([](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{x[0], Cast(s, x[0], kFloat32)};
  }));
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[2][0].scalar<int64_t>(), 2);
  EXPECT_EQ(pairs[2][1].scalar<float>(), 2.0f);
  EXPECT_EQ(Dataset::Range(3).Map(Times10()).element_spec().DebugString(), "(int64 [])");
}

TEST(MapDatasetTest, ParallelMapKeepsOrderWhenDeterministic) {
  for (int64_t calls : {int64_t{1}, int64_t{2}, int64_t{4}, kAutotune}) {
    EXPECT_EQ(Ints(Dataset::Range(500).Map(Times10(), {.num_parallel_calls = calls})),
              Ints(Dataset::Range(500).Map(Times10())))
        << calls;
  }
  std::vector<int64_t> any = Ints(Dataset::Range(500).Map(Times10(), {.num_parallel_calls = 3, .deterministic = false}));
  std::sort(any.begin(), any.end());
  EXPECT_EQ(any, Ints(Dataset::Range(500).Map(Times10())));
}

TEST(MapDatasetTest, MapThenBatchFusedGivesTheUnfusedBatches) {
  // Batch over a parallel Map runs fused (map_and_batch); a sequential Map
  // is batched by Batch itself. Same batches, remainders and drops.
  for (bool drop : {false, true}) {
    std::vector<Element> fused = Drain(Dataset::Range(103).Map(Times10(), {.num_parallel_calls = 3}).Batch(10, drop));
    std::vector<Element> plain = Drain(Dataset::Range(103).Map(Times10()).Batch(10, drop));
    ASSERT_EQ(fused.size(), drop ? 10u : 11u);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) EXPECT_EQ(fused[i][0].ToVector<int64_t>(), plain[i][0].ToVector<int64_t>());
  }
  std::vector<int64_t> any;
  for (const Element& b : Drain(Dataset::Range(103).Map(Times10(), {.num_parallel_calls = 2, .deterministic = false})
                                    .Batch(10))) {
    for (int64_t v : b[0].ToVector<int64_t>()) any.push_back(v);
  }
  std::sort(any.begin(), any.end());
  EXPECT_EQ(any, Ints(Dataset::Range(103).Map(Times10())));
  // Strings move into the batch; the shapes of a batch must agree.
  auto strings = Drain(Dataset::FromTensorSlices({Tensor::Vec<std::string>({"a", "b", "c"})})
                           .Map([](const Scope&, const std::vector<Output>& x) { return x; },
                                {.num_parallel_calls = 2})
                           .Batch(2));
  ASSERT_EQ(strings.size(), 2u);
  EXPECT_EQ(strings[0][0].ToVector<std::string>(), (std::vector<std::string>{"a", "b"}));
}

TEST(MapDatasetTest, AFailingMapNamesTheElementAndTheNodeAndDoesNotHang) {
  // 10 / (x - 3): integer division by zero at element 3.
  MapFn divide = [](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Div(s.WithOpName("divide"), I64(s, 10), Sub(s, x[0], I64(s, 3)))};
  };
  for (int64_t calls : {int64_t{0}, int64_t{3}}) {
    auto it = Dataset::Range(100).Map(divide, {.num_parallel_calls = calls}).Prefetch(2).MakeIterator();
    ASSERT_TRUE(it.ok());
    Element e;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*it)->GetNext(&e).ok());
    Status s = (*it)->GetNext(&e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("Map: element 3"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("divide"), std::string::npos) << s.ToString();
    // The next element follows (element_errors_test.cc).
    ASSERT_TRUE((*it)->GetNext(&e).ok());
    EXPECT_EQ(e[0].scalar<int64_t>(), 10);
    // Fused with a Batch: the batch holding element 3 fails, naming it.
    auto batched = Dataset::Range(100).Map(divide, {.num_parallel_calls = calls}).Batch(2).MakeIterator();
    ASSERT_TRUE(batched.ok());
    ASSERT_TRUE((*batched)->GetNext(&e).ok());
    s = (*batched)->GetNext(&e);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("Map: element 3"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("divide"), std::string::npos) << s.ToString();
    ASSERT_TRUE((*batched)->GetNext(&e).ok());
    EXPECT_EQ(e[0].ToVector<int64_t>(), (std::vector<int64_t>{10, 5}));
  }
}

TEST(MapDatasetTest, BuildErrorsOfTheFunctionBecomeTheDatasetsError) {
  Dataset d = Dataset::Range(3).Map([](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{MatMul(s, x[0], x[0])};  // scalars: rank error
  });
  EXPECT_EQ(d.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(d.status().message().rfind("Map: ", 0), 0u) << d.status().ToString();
  EXPECT_EQ(Dataset::Range(3).Map(nullptr).status().code(), Code::kInvalidArgument);
}

TEST(MapDatasetTest, FilterKeepsWhatThePredicateAccepts) {
  PredicateFn even = [](const Scope& s, const std::vector<Output>& x) {
    return Equal(s, Mul(s, Div(s, x[0], I64(s, 2)), I64(s, 2)), x[0]);
  };
  EXPECT_EQ(Ints(Dataset::Range(10).Filter(even)), (std::vector<int64_t>{0, 2, 4, 6, 8}));
  PredicateFn not_bool = [](const Scope& s, const std::vector<Output>& x) { return x[0]; };
  EXPECT_EQ(Dataset::Range(10).Filter(not_bool).status().code(), Code::kInvalidArgument);
}

TEST(MapDatasetTest, AutotuneReportsItsChoice) {
  auto it = Dataset::Range(3000).Map(Times10(), {.num_parallel_calls = kAutotune}).Prefetch().MakeIterator();
  ASSERT_TRUE(it.ok());
  EXPECT_EQ(testing::Drain(**it).size(), 3000u);
  const std::string summary = (*it)->AutotuneSummary();
  EXPECT_NE(summary.find("Map: "), std::string::npos) << summary;
  EXPECT_NE(summary.find("parallel calls"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Prefetch: "), std::string::npos) << summary;
}

class MapFileTest : public record_test::TempDirTest {
 protected:
  // n Examples {id: int64 i, pixels: 4 bytes i, i+1, i+2, i+3} per file.
  std::vector<std::string> WriteExamples(int files, int n) {
    std::vector<std::string> paths;
    int id = 0;
    for (int f = 0; f < files; ++f) {
      paths.push_back(Path("ex" + std::to_string(f) + ".tfrecord"));
      auto w = RecordWriter::Open(paths.back());
      EXPECT_TRUE(w.ok());
      for (int i = 0; i < n; ++i, ++id) {
        io::ExampleBuilder ex;
        std::string pixels = {char(id), char(id + 1), char(id + 2), char(id + 3)};
        ex.SetInt64("id", {id}).SetBytes("pixels", pixels);
        EXPECT_TRUE((*w)->WriteRecord(*ex.Serialize()).ok());
      }
      EXPECT_TRUE((*w)->Close().ok());
    }
    return paths;
  }
  static MapFn Parse() {
    return [](const Scope& s, const std::vector<Output>& x) {
      io::ParsedFeatures f = io::ParseSingleExample(
          s, x[0], {{"id", io::FixedLenFeature(kInt64)}, {"pixels", io::FixedLenFeature(kString)}});
      return std::vector<Output>{f["id"], io::DecodeRaw(s, f["pixels"], kUInt8)};
    };
  }
};

TEST_F(MapFileTest, ParsesRecordsAndDeliversEveryRecordOnceAnEpoch) {
  std::vector<std::string> files = WriteExamples(3, 40);
  Dataset d = Dataset::TFRecord(files, {.num_parallel_reads = 3})
                  .Map(Parse(), {.num_parallel_calls = 3, .deterministic = false})
                  .Shuffle(17, {.seed = 5})
                  .Repeat(3)
                  .Batch(8)
                  .Prefetch();
  // DecodeRaw's length is not static.
  EXPECT_EQ(d.element_spec().DebugString(), "(int64 [-1], uint8 [-1,-1])");
  std::map<int64_t, int> seen;
  for (const Element& batch : Drain(d)) {
    std::vector<int64_t> ids = batch[0].ToVector<int64_t>();
    std::vector<uint8_t> px = batch[1].ToVector<uint8_t>();
    for (size_t i = 0; i < ids.size(); ++i) {
      ++seen[ids[i]];
      EXPECT_EQ(px[i * 4 + 2], static_cast<uint8_t>(ids[i] + 2));
    }
  }
  ASSERT_EQ(seen.size(), 120u);
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 3) << id;
}

// Takes `first` elements, saves, restores into a new iterator and takes the
// rest: the same elements as one uninterrupted pass. Each pass over a fresh
// dataset from `make` (a dataset's later iterations reshuffle, as in tf.data).
void ExpectResumes(const std::function<Dataset()>& make, int first) {
  auto whole = Drain(make());
  const Dataset d = make();
  auto it = d.MakeIterator();
  ASSERT_TRUE(it.ok());
  std::vector<Element> got;
  Element e;
  for (int i = 0; i < first; ++i) {
    ASSERT_TRUE((*it)->GetNext(&e).ok());
    got.push_back(e);
  }
  IteratorState state;
  ASSERT_TRUE((*it)->Save(&state).ok()) << (*it)->Save(&state).ToString();
  it->reset();
  auto resumed = make().MakeIterator();  // as a new process would
  ASSERT_TRUE(resumed.ok());
  ASSERT_TRUE((*resumed)->Restore(state).ok()) << (*resumed)->Restore(state).ToString();
  for (const Element& rest : Drain(**resumed)) got.push_back(rest);
  ASSERT_EQ(got.size(), whole.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), whole[i].size());
    for (size_t c = 0; c < got[i].size(); ++c) {
      EXPECT_EQ(got[i][c].DebugString(100), whole[i][c].DebugString(100)) << "element " << i;
    }
  }
}

TEST_F(MapFileTest, ASavedIteratorContinuesItsEpochExactly) {
  std::vector<std::string> files = WriteExamples(3, 25);
  // Seeded shuffles and deterministic maps: every pass is the same.
  ExpectResumes([&] { return Dataset::TFRecord(files).Map(Parse()).Shuffle(10, {.seed = 1}).Repeat(2).Batch(4); },
                7);
  ExpectResumes([&] { return Dataset::TFRecord(files, {.num_parallel_reads = 2})
                    .Shuffle(30, {.seed = 9})
                    .Repeat(3)
                    .Batch(5)
                    .Map(
                        [](const Scope& s, const std::vector<Output>& x) {
                          io::ParsedFeatures f = io::ParseExample(s, x[0], {{"id", io::FixedLenFeature(kInt64)}});
                          return std::vector<Output>{f["id"]};
                        },
                        {.num_parallel_calls = 2})
                    .Prefetch(3); },
                22);
  ExpectResumes([] { return Dataset::Range(40).Shard(3, 1).Skip(2).Take(9).Batch(2).Unbatch(); }, 3);
  // A shuffled file list: the epochs after the restored one draw the orders
  // of the run that saved (a restore in the third epoch).
  const std::string pattern = Path("ex*.tfrecord");
  ExpectResumes([&] { return Dataset::ListFiles(pattern, {.shuffle = true, .seed = 5}).Repeat(6); }, 8);
  ExpectResumes(
      [&] {
        return Dataset::TFRecord(files).Shuffle(8, {.seed = 3}).Map(Parse(), {.num_parallel_calls = 2}).Batch(4);
      },
      6);
  // Batch(Shuffle(Unbatch(...))) fused over rows, as train's dataset input.
  ExpectResumes(
      [&] {
        return Dataset::TFRecord(files)
            .Batch(4)
            .Map(
                [](const Scope& s, const std::vector<Output>& x) {
                  io::ParsedFeatures f = io::ParseExample(
                      s, x[0], {{"id", io::FixedLenFeature(kInt64)}, {"pixels", io::FixedLenFeature(kString)}});
                  return std::vector<Output>{f["id"], Reshape(s, io::DecodeRaw(s, f["pixels"], kUInt8), {-1, 4})};
                },
                {.num_parallel_calls = 2})
            .Repeat(2)
            .Unbatch()
            .Shuffle(20, {.seed = 6})
            .Batch(7);
      },
      9);
  ExpectResumes(
      [] {
        return Dataset::Range(1, 6).Interleave(
            [](const Element& e) -> StatusOr<Dataset> { return Dataset::FromTensors({e[0]}).Repeat(3); },
            {.cycle_length = 2, .block_length = 2, .num_parallel_calls = 2});
      },
      5);
}

TEST(DatasetCancelTest, DestroyingAnIteratorWithBlockedThreadsReturnsWithinASecond) {
  // A slow map behind a full prefetch buffer and parallel workers.
  MapFn slow = [](const Scope& s, const std::vector<Output>& x) {
    Output v = x[0];
    for (int i = 0; i < 50; ++i) v = Add(s, v, I64(s, 0));
    return std::vector<Output>{v};
  };
  for (int round = 0; round < 3; ++round) {
    auto it = Dataset::Range(1000000).Map(slow, {.num_parallel_calls = 4}).Prefetch(8).MakeIterator();
    ASSERT_TRUE(it.ok());
    Element e;
    ASSERT_TRUE((*it)->GetNext(&e).ok());
    const auto start = std::chrono::steady_clock::now();
    it->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
  // Cancel from another thread wakes a consumer waiting on an input that never comes.
  auto it = Dataset::Range(1000000).Map(slow, {.num_parallel_calls = 1}).Prefetch(1).MakeIterator();
  ASSERT_TRUE(it.ok());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (*it)->Cancel();
  });
  Status s;
  Element e;
  while ((s = (*it)->GetNext(&e)).ok()) {
  }
  canceller.join();
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
}

// Loops that discard elements (a predicate false forever over a repeated
// input, Skip(-1) of one) stop when their iterator is closed.
TEST(DatasetCancelTest, LoopsThatDiscardEveryElementStopWhenClosed) {
  PredicateFn never = [](const Scope& s, const std::vector<Output>& x) { return Equal(s, x[0], I64(s, -1)); };
  for (const Dataset& d : {Dataset::Range(10).Repeat().Filter(never).Prefetch(1),
                           Dataset::Range(10).Repeat().Skip(-1).Prefetch(1)}) {
    auto it = d.MakeIterator();
    ASSERT_TRUE(it.ok()) << it.status().ToString();
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      (*it)->Cancel();
    });
    Element e;
    EXPECT_EQ((*it)->GetNext(&e).code(), Code::kCancelled);
    canceller.join();
    const auto start = std::chrono::steady_clock::now();
    it->reset();  // joins the prefetch worker, which was inside the loop
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
}

// More parallel calls than threads can start run on at most max(64, 4 x cores).
TEST(MapDatasetTest, HugeParallelCallsRunOnABoundedNumberOfThreads) {
  EXPECT_EQ(Ints(Dataset::Range(200).Map(Times10(), {.num_parallel_calls = int64_t{1} << 40})),
            Ints(Dataset::Range(200).Map(Times10())));
  // Fused with the Batch after it.
  std::vector<Element> batches =
      Drain(Dataset::Range(200).Map(Times10(), {.num_parallel_calls = 100000}).Batch(50));
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(Values(batches[3][0]).back(), 1990);
}

}  // namespace
}  // namespace tw::data
