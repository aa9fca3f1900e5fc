// How the ranks of a job split their input, so that no two train on the same
// records (the seed's pitfall, between processes): whole files when there are
// at least as many files as ranks, else records by index within each file.
#ifndef TOWERFLOW_DIST_SHARDING_H_
#define TOWERFLOW_DIST_SHARDING_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/data/dataset.h"

namespace tw::dist {

struct InputShard {
  std::vector<std::string> files;  // the files this rank reads
  // Of each file, the records whose index is record_shard_index modulo
  // record_shard_count (io::TFRecordReaderOptions' shard_count, shard_index).
  int64_t record_shard_count = 1;
  int64_t record_shard_index = 0;
};

// files[i] for every i with i % size == rank when files.size() >= size (a rank
// then reads whole files; some ranks read one more file than others when size
// does not divide the count); otherwise every file, each rank keeping record
// index % size == rank. REQUIRES: 0 <= rank < size.
InputShard ShardInput(const std::vector<std::string>& files, int rank, int size);

// This process's part of `dataset` in the job: dataset.AutoShard(size, rank)
// of the current World (world.h), so that no two ranks read the same
// element: the source's files (or elements) split by rank where there are at
// least as many as ranks, else each file's records by index (the same split
// as ShardInput), else elements by index. Without a world (one process), the
// dataset itself. Apply it last (before Prefetch), after World::Start.
data::Dataset DistributeDataset(const data::Dataset& dataset);

// A seed for `rank` derived from `seed` (SplitMix64): shuffling and dropout
// differ between ranks, the same for the same seed and rank. Rank 0 keeps
// `seed` itself, so a one-process run is unchanged.
int64_t RankSeed(int64_t seed, int rank);

}  // namespace tw::dist

#pragma GCC visibility pop

#endif  // TOWERFLOW_DIST_SHARDING_H_
