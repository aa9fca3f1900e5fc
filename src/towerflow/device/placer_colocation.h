// Internal to the placer (placer.cc): the "explicit" and "colocation" passes.
//
// ColocationGraph keeps one Member per node of the graph: what the node asked
// for and which device types can run it, and, union-find style, the group it
// belongs to with the group's merged request, the intersection of its members'
// device types and, when a member was placed in an earlier run, that member's
// device. Nodes placed earlier keep their device; only new nodes are parsed and
// linked (an earlier node enters a group through a new node's edge). Not
// thread-safe; one per Placer::Run.
#ifndef TOWERFLOW_DEVICE_PLACER_COLOCATION_H_
#define TOWERFLOW_DEVICE_PLACER_COLOCATION_H_

#include <string>
#include <vector>

#include "towerflow/device/placer.h"

namespace tw::placer_internal {

struct Member {
  // Per node.
  bool is_new = false;           // placed by this run
  bool has_request = false;      // the node asked for a device
  DeviceSpec request;            // ... parsed
  bool request_ignored = false;  // overridden through a ref edge (TF's "Ignoring device specification")
  std::string link;              // how the node joined its group: "colocated with 'v' (ref edge)"
  std::vector<std::string> types;  // device types present with a kernel for the node, by priority
  Status status;                 // the node's own failure: malformed request, no kernel anywhere

  // Per group, valid at the root.
  int parent = 0;
  int rank = 0;
  DeviceSpec spec;                       // the merged request
  std::vector<std::string> group_types;  // intersection of the members' types
  Device* fixed = nullptr;               // device of a member placed earlier
  Status group_status;                   // colocation failure of the group
  std::vector<int> members;              // node ids, ascending
};

class ColocationGraph {
 public:
  ColocationGraph(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels,
                  const std::vector<NodePlacement>& earlier, const PlacerOptions& options);

  // Pass "explicit": parses the requests of the nodes from `first_new` on and
  // finds the device types that can run them.
  void AddNewNodes(int first_new);
  // Pass "colocation": "loc:@name" attrs first, then ref edges, as TF.
  void ColocateByAttrs(int first_new);
  void ColocateByRefEdges(int first_new);

  int Find(int id);
  Member& member(int id) { return members_[static_cast<size_t>(id)]; }
  // Roots of the groups that have a new member, ascending by root's first member.
  std::vector<int> NewGroups();

 private:
  // Merges the groups of a and b with the group spec `spec` (already merged by
  // the caller) and `merge_status` (OK, or why the requests conflict).
  void Merge(int a, int b, const DeviceSpec& spec, const Status& merge_status);
  std::vector<std::string> Intersect(const std::vector<std::string>& a, const std::vector<std::string>& b) const;

  const Graph& graph_;
  const DeviceSet& devices_;
  const KernelRegistry& kernels_;
  const std::vector<NodePlacement>& earlier_;
  PlacerOptions options_;
  std::vector<Member> members_;
};

// "[CPU, GPU]"-style list of a node's kernels on the types present.
std::string JoinTypes(const std::vector<std::string>& types);

}  // namespace tw::placer_internal

#endif  // TOWERFLOW_DEVICE_PLACER_COLOCATION_H_
