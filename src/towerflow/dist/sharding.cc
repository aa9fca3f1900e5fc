#include "towerflow/dist/sharding.h"

#include "towerflow/dist/world.h"

namespace tw::dist {

InputShard ShardInput(const std::vector<std::string>& files, int rank, int size) {
  InputShard shard;
  if (size <= 1) {
    shard.files = files;
    return shard;
  }
  if (files.size() >= static_cast<size_t>(size)) {
    for (size_t i = static_cast<size_t>(rank); i < files.size(); i += static_cast<size_t>(size)) {
      shard.files.push_back(files[i]);
    }
    return shard;
  }
  shard.files = files;
  shard.record_shard_count = size;
  shard.record_shard_index = rank;
  return shard;
}

data::Dataset DistributeDataset(const data::Dataset& dataset) {
  const World* world = World::Current();
  if (world == nullptr || world->size() <= 1) return dataset;
  return dataset.AutoShard(world->size(), world->rank());
}

int64_t RankSeed(int64_t seed, int rank) {
  if (rank == 0) return seed;
  uint64_t z = static_cast<uint64_t>(seed) + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(rank);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 1);  // non-negative, as a seed given on the command line
}

}  // namespace tw::dist
