// The placer's driver and its "default" and "soft" passes; the "explicit" and
// "colocation" passes are in placer_colocation.cc.
#include "towerflow/device/placer.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "towerflow/device/placer_colocation.h"

namespace tw {

using placer_internal::ColocationGraph;
using placer_internal::Member;

std::string Placement::device_name(const Node& node) const {
  Device* d = device(node);
  return d ? d->name() : std::string();
}

std::string Placement::reason(const Node& node) const {
  const NodePlacement* p = Find(node);
  return p ? p->reason : std::string();
}

std::string Placement::LogLine(const Node& node, bool with_reason) const {
  std::string line = node.name() + ": (" + node.op() + "): " + device_name(node);
  if (with_reason) line += " [" + reason(node) + "]";
  return line;
}

Placer::Placer(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels, PlacerOptions options)
    : graph_(graph), devices_(devices), kernels_(kernels), options_(options) {}

namespace {

bool HasString(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool HasDevice(const std::vector<Device*>& v, Device* d) { return std::find(v.begin(), v.end(), d) != v.end(); }

// One group's assignment; the state Run shares between its helpers.
class GroupAssigner {
 public:
  GroupAssigner(const Graph& graph, const DeviceSet& devices, const KernelRegistry& kernels,
                const PlacerOptions& options, ColocationGraph& cg, std::vector<NodePlacement>& out)
      : graph_(graph), devices_(devices), kernels_(kernels), options_(options), cg_(cg), out_(out) {}

  // A node with no inputs and one value output, alone in its group: TF places
  // such "generators" after the others, with their consumers.
  bool IsGenerator(int root) {
    const Member& g = cg_.member(root);
    if (g.members.size() != 1 || !g.group_status.ok()) return false;
    const Node& n = *graph_.node(g.members[0]);
    return n.num_inputs() == 0 && n.num_outputs() == 1 && !n.output_is_ref(0);
  }

  void Assign(int root, bool generator) {
    Member& g = cg_.member(root);
    std::vector<int> fresh;
    for (int m : g.members) {
      if (cg_.member(m).is_new) fresh.push_back(m);
    }
    if (!g.group_status.ok()) {
      for (int m : fresh) {
        const Status& own = cg_.member(m).status;
        out(m).status = own.ok() ? g.group_status : own;
      }
      return;
    }
    if (g.fixed != nullptr) return AssignToFixed(g, fresh);

    // Pass "explicit": the devices the group's merged request matches that can
    // run every member; pass "soft": failing that, any device of the same
    // job/replica/task that can.
    std::vector<Device*> candidates;
    std::string soft_why;
    if (!g.spec.empty()) {
      const std::vector<Device*> matching = devices_.FindMatchingDevices(g.spec);
      candidates = Supported(matching, g.group_types);
      if (candidates.empty() && options_.allow_soft_placement) {
        DeviceSpec soft = g.spec;
        soft.clear_type();
        soft.clear_id();
        candidates = Supported(devices_.FindMatchingDevices(soft), g.group_types);
        soft_why = matching.empty() ? g.spec.ToString() + " does not exist" : MissingKernel(g);
      }
      if (candidates.empty()) {
        for (int m : fresh) out(m).status = ExplicitError(g, m);
        return;
      }
    } else {
      candidates = Supported(devices_.FindMatchingDevices(DeviceSpec()), g.group_types);
      if (candidates.empty()) {  // cannot happen: group_types only lists present types
        for (int m : fresh) {
          out(m).status = errors::Internal("no device for ", graph_.node(m)->DebugName());
        }
        return;
      }
    }
    Device* chosen = candidates.front();
    std::string generator_reason;
    if (generator) {
      const Node& n = *graph_.node(g.members[0]);
      if (Device* hint = ConsumersDevice(n); hint != nullptr && HasDevice(candidates, hint)) {
        chosen = hint;
        generator_reason = "default: placed with its consumer '" + graph_.consumers(&n).front()->name() +
                           "' (a generator, as TF's heuristic A)";
      }
    }
    for (int m : fresh) {
      NodePlacement& p = out(m);
      p.device = chosen;
      if (!soft_why.empty()) {
        p.reason = "soft placement: " + soft_why + ", moved to " + chosen->short_name();
      } else if (!generator_reason.empty()) {
        p.reason = generator_reason;
      } else if (!g.spec.empty()) {
        p.reason = ExplicitReason(g, m);
      } else {
        const Member& mm = cg_.member(m);
        p.reason = g.members.size() > 1 && !mm.link.empty() ? mm.link + ", group " + DefaultReason(chosen)
                                                            : DefaultReason(chosen);
      }
    }
  }

 private:
  NodePlacement& out(int id) { return out_[static_cast<size_t>(id)]; }

  std::vector<Device*> Supported(const std::vector<Device*>& devices, const std::vector<std::string>& types) {
    std::vector<Device*> out;
    for (Device* d : devices) {
      if (HasString(types, d->device_type())) out.push_back(d);
    }
    return out;
  }

  // The device all of n's consumers are on; nullptr when they differ, one is not
  // placed yet, or there are none.
  Device* ConsumersDevice(const Node& n) {
    Device* common = nullptr;
    for (const Node* c : graph_.consumers(&n)) {
      Device* d = c->id() < static_cast<int>(out_.size()) ? out(c->id()).device : nullptr;
      if (d == nullptr || (common != nullptr && d != common)) return nullptr;
      common = d;
    }
    return common;
  }

  std::string DefaultReason(const Device* d) const {
    if (d->device_type() == kDeviceGpu) return "default: GPU has a kernel (lowest id GPU)";
    if (d->device_type() == kDeviceCpu) {
      return devices_.HasType(kDeviceGpu) ? "default: no GPU kernel, CPU" : "default: CPU (no GPU device)";
    }
    return "default: " + d->device_type() + " (the highest-priority device type with a kernel)";
  }

  std::string ExplicitReason(const Member& g, int m) const {
    const Member& mm = cg_.member(m);
    const std::string& req = graph_.node(m)->requested_device();
    if (mm.has_request && !mm.request_ignored && (mm.request == g.spec || mm.link.empty())) {
      return "explicit request " + req;
    }
    std::string reason = mm.link.empty() ? "explicit request " + g.spec.ToString() : mm.link;
    if (mm.request_ignored) reason += "; its request " + req + " was ignored (ref edge)";
    return reason;
  }

  // "no GPU kernel for DecodeRaw": the first member that cannot run on the
  // requested type.
  std::string MissingKernel(const Member& g) const {
    if (!g.spec.has_type()) return "no device matching " + g.spec.ToString() + " has a kernel for the group";
    for (int m : g.members) {
      if (!HasString(cg_.member(m).types, g.spec.type())) {
        return "no " + g.spec.type() + " kernel for " + graph_.node(m)->op();
      }
    }
    return "no " + g.spec.type() + " kernel for the group";
  }

  // TF's placer texts for a request no device satisfies, wrapped as Placer::Run
  // wraps them.
  Status ExplicitError(const Member& g, int m) const {
    const Node& node = *graph_.node(m);
    const Member& mm = cg_.member(m);
    // A member that asked for nothing reports the group's request.
    const std::string req = mm.has_request && !mm.request_ignored ? node.requested_device() : g.spec.ToString();
    StatusOr<DeviceSpec> specified = DeviceSpec::Parse(req);
    std::string msg;
    if (specified.ok() && *specified == g.spec) {
      if (devices_.FindMatchingDevices(*specified).empty()) {
        msg = "Operation was explicitly assigned to " + req + " but available devices are " +
              devices_.DescribeDevices() + ". Make sure the device specification refers to a valid device.";
      } else if (specified->has_type()) {
        msg = "Could not satisfy explicit device specification '" + req + "' because no supported kernel for " +
              specified->type() + " devices is available." + DebugInfo(g, node);
      } else {
        msg = "Could not satisfy explicit device specification '" + req + "'" + DebugInfo(g, node);
      }
    } else {
      msg = "Could not satisfy explicit device specification '" + req +
            "' because the node was colocated with a group of nodes that required incompatible device '" +
            g.spec.ToString() + "'" + DebugInfo(g, node);
    }
    return errors::InvalidArgument("Cannot assign a device for operation '", node.name(), "': ", msg);
  }

  // TF's "Colocation Debug Info", then the registered devices and the kernels
  // of the op that lacks one.
  std::string DebugInfo(const Member& g, const Node& node) const {
    std::string out = "\nColocation Debug Info:\nColocation group had the following types and devices: \n";
    std::set<std::string> ops;
    std::string lacking;
    for (int m : g.members) {
      const Node& n = *graph_.node(m);
      const std::vector<std::string>& types = cg_.member(m).types;
      if (lacking.empty() && g.spec.has_type() && !HasString(types, g.spec.type())) lacking = n.op();
      if (ops.insert(n.op()).second) out += n.op() + ": " + placer_internal::JoinTypes(types) + " \n";
    }
    if (lacking.empty()) lacking = node.op();
    out += "\nColocation members and user-requested devices:\n";
    for (int m : g.members) {
      const Node& n = *graph_.node(m);
      out += "  " + n.name() + " (" + n.op() + ") " + n.requested_device() + "\n";
    }
    out += "\nRegistered devices: " + devices_.DescribeTypes() + "\nRegistered kernels:" +
           kernels_.DescribeKernels(lacking);
    return out;
  }

  // A group with a member placed in an earlier run keeps that device; the new
  // members' own requests must agree with it unless soft placement is on.
  void AssignToFixed(const Member& g, const std::vector<int>& fresh) {
    std::string earlier;
    for (int m : g.members) {
      if (!cg_.member(m).is_new) {
        earlier = graph_.node(m)->name();
        break;
      }
    }
    for (int m : fresh) {
      const Member& mm = cg_.member(m);
      const Node& node = *graph_.node(m);
      NodePlacement& p = out(m);
      if (mm.has_request && !mm.request_ignored && !mm.request.Matches(g.fixed->spec())) {
        if (!options_.allow_soft_placement) {
          p.status = errors::InvalidArgument(
              "Cannot assign a device for operation '", node.name(), "': Could not satisfy explicit device "
              "specification '", node.requested_device(),
              "' because the node was colocated with a group of nodes that required incompatible device '",
              g.fixed->name(), "'", DebugInfo(g, node));
          continue;
        }
        p.device = g.fixed;
        p.reason = "soft placement: colocated with '" + earlier + "', placed earlier on " + g.fixed->short_name() +
                   ", moved from " + node.requested_device();
        continue;
      }
      p.device = g.fixed;
      p.reason = mm.has_request && !mm.request_ignored
                     ? "explicit request " + node.requested_device()
                     : (mm.link.empty() ? "colocated with '" + earlier + "'" : mm.link) + ", placed earlier on " +
                           g.fixed->short_name();
    }
  }

  const Graph& graph_;
  const DeviceSet& devices_;
  const KernelRegistry& kernels_;
  const PlacerOptions& options_;
  ColocationGraph& cg_;
  std::vector<NodePlacement>& out_;
};

}  // namespace

Status Placer::Run(Placement* placement) const {
  const int first_new = placement->num_nodes();
  const int n = graph_.num_nodes();
  if (first_new >= n) return Status::OK();
  ColocationGraph cg(graph_, devices_, kernels_, placement->nodes_, options_);
  cg.AddNewNodes(first_new);         // pass "explicit"
  cg.ColocateByAttrs(first_new);     // pass "colocation": loc:@ attrs,
  cg.ColocateByRefEdges(first_new);  // then ref edges
  placement->nodes_.resize(static_cast<size_t>(n));

  // Passes "explicit", "default" and "soft" per group; generators last, so that
  // their consumers are placed when they choose.
  GroupAssigner assigner(graph_, devices_, kernels_, options_, cg, placement->nodes_);
  std::vector<int> generators;
  for (int root : cg.NewGroups()) {
    if (assigner.IsGenerator(root)) {
      generators.push_back(root);
    } else {
      assigner.Assign(root, false);
    }
  }
  for (int root : generators) assigner.Assign(root, true);

  Status first;
  std::string log;
  for (int id = first_new; id < n; ++id) {
    const NodePlacement& p = placement->at(id);
    if (!p.status.ok() && first.ok()) first = p.status;
    if (options_.log_device_placement && p.placed()) {
      log += placement->LogLine(*graph_.node(id), options_.log_verbosity >= 1) + "\n";
    }
  }
  if (!log.empty()) {
    // One write, so lines of concurrent sessions do not interleave mid-line.
    std::fwrite(log.data(), 1, log.size(), stdout);
    std::fflush(stdout);
  }
  return first;
}

}  // namespace tw
