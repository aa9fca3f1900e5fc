// Checks, when a job starts, that every rank built the same training: a rank
// started with other flags (another --hidden, more towers, another model)
// would otherwise hang in a collective of another size or diverge in silence.
#ifndef TOWERFLOW_DIST_CONSISTENCY_H_
#define TOWERFLOW_DIST_CONSISTENCY_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/dist/world.h"
#include "towerflow/graph/graph.h"

namespace tw::dist {

// What must be equal on every rank, one fact per line: every global
// variable's name, dtype and shape, the number of nodes of each op, and the
// total. Seeds and devices' placement are not part of it.
std::vector<std::string> GraphFingerprint(const Graph& graph);

// Gathers every rank's `lines` (on the control channel) and compares them
// with rank 0's. InvalidArgument naming the first rank and line that differ
// ("rank 1 was started differently from rank 0: rank 0 has 'variable
// hidden1/kernel float [784,256]', rank 1 has 'variable hidden1/kernel float
// [784,128]'"), the same on every rank; the world's error when gathering fails.
Status CheckSameOnEveryRank(World& world, const std::vector<std::string>& lines);

// A 64-bit FNV-1a hash of `bytes` (fingerprints of batches and variables,
// compared between ranks).
uint64_t Fingerprint64(const void* data, size_t bytes, uint64_t seed = 0xcbf29ce484222325ull);

// Given every rank's fingerprint of its first batch (AllGather order), the
// warning to print when two or more ranks got the same batch ("ranks 0 and 2
// received the same first batch: ..."), else "".
std::string SameBatchWarning(const std::vector<std::string>& fingerprints);

// Given every rank's fingerprints of its variables (one 8-byte Fingerprint64
// per variable, in `names` order), Internal naming the first rank and
// variable that differ from rank 0's, else OK: the replicas have not drifted.
Status CheckReplicasIdentical(const std::vector<std::string>& fingerprints, const std::vector<std::string>& names,
                              int64_t step);

}  // namespace tw::dist

#pragma GCC visibility pop

#endif  // TOWERFLOW_DIST_CONSISTENCY_H_
