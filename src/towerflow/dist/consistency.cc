#include "towerflow/dist/consistency.h"

#include <map>

#include "towerflow/graph/ops/state_ops.h"

namespace tw::dist {
namespace {

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> GraphFingerprint(const Graph& graph) {
  std::vector<std::string> lines;
  for (const Variable& v : GlobalVariables(graph)) {
    lines.push_back(StrCat("variable ", v.name, " ", DataTypeName(v.value.dtype()), " ", v.ref.shape().ToString()));
  }
  std::map<std::string, int> ops;
  int nodes = 0;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* n = graph.node(id);
    if (n == nullptr) continue;
    ++ops[n->op()];
    ++nodes;
  }
  for (const auto& [op, count] : ops) lines.push_back(StrCat("op ", op, ": ", count, " nodes"));
  lines.push_back(StrCat("graph: ", nodes, " nodes"));
  return lines;
}

Status CheckSameOnEveryRank(World& world, const std::vector<std::string>& lines) {
  std::string mine;
  for (const std::string& l : lines) mine += l + "\n";
  TW_ASSIGN_OR_RETURN(std::vector<std::string> all,
                      world.AllGather({.channel = Channel::kControl, .bucket = 0, .num_buckets = 1,
                                       .what = "the check that every rank built the same training"},
                                      mine));
  const std::vector<std::string> first = SplitLines(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const std::vector<std::string> other = SplitLines(all[r]);
    size_t i = 0;
    while (i < first.size() && i < other.size() && first[i] == other[i]) ++i;
    const std::string a = i < first.size() ? "'" + first[i] + "'" : "nothing more";
    const std::string b = i < other.size() ? "'" + other[i] + "'" : "nothing more";
    return errors::InvalidArgument("rank ", r, " was started differently from rank 0: rank 0 has ", a, ", rank ", r,
                                   " has ", b, "; every rank must run the same command (flags, data schema, towers)");
  }
  return Status::OK();
}

uint64_t Fingerprint64(const void* data, size_t bytes, uint64_t seed) {
  uint64_t h = seed;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string SameBatchWarning(const std::vector<std::string>& fingerprints) {
  std::map<std::string, std::vector<size_t>> ranks;
  for (size_t r = 0; r < fingerprints.size(); ++r) ranks[fingerprints[r]].push_back(r);
  std::string out;
  for (const auto& [fp, rs] : ranks) {
    if (rs.size() < 2) continue;
    std::string list;
    for (size_t i = 0; i < rs.size(); ++i) {
      list += (i == 0 ? "" : i + 1 == rs.size() ? " and " : ", ") + std::to_string(rs[i]);
    }
    out += (out.empty() ? "" : "; ") + ("ranks " + list);
  }
  if (out.empty()) return out;
  return "warning: " + out +
         " received the same first batch: they train on the same data (each rank reads its own shard of "
         "the files; identical records, or a dataset with fewer distinct records than ranks, do this too)";
}

Status CheckReplicasIdentical(const std::vector<std::string>& fingerprints, const std::vector<std::string>& names,
                              int64_t step) {
  for (size_t r = 1; r < fingerprints.size(); ++r) {
    if (fingerprints[r] == fingerprints[0]) continue;
    size_t k = 0;
    while ((k + 1) * 8 <= fingerprints[0].size() && (k + 1) * 8 <= fingerprints[r].size() &&
           fingerprints[0].compare(k * 8, 8, fingerprints[r], k * 8, 8) == 0) {
      ++k;
    }
    return errors::Internal("the replicas drifted apart: at step ", step, " rank ", r, "'s variable '",
                            k < names.size() ? names[k] : std::string("?"),
                            "' differs from rank 0's (the cross-process mean must give every rank the same bits)");
  }
  return Status::OK();
}

}  // namespace tw::dist
