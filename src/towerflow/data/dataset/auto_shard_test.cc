// AutoShard: every shard's elements together are the pipeline's, each once,
// whatever each shard's seeds, for each way it splits (a source's elements or
// files, the records of each file, elements at the end); positions saved
// mid-way continue as uninterrupted; and Interleave's spec probe no longer
// uses up an iteration of a Shuffle or ListFiles below it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "towerflow/data/dataset.h"
#include "towerflow/data/dataset/dataset_test_util.h"
#include "towerflow/data/record_test_util.h"

namespace tw::data {
namespace {

using testing::Drain;
using testing::Ints;
using testing::Seq;
using testing::Strings;
using testing::WriteRecords;

// The elements of every shard of `make(shard)`, each shard's own list.
template <typename T, typename Make>
std::vector<std::vector<T>> Shards(int count, const Make& make) {
  std::vector<std::vector<T>> out;
  for (int i = 0; i < count; ++i) {
    const Dataset d = make(i).AutoShard(count, i);
    if constexpr (std::is_same_v<T, int64_t>) {
      out.push_back(Ints(d));
    } else {
      out.push_back(Strings(d));
    }
  }
  return out;
}

template <typename T>
std::vector<T> Union(const std::vector<std::vector<T>>& shards) {
  std::vector<T> all;
  for (const auto& s : shards) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  return all;
}

TEST(AutoShardTest, ASourceWithEnoughElementsIsSplitBeforeAnyShuffle) {
  // Each shard shuffles with a seed of its own: split after the shuffle, the
  // shards would overlap.
  const auto shards = Shards<int64_t>(3, [](int i) {
    return Dataset::Range(10).Shuffle(10, {.seed = 100 + i}).Batch(2).Unbatch();
  });
  EXPECT_EQ(Union(shards), Seq(0, 10));
  EXPECT_EQ(shards[0].size(), 4u);
  EXPECT_EQ(shards[2].size(), 3u);
  // FromTensorSlices too; one shard is the whole.
  Tensor t = Tensor::FromVector<int64_t>({5, 6, 7, 8}, TensorShape{4});
  EXPECT_EQ(Ints(Dataset::FromTensorSlices({t}).AutoShard(2, 1)), (std::vector<int64_t>{6, 8}));
  EXPECT_EQ(Ints(Dataset::Range(4).AutoShard(1, 0)), Seq(0, 4));
  // Made again by a Repeat above it: the same split every epoch.
  EXPECT_EQ(Ints(Dataset::Range(6).AutoShard(2, 1).Repeat(2)), (std::vector<int64_t>{1, 3, 5, 1, 3, 5}));
}

TEST(AutoShardTest, FewerElementsThanShardsAndNoRecordsSplitAtTheEnd) {
  // Two inputs for three shards, and the function's datasets are not records:
  // element k of the whole goes to shard k % 3.
  auto make = [](int) {
    return Dataset::Range(2).FlatMap([](const Element& e) -> StatusOr<Dataset> {
      const int64_t x = e[0].scalar<int64_t>();
      return Dataset::Range(10 * x, 10 * x + 5);
    });
  };
  const auto shards = Shards<int64_t>(3, make);
  // The whole: 0 1 2 3 4 10 11 12 13 14.
  EXPECT_EQ(shards[0], (std::vector<int64_t>{0, 3, 11, 14}));
  EXPECT_EQ(shards[1], (std::vector<int64_t>{1, 4, 12}));
  EXPECT_EQ(shards[2], (std::vector<int64_t>{2, 10, 13}));
}

TEST(AutoShardTest, ArgumentsAndASecondAutoShardAreErrors) {
  EXPECT_EQ(Dataset::Range(4).AutoShard(0, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset::Range(4).AutoShard(2, 2).status().code(), Code::kInvalidArgument);
  auto twice = Dataset::Range(4).AutoShard(2, 0).AutoShard(2, 1).MakeIterator();
  EXPECT_EQ(twice.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(twice.status().message().find("split once"), std::string::npos) << twice.status().ToString();
}

TEST(AutoShardTest, InterleavesSpecProbeLeavesTheFirstIterationAlone) {
  // Before the probe kept its hands off, FlatMap's first epoch drew the
  // shuffle's second order.
  const auto shuffled = [] { return Dataset::Range(20).Shuffle(20, {.seed = 3}); };
  const Dataset flat = shuffled().FlatMap([](const Element& e) -> StatusOr<Dataset> {
    return Dataset::FromTensors(e);
  });
  EXPECT_EQ(Ints(flat), Ints(shuffled()));
}

class AutoShardFileTest : public record_test::TempDirTest {
 protected:
  // Files f0..f(n-1), file i holding records "f<i>_<k>" for k < records.
  std::vector<std::string> Files(int n, int records) {
    std::vector<std::string> files;
    for (int i = 0; i < n; ++i) {
      files.push_back(Path("f" + std::to_string(i) + ".tfrecord"));
      WriteRecords(files.back(), "f" + std::to_string(i) + "_", records);
    }
    return files;
  }
  std::vector<std::string> AllRecords(int n, int records) {
    std::vector<std::string> all;
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < records; ++k) all.push_back("f" + std::to_string(i) + "_" + std::to_string(k));
    }
    std::sort(all.begin(), all.end());
    return all;
  }
};

TEST_F(AutoShardFileTest, EnoughFilesSplitTheFiles) {
  const std::vector<std::string> files = Files(4, 3);
  const auto shards = Shards<std::string>(2, [&](int) { return Dataset::TFRecord(files); });
  EXPECT_EQ(shards[0], (std::vector<std::string>{"f0_0", "f0_1", "f0_2", "f2_0", "f2_1", "f2_2"}));
  EXPECT_EQ(Union(shards), AllRecords(4, 3));
  // ListFiles shuffled with each shard's seed, its files read by Interleave.
  const auto listed = Shards<std::string>(3, [&](int i) {
    return Dataset::ListFiles(Path("f*.tfrecord"), {.seed = 7 + i})
        .Interleave([](const Element& e) -> StatusOr<Dataset> {
          return Dataset::TFRecord(std::vector<std::string>{e[0].scalar<std::string>()});
        }, {.cycle_length = 2});
  });
  EXPECT_EQ(Union(listed), AllRecords(4, 3));
  EXPECT_EQ(listed[2].size(), 3u) << "one file of four";
}

TEST_F(AutoShardFileTest, FewerFilesThanShardsSplitEachFilesRecords) {
  const std::vector<std::string> files = Files(2, 7);
  const auto direct = Shards<std::string>(3, [&](int) { return Dataset::TFRecord(files); });
  EXPECT_EQ(direct[1], (std::vector<std::string>{"f0_1", "f0_4", "f1_1", "f1_4"}));
  EXPECT_EQ(Union(direct), AllRecords(2, 7));
  // The pipeline `towerflow train` builds: names shuffled per shard, two
  // epochs, files read by a parallel Interleave, records shuffled per shard.
  auto pipeline = [&](int i) {
    Tensor names(kString, TensorShape{2});
    for (int f = 0; f < 2; ++f) names.flat<std::string>()[f] = files[static_cast<size_t>(f)];
    return Dataset::FromTensorSlices({names})
        .Shuffle(2, {.seed = 11 + i})
        .Repeat(2)
        .Interleave([](const Element& e) -> StatusOr<Dataset> {
          return Dataset::TFRecord(std::vector<std::string>{e[0].scalar<std::string>()});
        }, {.cycle_length = 2, .num_parallel_calls = 2})
        .Shuffle(5, {.seed = 21 + i});
  };
  const auto shards = Shards<std::string>(3, pipeline);
  const std::vector<std::string> once = AllRecords(2, 7);
  std::vector<std::string> twice = once;
  twice.insert(twice.end(), once.begin(), once.end());
  std::sort(twice.begin(), twice.end());
  EXPECT_EQ(Union(shards), twice) << "every record twice in two epochs, across the shards";
  for (int i = 0; i < 3; ++i) {
    for (const std::string& r : shards[static_cast<size_t>(i)]) {
      EXPECT_EQ(std::stoi(r.substr(r.find('_') + 1)) % 3, i) << r;
    }
  }
}

TEST_F(AutoShardFileTest, APositionSavedMidwayContinuesAsUninterrupted) {
  const std::vector<std::string> files = Files(2, 9);
  Tensor names(kString, TensorShape{2});
  for (int f = 0; f < 2; ++f) names.flat<std::string>()[f] = files[static_cast<size_t>(f)];
  auto records = [&] {
    return Dataset::FromTensorSlices({names}).FlatMap([](const Element& e) -> StatusOr<Dataset> {
      return Dataset::TFRecord(std::vector<std::string>{e[0].scalar<std::string>()});
    });
  };
  auto elements = [] {
    return Dataset::Range(3).FlatMap([](const Element& e) -> StatusOr<Dataset> {
      return Dataset::Range(4).Take(e[0].scalar<int64_t>() + 2);
    });
  };
  // Each iterator of a reshuffling Shuffle draws another order: this one keeps one.
  const Dataset shuffled = Dataset::Range(9).Shuffle(9, {.seed = 1, .reshuffle_each_iteration = false});
  for (const Dataset& whole : {records().AutoShard(3, 1), elements().AutoShard(4, 3), shuffled.AutoShard(2, 0)}) {
    SCOPED_TRACE(whole.DebugString());
    const std::vector<Element> expected = Drain(whole);
    ASSERT_GE(expected.size(), 2u);
    for (size_t cut = 1; cut < expected.size(); ++cut) {
      auto first = whole.MakeIterator();
      ASSERT_TRUE(first.ok());
      Element e;
      for (size_t k = 0; k < cut; ++k) ASSERT_TRUE((*first)->GetNext(&e).ok());
      IteratorState state;
      ASSERT_TRUE((*first)->Save(&state).ok());
      auto second = whole.MakeIterator();
      ASSERT_TRUE(second.ok());
      ASSERT_TRUE((*second)->Restore(state).ok());
      const std::vector<Element> rest = Drain(**second);
      ASSERT_EQ(rest.size(), expected.size() - cut) << "cut at " << cut;
      for (size_t k = 0; k < rest.size(); ++k) {
        EXPECT_EQ(rest[k][0].DebugString(), expected[cut + k][0].DebugString()) << "cut at " << cut;
      }
    }
  }
}

}  // namespace
}  // namespace tw::data
