// Sources and the transformations that only move elements, against tf.data's
// documented semantics (orders, remainders, padding, cardinalities, errors).
#include "towerflow/data/dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>

#include "towerflow/data/dataset/dataset_test_util.h"
#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/data/record_test_util.h"

namespace tw::data {
namespace {

using testing::Drain;
using testing::Ints;
using testing::Seq;
using testing::Strings;
using testing::Values;
using testing::WriteRecords;

TEST(DatasetTest, RangeIsPythonsRange) {
  EXPECT_EQ(Ints(Dataset::Range(5)), Seq(0, 5));
  EXPECT_EQ(Ints(Dataset::Range(2, 11, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(Ints(Dataset::Range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_TRUE(Ints(Dataset::Range(3, 3)).empty());
  EXPECT_EQ(Dataset::Range(2, 11, 3).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(5, 0, -2).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(0, 5, 0).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, FromTensorsAndSlices) {
  Tensor m = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, TensorShape{3, 2});
  Tensor s = Tensor::Vec<std::string>({"a", "b", "c"});
  auto one = Drain(Dataset::FromTensors({m, s}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0][0].shape(), (TensorShape{3, 2}));
  Dataset slices = Dataset::FromTensorSlices({m, s});
  EXPECT_EQ(slices.element_spec().DebugString(), "(int64 [2], string [])");
  auto rows = Drain(slices);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Values(rows[1][0]), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(rows[2][1].scalar<std::string>(), "c");
  Dataset bad = Dataset::FromTensorSlices({m, Tensor::Vec<int64_t>({1, 2})});
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("FromTensorSlices"), std::string::npos) << bad.status().ToString();
  EXPECT_EQ(Dataset::FromTensorSlices({Tensor::Scalar<int64_t>(1)}).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, BatchKeepsOrDropsTheRemainder) {
  auto batches = Drain(Dataset::Range(10).Batch(4));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(Values(batches[0][0]), Seq(0, 4));
  EXPECT_EQ(Values(batches[2][0]), Seq(8, 10));
  EXPECT_EQ(Dataset::Range(10).Batch(4).element_spec().shapes[0], PartialShape({-1}));
  Dataset dropped = Dataset::Range(10).Batch(4, /*drop_remainder=*/true);
  EXPECT_EQ(dropped.element_spec().shapes[0], PartialShape({4}));
  EXPECT_EQ(Drain(dropped).size(), 2u);
  EXPECT_EQ(dropped.Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(10).Batch(4).Cardinality(), 3);
  EXPECT_EQ(Dataset::Range(10).Batch(0).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, BatchOfDifferentShapesNamesTheElement) {
  Tensor a = Tensor::Vec<int64_t>({1, 2});
  Tensor b = Tensor::Vec<int64_t>({1, 2, 3});
  Dataset d = Dataset::FromTensors({a}).Repeat(1);
  // Two sources concatenated through Interleave with cycle 1 (FlatMap).
  Dataset both = Dataset::Range(2).FlatMap([&](const Element& e) -> StatusOr<Dataset> {
    return Dataset::FromTensors({e[0].scalar<int64_t>() == 0 ? a : b});
  });
  auto it = both.Batch(2).MakeIterator();
  ASSERT_TRUE(it.ok());
  Element batch;
  Status s = (*it)->GetNext(&batch);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Cannot batch tensors with different shapes in component 0. First element had "
                             "shape [2] and element 1 had shape [3]."),
            std::string::npos)
      << s.ToString();
  // The failed batch held both elements: the end follows (tf.data's rule).
  EXPECT_EQ((*it)->GetNext(&batch).code(), Code::kOutOfRange);
  EXPECT_TRUE(d.ok());
}

TEST(DatasetTest, PaddedBatchPadsToTheLongestOrTheGivenShape) {
  // Element i is a vector of i ones.
  Dataset ragged = Dataset::Range(1, 5).FlatMap([](const Element& e) -> StatusOr<Dataset> {
    const int64_t n = e[0].scalar<int64_t>();
    return Dataset::FromTensors({Tensor::FromVector<int64_t>(std::vector<int64_t>(n, 1), TensorShape{n})});
  });
  auto batches = Drain(ragged.PaddedBatch(2));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0][0].shape(), (TensorShape{2, 2}));
  EXPECT_EQ(Values(batches[0][0]), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(batches[1][0].shape(), (TensorShape{2, 4}));
  auto fixed = Drain(ragged.PaddedBatch(3, {.padded_shapes = {PartialShape({5})},
                                            .padding_values = {Tensor::Scalar<int64_t>(-1)}}));
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_EQ(fixed[1][0].shape(), (TensorShape{1, 5}));
  EXPECT_EQ(Values(fixed[1][0]), (std::vector<int64_t>{1, 1, 1, 1, -1}));
  auto it = ragged.PaddedBatch(4, {.padded_shapes = {PartialShape({3})}}).MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  Status s = (*it)->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("Attempted to pad to a smaller size than the input element"), std::string::npos);
  EXPECT_EQ(ragged.PaddedBatch(2, {.padding_values = {Tensor::Scalar<float>(0)}}).status().code(),
            Code::kInvalidArgument);
}

TEST(DatasetTest, UnbatchUndoesBatch) {
  EXPECT_EQ(Ints(Dataset::Range(10).Batch(3).Unbatch()), Seq(0, 10));
  EXPECT_EQ(Dataset::Range(3).Unbatch().status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, CountsPastInt64AreExactOrSaturated) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(Dataset::Range(0, kMax, 2).Cardinality(), kMax / 2 + 1);
  EXPECT_EQ(Ints(Dataset::Range(0, kMax, 2).Take(3)), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(Dataset::Range(-1, kMax).Cardinality(), kMax);  // 2^63 elements
  EXPECT_EQ(Ints(Dataset::Range(-1, kMax).Take(2)), (std::vector<int64_t>{-1, 0}));
  EXPECT_EQ(Ints(Dataset::Range(0, kMin, -1).Take(2)), (std::vector<int64_t>{0, -1}));
  EXPECT_EQ(Ints(Dataset::Range(kMin, kMax, kMax)), (std::vector<int64_t>{kMin, -1, kMax - 1}));
  EXPECT_EQ(Ints(Dataset::Range(kMax, kMin, kMin)), (std::vector<int64_t>{kMax, -1}));
  EXPECT_EQ(Dataset::Range(3).Repeat(kMax).Cardinality(), kMax);
}

// Sizes are limits, not allocations: a batch of 2^40 over ten elements, a
// shuffle buffer of 2^40 or 2^62 rows (fused with its Unbatch and Batch or
// not) over ten rows.
TEST(DatasetTest, HugeBatchAndBufferSizesHoldOnlyTheData) {
  std::vector<Element> one = Drain(Dataset::Range(10).Batch(int64_t{1} << 40));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(Values(one[0][0]), Seq(0, 10));
  for (const int64_t buffer : {int64_t{1} << 40, int64_t{1} << 62}) {
    std::vector<int64_t> rows;
    for (const Element& b : Drain(Dataset::Range(10).Batch(3).Unbatch().Shuffle(buffer, {.seed = 7}).Batch(4))) {
      for (int64_t v : Values(b[0])) rows.push_back(v);
    }
    std::sort(rows.begin(), rows.end());
    EXPECT_EQ(rows, Seq(0, 10)) << buffer;
  }
}

TEST(DatasetTest, TakeSkipRepeat) {
  EXPECT_EQ(Ints(Dataset::Range(10).Take(3)), Seq(0, 3));
  EXPECT_EQ(Ints(Dataset::Range(10).Take(-1)), Seq(0, 10));
  EXPECT_EQ(Ints(Dataset::Range(10).Skip(7)), Seq(7, 10));
  EXPECT_TRUE(Ints(Dataset::Range(10).Skip(-1)).empty());
  EXPECT_EQ(Ints(Dataset::Range(3).Repeat(2)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(Ints(Dataset::Range(3).Repeat(0)).empty());
  EXPECT_EQ(Ints(Dataset::Range(3).Repeat().Take(7)), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0}));
  // An empty dataset repeated forever ends instead of spinning.
  EXPECT_TRUE(Ints(Dataset::Range(0).Repeat()).empty());
  EXPECT_EQ(Dataset::Range(3).Repeat().Cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::Range(3).Repeat(4).Cardinality(), 12);
  EXPECT_EQ(Dataset::Range(3).Repeat().Take(5).Cardinality(), 5);
}

TEST(DatasetTest, ShardsAreDisjointAndCoverTheInput) {
  std::vector<int64_t> all;
  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> shard = Ints(Dataset::Range(10).Shard(3, i));
    for (int64_t v : shard) EXPECT_EQ(v % 3, i);
    EXPECT_EQ(static_cast<int64_t>(shard.size()), Dataset::Range(10).Shard(3, i).Cardinality());
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Seq(0, 10));
  EXPECT_EQ(Dataset::Range(10).Shard(3, 3).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset::Range(10).Shard(0, 0).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, ShuffleIsAPermutationSeededAndReshuffledPerEpoch) {
  Dataset shuffled = Dataset::Range(100).Shuffle(20, {.seed = 7});
  std::vector<int64_t> a = Ints(shuffled);
  std::vector<int64_t> b = Ints(Dataset::Range(100).Shuffle(20, {.seed = 7}));
  EXPECT_EQ(a, b);  // same seed, same order
  EXPECT_NE(a, Seq(0, 100));
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Seq(0, 100));
  // A buffer of 20 never hands out an element more than 19 places early.
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE(a[i], static_cast<int64_t>(i) + 19);
  // Repeat: each epoch a permutation, the epochs in different orders.
  std::vector<int64_t> two = Ints(Dataset::Range(50).Shuffle(50, {.seed = 3}).Repeat(2));
  ASSERT_EQ(two.size(), 100u);
  std::vector<int64_t> e0(two.begin(), two.begin() + 50), e1(two.begin() + 50, two.end());
  EXPECT_NE(e0, e1);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_EQ(e0, Seq(0, 50));
  EXPECT_EQ(e1, Seq(0, 50));
  // Without reshuffling, every epoch has the first one's order.
  std::vector<int64_t> same =
      Ints(Dataset::Range(50).Shuffle(50, {.seed = 3, .reshuffle_each_iteration = false}).Repeat(2));
  EXPECT_TRUE(std::equal(same.begin(), same.begin() + 50, same.begin() + 50));
  EXPECT_EQ(Dataset::Range(5).Shuffle(0).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, ShuffledRowsBatchedFusedGiveTheUnfusedOrder) {
  // Batch(Shuffle(Unbatch(x))) over numeric rows runs fused (rows kept in one
  // array per component); Take(-1) in between keeps it unfused. Same seed,
  // same batches, remainders and drops.
  auto rows = [] {
    // Batches of 7 rows {i, [i, i]} from Range(100), with static row shapes.
    return Dataset::Range(100).Batch(7).Map([](const Scope& s, const std::vector<Output>& x) {
      Output column = Reshape(s, x[0], std::vector<int32_t>{-1, 1});
      return std::vector<Output>{x[0], Concat(s, {column, column}, 1)};
    });
  };
  for (bool drop : {false, true}) {
    auto fused = Drain(rows().Repeat(2).Unbatch().Shuffle(30, {.seed = 8}).Batch(16, drop));
    auto plain = Drain(rows().Repeat(2).Unbatch().Shuffle(30, {.seed = 8}).Take(-1).Batch(16, drop));
    ASSERT_EQ(fused.size(), drop ? 12u : 13u);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_EQ(Values(fused[i][0]), Values(plain[i][0])) << i;
      EXPECT_EQ(Values(fused[i][1]), Values(plain[i][1])) << i;
    }
  }
  // The fused iterator is the one that ran (its state names it), and Take(-1) keeps it out.
  auto names_of = [](const Dataset& d) {
    auto it = d.MakeIterator();
    IteratorState state;
    EXPECT_TRUE(it.ok() && (*it)->Save(&state).ok());
    return state.empty() ? std::string() : std::next(state.begin())->first;
  };
  EXPECT_EQ(names_of(rows().Unbatch().Shuffle(30, {.seed = 2}).Batch(8)).rfind("/ShuffleBatch", 0), 0u);
  EXPECT_EQ(names_of(rows().Unbatch().Shuffle(30, {.seed = 2}).Take(-1).Batch(8)).rfind("/Batch", 0), 0u);
  // Without Repeat: Batch directly over the Shuffle.
  auto fused = Drain(rows().Unbatch().Shuffle(30, {.seed = 2}).Batch(8));
  auto plain = Drain(rows().Unbatch().Shuffle(30, {.seed = 2}).Take(-1).Batch(8));
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_EQ(Values(fused[i][1]), Values(plain[i][1])) << i;
  EXPECT_EQ(fused.back()[0].dim(0), 100 % 8);
}

TEST(DatasetTest, SavedStatesThatAreCutOrDamagedAreDataLossNeverACrash) {
  // An iterator state comes from a checkpoint file: every cut of a valid one,
  // and every byte of it flipped, either parses or is DataLoss; a state
  // that parses but lies restores with an error, never a crash.
  auto it = Dataset::FromTensorSlices({Tensor::Vec<std::string>({"ab", "cd", "ef"})})
                .Shuffle(3, {.seed = 1})
                .Batch(2)
                .MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  ASSERT_TRUE((*it)->GetNext(&e).ok());
  IteratorState state;
  ASSERT_TRUE((*it)->Save(&state).ok());
  const std::string bytes = SerializeIteratorState(state);
  auto parsed = ParseIteratorState(bytes);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, state);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto cut = ParseIteratorState(std::string_view(bytes).substr(0, n));
    if (!cut.ok()) {
      EXPECT_EQ(cut.status().code(), Code::kDataLoss) << n;
    }
  }
  auto fresh = [] {
    return Dataset::FromTensorSlices({Tensor::Vec<std::string>({"ab", "cd", "ef"})})
        .Shuffle(3, {.seed = 1})
        .Batch(2)
        .MakeIterator();
  };
  for (const auto& [key, value] : state) {
    for (size_t i = 0; i < value.size(); ++i) {
      IteratorState bad = state;
      bad[key][i] = static_cast<char>(bad[key][i] ^ 0x5a);
      auto restored = fresh();
      ASSERT_TRUE(restored.ok());
      if ((*restored)->Restore(bad).ok()) {
        Element out;
        Status s;
        while ((s = (*restored)->GetNext(&out)).ok()) {
        }
      }
    }
    IteratorState cut = state;
    cut[key] = cut[key].substr(0, cut[key].size() / 2);
    auto restored = fresh();
    ASSERT_TRUE(restored.ok());
    (*restored)->Restore(cut).IgnoreError();
  }
}

class DatasetFileTest : public record_test::TempDirTest {};

TEST_F(DatasetFileTest, TFRecordReadsFilesInOrderPlainAndCompressed) {
  WriteRecords(Path("a.tfrecord"), "a", 3);
  WriteRecords(Path("b.tfrecord.gz"), "b", 2, Compression::kGzip);
  EXPECT_EQ(Strings(Dataset::TFRecord({Path("a.tfrecord"), Path("b.tfrecord.gz")})),
            (std::vector<std::string>{"a0", "a1", "a2", "b0", "b1"}));
  // num_parallel_reads: one record per file in turn, as tf.data.
  EXPECT_EQ(Strings(Dataset::TFRecord({Path("a.tfrecord"), Path("b.tfrecord.gz")}, {.num_parallel_reads = 2})),
            (std::vector<std::string>{"a0", "b0", "a1", "b1", "a2"}));
  // Keyed: "<file>:<offset>" as TF1's readers key records (each record here
  // is 16 bytes of framing and 2 of data).
  auto keyed = Drain(Dataset::TFRecord({Path("a.tfrecord"), Path("b.tfrecord.gz")}, {.keys = true}));
  ASSERT_EQ(keyed.size(), 5u);
  EXPECT_EQ(keyed[1][0].scalar<std::string>(), Path("a.tfrecord") + ":18");
  EXPECT_EQ(keyed[1][1].scalar<std::string>(), "a1");
  EXPECT_EQ(keyed[4][0].scalar<std::string>(), Path("b.tfrecord.gz") + ":18");
  auto parallel = Drain(Dataset::TFRecord(Dataset::FromTensorSlices({Tensor::Vec<std::string>(
                                              {Path("a.tfrecord"), Path("b.tfrecord.gz")})}),
                                          {.num_parallel_reads = 2, .keys = true}));
  ASSERT_EQ(parallel.size(), 5u);
  EXPECT_EQ(parallel[1][0].scalar<std::string>(), Path("b.tfrecord.gz") + ":0");
  EXPECT_EQ(Dataset::TFRecord(std::vector<std::string>{}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset::TFRecord({Path("a.tfrecord")}, {.compression = "LZ4"}).status().code(), Code::kInvalidArgument);
}

TEST_F(DatasetFileTest, ACorruptRecordIsDataLossNamingFileAndOffsetOrSkipped) {
  WriteRecords(Path("c.tfrecord"), "rec", 4);
  std::string bytes = record_test::ReadFileBytes(Path("c.tfrecord"));
  const size_t second = 16 + 4;  // each record: 12-byte header, 4 bytes, 4-byte footer
  bytes[second + 12] ^= 0x55;     // the data of record 1
  record_test::WriteFileBytes(Path("c.tfrecord"), bytes);
  auto it = Dataset::TFRecord({Path("c.tfrecord")}).MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  ASSERT_TRUE((*it)->GetNext(&e).ok());
  Status s = (*it)->GetNext(&e);
  EXPECT_EQ(s.code(), Code::kDataLoss);
  EXPECT_NE(s.message().find(Path("c.tfrecord")), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("at 20"), std::string::npos) << s.ToString();
  EXPECT_EQ(Strings(Dataset::TFRecord({Path("c.tfrecord")}, {.skip_corrupt = true})),
            (std::vector<std::string>{"rec0", "rec2", "rec3"}));
}

TEST_F(DatasetFileTest, ListFilesMatchesSortedOrShuffledAndNamesAPatternWithoutMatches) {
  for (const char* f : {"x2.tfrecord", "x0.tfrecord", "x1.tfrecord", "other.txt"}) WriteRecords(Path(f), f, 1);
  EXPECT_EQ(Strings(Dataset::ListFiles(Path("x*.tfrecord"), {.shuffle = false})),
            (std::vector<std::string>{Path("x0.tfrecord"), Path("x1.tfrecord"), Path("x2.tfrecord")}));
  std::vector<std::string> shuffled = Strings(Dataset::ListFiles(Path("x*.tfrecord"), {.seed = 1}));
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled.size(), 3u);
  auto it = Dataset::ListFiles(Path("none*.tfrecord")).MakeIterator();
  EXPECT_EQ(it.status().code(), Code::kInvalidArgument);
  EXPECT_NE(it.status().message().find("No files matched pattern: " + Path("none*.tfrecord")), std::string::npos);
  // A directory that does not exist matches nothing either.
  auto missing = Dataset::ListFiles(Path("no_such_dir/*.tfrecord")).MakeIterator();
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("No files matched pattern: " + Path("no_such_dir/*.tfrecord")),
            std::string::npos);
  // TFRecord over ListFiles.
  EXPECT_EQ(Strings(Dataset::TFRecord(Dataset::ListFiles(Path("x*.tfrecord"), {.shuffle = false}))),
            (std::vector<std::string>{"x0.tfrecord0", "x1.tfrecord0", "x2.tfrecord0"}));
}

TEST_F(DatasetFileTest, CacheReplaysTheFirstCompleteIteration) {
  WriteRecords(Path("d.tfrecord"), "d", 5);
  Dataset cached = Dataset::TFRecord({Path("d.tfrecord")}).Cache();
  EXPECT_EQ(Strings(cached).size(), 5u);
  // The file changes; the cache replays what it recorded.
  WriteRecords(Path("d.tfrecord"), "new", 2);
  EXPECT_EQ(Strings(cached), (std::vector<std::string>{"d0", "d1", "d2", "d3", "d4"}));

  // A file cache outlives the dataset (another run reads it), and a partial
  // iteration leaves none behind.
  WriteRecords(Path("e.tfrecord"), "e", 4);
  const std::string cache = Path("cache.bin");
  {
    Dataset d = Dataset::TFRecord({Path("e.tfrecord")}).Cache(cache);
    auto it = d.MakeIterator();
    ASSERT_TRUE(it.ok());
    Element e;
    ASSERT_TRUE((*it)->GetNext(&e).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(cache));
  EXPECT_EQ(Strings(Dataset::TFRecord({Path("e.tfrecord")}).Cache(cache)).size(), 4u);
  EXPECT_TRUE(std::filesystem::exists(cache));
  std::filesystem::remove(Path("e.tfrecord"));
  EXPECT_EQ(Strings(Dataset::TFRecord({Path("e.tfrecord")}).Cache(cache)),
            (std::vector<std::string>{"e0", "e1", "e2", "e3"}));
}

// A partial last batch asks the cache again after its end: every epoch still
// replays the whole record, in memory and in a file.
TEST_F(DatasetFileTest, CacheUnderAPartialBatchReplaysEveryEpoch) {
  std::vector<int64_t> three;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int64_t i = 0; i < 10; ++i) three.push_back(i);
  }
  for (const std::string& file : {std::string(), Path("batched.cache")}) {
    Dataset d = Dataset::Range(10).Cache(file).Batch(4).Repeat(3).Unbatch();
    EXPECT_EQ(Ints(d), three) << file;
    EXPECT_EQ(Ints(d), three) << file << ", a second iterator";
  }
}

