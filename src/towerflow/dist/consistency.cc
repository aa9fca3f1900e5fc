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

}  // namespace tw::dist
