#include "towerflow/device/placer_colocation.h"

#include <algorithm>

#include "towerflow/core/logging.h"

namespace tw::placer_internal {

std::string JoinTypes(const std::vector<std::string>& types) {
  std::string out;
  for (const std::string& t : types) out += (out.empty() ? "" : " ") + t;
  return out;
}

ColocationGraph::ColocationGraph(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels,
                                 const std::vector<NodePlacement>& earlier, const PlacerOptions& options)
    : graph_(graph),
      devices_(devices),
      kernels_(kernels),
      earlier_(earlier),
      options_(options),
      members_(static_cast<size_t>(graph.num_nodes())) {
  for (size_t i = 0; i < members_.size(); ++i) {
    Member& m = members_[i];
    m.parent = static_cast<int>(i);
    m.members = {static_cast<int>(i)};
    if (i < earlier_.size()) {
      // Placed in an earlier run: the node's device is settled.
      const NodePlacement& p = earlier_[i];
      m.fixed = p.device;
      m.group_status = p.status;
      if (p.device != nullptr) {
        m.types = {p.device->device_type()};
        m.spec = p.device->spec();
      }
      m.group_types = m.types;
    }
  }
}

void ColocationGraph::AddNewNodes(int first_new) {
  for (int id = first_new; id < graph_.num_nodes(); ++id) {
    const Node& node = *graph_.node(id);
    Member& m = member(id);
    m.is_new = true;
    if (!node.requested_device().empty()) {
      StatusOr<DeviceSpec> spec = DeviceSpec::Parse(node.requested_device());
      if (!spec.ok()) {
        m.status = errors::InvalidArgument("Cannot assign a device for operation '", node.name(), "': ",
                                           spec.status().message());
      } else {
        m.has_request = !spec->empty();
        m.request = *spec;
        m.spec = *spec;
      }
    }
    for (const std::string& type : kernels_.SupportedDeviceTypes(node)) {
      if (devices_.HasType(type)) m.types.push_back(type);
    }
    std::stable_sort(m.types.begin(), m.types.end(), [this](const std::string& a, const std::string& b) {
      return devices_.Priority(a) > devices_.Priority(b);
    });
    if (m.types.empty() && m.status.ok()) {
      // TF's text (InvalidArgument there; Unimplemented here: "no kernel").
      std::string attrs;
      for (const auto& [name, value] : node.attrs().values()) {
        if (std::holds_alternative<DataType>(value)) attrs += "; " + name + "=" + AttrValueToString(value);
      }
      m.status = errors::Unimplemented("No OpKernel was registered to support Op '", node.op(), "' used by node ",
                                       node.DebugName(), " with these attrs: [",
                                       attrs.empty() ? "" : attrs.substr(2), "]. Registered devices: ",
                                       devices_.DescribeTypes(), ", Registered kernels:",
                                       kernels_.DescribeKernels(node.op()));
    }
    m.group_types = m.types;
    m.group_status = m.status;
  }
}

int ColocationGraph::Find(int id) {
  int root = id;
  while (member(root).parent != root) root = member(root).parent;
  while (member(id).parent != root) {  // path compression
    int next = member(id).parent;
    member(id).parent = root;
    id = next;
  }
  return root;
}

std::vector<std::string> ColocationGraph::Intersect(const std::vector<std::string>& a,
                                                    const std::vector<std::string>& b) const {
  std::vector<std::string> out;
  for (const std::string& t : a) {
    if (std::find(b.begin(), b.end(), t) != b.end()) out.push_back(t);
  }
  return out;
}

void ColocationGraph::Merge(int a, int b, const DeviceSpec& spec, const Status& merge_status) {
  int ra = Find(a), rb = Find(b);
  if (ra == rb) return;
  Member& x = member(ra);
  Member& y = member(rb);
  std::vector<std::string> types = Intersect(x.group_types, y.group_types);
  Status status = !x.group_status.ok() ? x.group_status : !y.group_status.ok() ? y.group_status : merge_status;
  if (status.ok() && x.fixed != nullptr && y.fixed != nullptr && x.fixed != y.fixed) {
    status = errors::InvalidArgument("Cannot colocate nodes '", graph_.node(a)->name(), "' and '",
                                     graph_.node(b)->name(), "': they were placed earlier on ", x.fixed->name(),
                                     " and ", y.fixed->name());
  }
  if (status.ok() && types.empty()) {
    status = errors::InvalidArgument("Cannot colocate nodes '", graph_.node(a)->name(), "' and '",
                                     graph_.node(b)->name(),
                                     "' because no device type supports both of those nodes and the other "
                                     "nodes colocated with them.");
  }
  Device* fixed = x.fixed != nullptr ? x.fixed : y.fixed;
  std::vector<int> members;
  std::merge(x.members.begin(), x.members.end(), y.members.begin(), y.members.end(), std::back_inserter(members));
  // Union by rank; the surviving root takes the merged group state.
  int root = ra, child = rb;
  if (x.rank < y.rank) std::swap(root, child);
  if (x.rank == y.rank) ++member(root).rank;
  member(child).parent = root;
  member(child).members.clear();
  member(child).group_types.clear();
  Member& r = member(root);
  r.spec = spec;
  r.group_types = std::move(types);
  r.fixed = fixed;
  r.group_status = status;
  r.members = std::move(members);
}

void ColocationGraph::ColocateByAttrs(int first_new) {
  for (int id = first_new; id < graph_.num_nodes(); ++id) {
    const Node& node = *graph_.node(id);
    for (const std::string& cls : node.colocation_groups()) {
      const std::string prefix = "loc:@";
      if (cls.rfind(prefix, 0) != 0) continue;  // other _class values say nothing about placement
      const std::string name = cls.substr(prefix.size());
      const Node* target = graph_.FindNode(name);
      if (target == nullptr) {
        Member& m = member(id);
        Status s = errors::InvalidArgument("Cannot assign a device for operation '", node.name(),
                                           "': it is colocated with '", name, "' (", cls,
                                           "), which is not a node of the graph");
        if (m.status.ok()) m.status = s;
        Member& root = member(Find(id));
        if (root.group_status.ok()) root.group_status = s;
        continue;
      }
      if (target == &node) continue;
      const std::string link = "colocation group " + cls;
      if (member(id).link.empty()) member(id).link = link;
      if (member(target->id()).is_new && member(target->id()).link.empty()) member(target->id()).link = link;
      const int ra = Find(id), rb = Find(target->id());
      if (ra == rb) continue;
      // A group placed earlier keeps its device: its spec is that device.
      DeviceSpec spec = member(ra).fixed ? member(ra).spec : member(rb).spec;
      Status merge_status;
      if (!member(ra).fixed && !member(rb).fixed) {
        spec = member(ra).spec;
        Status s = spec.MergeFrom(member(rb).spec, options_.allow_soft_placement);
        if (!s.ok()) {
          merge_status = errors::InvalidArgument("Cannot colocate nodes '", node.name(), "' and '", target->name(),
                                                 "': ", s.message());
        }
      }
      Merge(id, target->id(), spec, merge_status);
    }
  }
}

void ColocationGraph::ColocateByRefEdges(int first_new) {
  for (int id = first_new; id < graph_.num_nodes(); ++id) {
    const Node& dst = *graph_.node(id);
    for (int i = 0; i < dst.num_inputs(); ++i) {
      if (!dst.input_is_ref(i)) continue;
      const Node& src = *dst.input(i).node;
      // A ref edge is the stronger reason: it names the variable itself.
      Member& dm = member(id);
      if (dm.link.empty() || dm.link.rfind("colocation group", 0) == 0) {
        dm.link = "colocated with '" + src.name() + "' (ref edge)";
      }
      Member& sm = member(src.id());
      if (sm.is_new && sm.link.empty()) sm.link = "colocated with '" + dst.name() + "' (ref edge)";
      const int rs = Find(src.id()), rd = Find(id);
      if (rs == rd) continue;
      Member& s_root = member(rs);
      Member& d_root = member(rd);
      DeviceSpec spec;
      if (s_root.fixed || d_root.fixed) {
        spec = s_root.fixed ? s_root.spec : d_root.spec;
      } else if (!s_root.spec.empty() && !d_root.spec.empty() && !s_root.spec.IsCompatibleWith(d_root.spec)) {
        // TF: the reference edge forces the consumer onto the variable's
        // device; the consumer side's request is ignored.
        spec = s_root.spec;
        if (options_.log_device_placement) {
          TW_LOG(INFO) << "Ignoring device specification " << d_root.spec.ToString() << " for node '" << dst.name()
                       << "' because the input edge from '" << src.name()
                       << "' is a reference connection and already has a device field set to "
                       << s_root.spec.ToString();
        }
      } else {
        spec = s_root.spec;
        spec.MergeFrom(d_root.spec).IgnoreError();  // compatible: cannot fail
      }
      // Members of the consumer's side whose requests the merged spec overrides.
      if (d_root.fixed == nullptr) {
        for (int m : d_root.members) {
          Member& mm = member(m);
          if (mm.is_new && mm.has_request && !mm.request.IsCompatibleWith(spec)) mm.request_ignored = true;
        }
      }
      Merge(src.id(), id, spec, Status::OK());
    }
  }
}

std::vector<int> ColocationGraph::NewGroups() {
  std::vector<int> roots;
  std::vector<char> seen(members_.size(), 0);
  for (size_t id = 0; id < members_.size(); ++id) {
    if (!members_[id].is_new) continue;
    const int root = Find(static_cast<int>(id));
    if (!seen[static_cast<size_t>(root)]) {
      seen[static_cast<size_t>(root)] = 1;
      roots.push_back(root);
    }
  }
  return roots;
}

}  // namespace tw::placer_internal