TEST(DatasetTest, InterleaveCyclesBlocksInTFsOrder) {
  // tf.data's documented example: Range(1, 6).interleave(lambda x:
  // Range(x).map(lambda _: x) repeated 4 times ... ; here each x gives four x's.
  DatasetFn four = [](const Element& e) -> StatusOr<Dataset> {
    return Dataset::FromTensors({e[0]}).Repeat(4);
  };
  EXPECT_EQ(Ints(Dataset::Range(1, 6).Interleave(four, {.cycle_length = 2, .block_length = 4})),
            (std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5}));
  EXPECT_EQ(Ints(Dataset::Range(1, 6).Interleave(four, {.cycle_length = 2, .block_length = 1})),
            (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 5, 5, 5, 5}));
  // Parallel and deterministic: the same order.
  EXPECT_EQ(Ints(Dataset::Range(1, 6).Interleave(four, {.cycle_length = 2, .block_length = 1,
                                                        .num_parallel_calls = 2})),
            (std::vector<int64_t>{1, 2, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 3, 4, 5, 5, 5, 5}));
  // Not deterministic: the same elements.
  std::vector<int64_t> any = Ints(Dataset::Range(1, 6).Interleave(
      four, {.cycle_length = 3, .num_parallel_calls = 3, .deterministic = false}));
  std::sort(any.begin(), any.end());
  EXPECT_EQ(any, (std::vector<int64_t>{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5}));
  // A failing function names the input element.
  auto it = Dataset::Range(1, 6)
                .Interleave([](const Element& e) -> StatusOr<Dataset> {
                  if (e[0].scalar<int64_t>() == 3) return errors::NotFound("no dataset for 3");
                  return Dataset::FromTensors({e[0]});
                })
                .MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  Status s;
  int got = 0;
  while ((s = (*it)->GetNext(&e)).ok()) ++got;
  EXPECT_EQ(got, 2);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("input element 2"), std::string::npos) << s.ToString();
}

