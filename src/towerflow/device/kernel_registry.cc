#include "towerflow/device/kernel_registry.h"

#include <algorithm>

namespace tw {

bool KernelDef::HostMemoryInput(int i) const {
  return std::find(host_memory_inputs.begin(), host_memory_inputs.end(), i) != host_memory_inputs.end();
}

bool KernelDef::HostMemoryOutput(int o) const {
  return std::find(host_memory_outputs.begin(), host_memory_outputs.end(), o) != host_memory_outputs.end();
}

KernelRegistry& KernelRegistry::Global() {
  static KernelRegistry* registry = new KernelRegistry();
  return *registry;
}

void KernelRegistry::Register(KernelDef def) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  std::string op = def.op;
  kernels_.emplace(std::move(op), std::move(def));
}

namespace {
bool Matches(const KernelDef& k, const Node& node) {
  if (k.type_attr.empty()) return true;
  const AttrValue* v = node.attrs().Find(k.type_attr);
  if (v == nullptr) return false;
  const DataType* t = std::get_if<DataType>(v);
  return t != nullptr && std::find(k.types.begin(), k.types.end(), *t) != k.types.end();
}
}  // namespace

const KernelDef* KernelRegistry::Find(const Node& node, const std::string& device_type) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    if (it->second.device_type == device_type && Matches(it->second, node)) return &it->second;
  }
  return nullptr;
}

std::vector<std::string> KernelRegistry::SupportedDeviceTypes(const Node& node) const {
  std::vector<std::string> out;
  for (const char* type : {kDeviceGpu, kDeviceCpu}) {
    if (Find(node, type) != nullptr) out.push_back(type);
  }
  std::shared_lock<std::shared_mutex> lock(mu_);
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    const std::string& t = it->second.device_type;
    if (std::find(out.begin(), out.end(), t) == out.end() && Matches(it->second, node)) out.push_back(t);
  }
  return out;
}

std::string KernelRegistry::DescribeKernels(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::string out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) {
    out += "\n  device='" + it->second.device_type + "'";
    if (!it->second.type_attr.empty()) {
      out += "; " + it->second.type_attr + " in [";
      for (size_t i = 0; i < it->second.types.size(); ++i) {
        out += (i ? ", " : "") + std::string(DataTypeName(it->second.types[i]));
      }
      out += "]";
    }
  }
  return out.empty() ? "\n  <no registered kernels>" : out;
}

StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateKernel(const Node& node, Device* device) const {
  const KernelDef* def = Find(node, device->device_type());
  if (def == nullptr) {
    std::string attrs;
    for (const auto& [name, value] : node.attrs().values()) {
      if (std::holds_alternative<DataType>(value)) attrs += "; " + name + "=" + AttrValueToString(value);
    }
    return errors::Unimplemented("No OpKernel was registered to support Op '", node.op(),
                                 "' used by node ", node.DebugName(), " with these attrs: [",
                                 attrs.empty() ? "" : attrs.substr(2), "] on ", device->name(),
                                 ". Registered kernels:", DescribeKernels(node.op()));
  }
  OpKernelConstruction ctx(node, device);
  std::unique_ptr<OpKernel> kernel = def->factory(&ctx);
  if (!ctx.status().ok()) return ctx.status().WithContext("creating kernel for " + node.DebugName());
  return kernel;
}

std::map<std::string, std::vector<DataType>> KernelRegistry::KernelTypes(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::map<std::string, std::vector<DataType>> out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) {
    auto& v = out[it->second.device_type];
    for (DataType t : it->second.types) {
      if (std::find(v.begin(), v.end(), t) == v.end()) v.push_back(t);
    }
  }
  for (auto& [type, v] : out) std::sort(v.begin(), v.end());
  return out;
}

std::vector<const KernelDef*> KernelRegistry::KernelsFor(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<const KernelDef*> out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) out.push_back(&it->second);
  return out;
}

void KernelRegistry::RegisterFusion(FusionDef def) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  fusions_.push_back(std::make_unique<FusionDef>(std::move(def)));
}

std::vector<const FusionDef*> KernelRegistry::FindFusions(const Node& producer, const Node& consumer,
                                                          int consumer_input, const std::string& device_type) const {
  std::vector<const FusionDef*> out;
  if (producer.num_outputs() == 0) return out;
  const DataType t = producer.output_type(0);
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& f : fusions_) {
    if (f->producer_op == producer.op() && f->consumer_op == consumer.op() && f->consumer_input == consumer_input &&
        f->device_type == device_type && !f->twin_only &&
        std::find(f->types.begin(), f->types.end(), t) != f->types.end()) {
      out.push_back(f.get());
    }
  }
  return out;
}

StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::CreateFusedKernel(const FusionDef& def, const Node& producer,
                                                                       const Node& consumer, Device* device) const {
  OpKernelConstruction ctx(producer, device);
  std::unique_ptr<OpKernel> kernel = def.factory(&ctx, consumer);
  if (!ctx.status().ok()) {
    return ctx.status().WithContext("creating the kernel of " + producer.DebugName() + " fused into " +
                                    consumer.DebugName());
  }
  return kernel;
}

void KernelRegistry::RegisterGroup(GroupDef def) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  groups_.push_back(std::make_unique<GroupDef>(std::move(def)));
}

std::vector<FusionDef> KernelRegistry::FusionsFor(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<FusionDef> out;
  for (const auto& f : fusions_) {
    if (f->producer_op == op) out.push_back(*f);
  }
  return out;
}

std::vector<GroupDef> KernelRegistry::GroupsFor(const std::string& op) const {
  std::shared_lock<std::shared_mutex> lock(mu_);
  std::vector<GroupDef> out;
  for (const auto& g : groups_) {
    if (g->op == op) out.push_back(*g);
  }
  return out;
}

const GroupDef* KernelRegistry::FindGroup(const Node& node, const std::string& device_type, bool twins) const {
  auto t = node.attrs().Get<DataType>("T");
  if (!t.ok()) return nullptr;
  std::shared_lock<std::shared_mutex> lock(mu_);
  for (const auto& g : groups_) {
    if (g->op == node.op() && g->device_type == device_type && (twins || !g->twin_only) &&
        std::find(g->types.begin(), g->types.end(), *t) != g->types.end()) {
      return g.get();
    }
  }
  return nullptr;
}

}  // namespace tw
