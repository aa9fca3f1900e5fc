// Checks, when a job starts, that every rank built the same training: a rank
// started with other flags (another --hidden, more towers, another model)
// would otherwise hang in a collective of another size or diverge in silence.
#ifndef TOWERFLOW_DIST_CONSISTENCY_H_
#define TOWERFLOW_DIST_CONSISTENCY_H_

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

}  // namespace tw::dist

#endif  // TOWERFLOW_DIST_CONSISTENCY_H_