TEST(DatasetTest, CancelStopsPipelinesWithoutThreadsToo) {
  auto it = Dataset::Range(10).Batch(2).MakeIterator();
  ASSERT_TRUE(it.ok());
  Element e;
  ASSERT_TRUE((*it)->GetNext(&e).ok());
  (*it)->Cancel();
  EXPECT_EQ((*it)->GetNext(&e).code(), Code::kCancelled);
  // An interleaved dataset's spec keeps ranks, not one element's dims.
  Dataset ragged = Dataset::Range(1, 4).FlatMap([](const Element& x) -> StatusOr<Dataset> {
    const int64_t n = x[0].scalar<int64_t>();
    return Dataset::FromTensors({Tensor::FromVector<int64_t>(std::vector<int64_t>(n, n), TensorShape{n})});
  });
  EXPECT_EQ(ragged.element_spec().DebugString(), "(int64 [-1])");
  EXPECT_EQ(Drain(ragged).size(), 3u);
}

TEST(DatasetTest, PrefetchDeliversEverythingInOrder) {
  EXPECT_EQ(Ints(Dataset::Range(1000).Prefetch(4)), Seq(0, 1000));
  EXPECT_EQ(Ints(Dataset::Range(1000).Prefetch()), Seq(0, 1000));
  EXPECT_EQ(Ints(Dataset::Range(10).Prefetch(0)), Seq(0, 10));
  EXPECT_EQ(Dataset::Range(10).Prefetch(-5).status().code(), Code::kInvalidArgument);
}

TEST(DatasetTest, ErrorsStickToTheDatasetAndNameTheTransformation) {
  Dataset d = Dataset::Range(10).Batch(-1).Shuffle(3).Prefetch();
  EXPECT_EQ(d.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(d.status().message().rfind("Batch: ", 0), 0u) << d.status().ToString();
  EXPECT_EQ(d.MakeIterator().status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset().status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(Dataset::Range(4).Batch(2).Prefetch().DebugString(), "Prefetch(Batch(Range))");
}

}  // namespace
}  // namespace tw::data
