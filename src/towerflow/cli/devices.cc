#include "towerflow/cli/devices.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "towerflow/device/device_set.h"
#include "towerflow/train/replicate.h"

namespace tw::cli {

std::string NoGpuReason() {
#if TOWERFLOW_HAVE_CUDA
  return "no GPU is visible (see nvidia-smi and CUDA_VISIBLE_DEVICES)";
#else
  return "this build of towerflow has no GPU devices (CUDA backend not built)";
#endif
}

HostShare ThisHostShare(const dist::Launch& launch) {
  if (!launch.multi_process || launch.local_size < 1 || launch.local_rank < 0) return {};
  return {.local_rank = launch.local_rank, .local_size = launch.local_size, .cores = 0};
}

namespace {

// The cores process `pid` (0: this one) may run on, in order; empty when unknown.
std::vector<int> AllowedCores(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) return {};
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

int OnlineCores() { return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN))); }

// "0-3", "2", "0,2".
std::string CoreList(const std::vector<int>& cores) {
  std::string out;
  for (size_t i = 0; i < cores.size();) {
    size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    out += (i > 0 ? "," : "") + std::to_string(cores[i]) + (j > i ? "-" + std::to_string(cores[j]) : "");
    i = j + 1;
  }
  return out;
}

// "core 2", "cores 0-3".
std::string Cores(const std::vector<int>& cores) {
  return (cores.size() == 1 ? "core " : "cores ") + CoreList(cores);
}

// A number from a sysfs file; -1 when it cannot be read.
int ReadSysfsInt(const std::string& path) {
  std::ifstream in(path);
  int value = -1;
  if (!(in >> value)) return -1;
  return value;
}

// `cpus` grouped by physical core (the hardware threads of one core
// together), in the order of each core's first CPU; one group per CPU when
// the topology cannot be read.
std::vector<std::vector<int>> PhysicalCores(const std::vector<int>& cpus) {
  std::vector<std::pair<int, int>> keys;  // (package, core) of each group
  std::vector<std::vector<int>> groups;
  for (int cpu : cpus) {
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    const std::pair<int, int> key = {ReadSysfsInt(dir + "physical_package_id"), ReadSysfsInt(dir + "core_id")};
    if (key.first < 0 || key.second < 0) {
      groups.clear();
      for (int c : cpus) groups.push_back({c});
      return groups;
    }
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it == keys.end()) {
      keys.push_back(key);
      groups.push_back({cpu});
    } else {
      groups[static_cast<size_t>(it - keys.begin())].push_back(cpu);
    }
  }
  return groups;
}

// Whether the launcher bound this process to `mine` (BindToHostShare).
bool LauncherBound(const std::vector<int>& mine) {
  // OpenMPI sets it when it binds a rank (its own code tests that it is set).
  if (const char* bound = std::getenv("OMPI_MCA_orte_bound_at_launch")) {
    const std::string v = bound;
    if (v != "0" && v != "false") return true;
  }
  // Another launcher's binding: fewer cores than its parent's (a parent
  // outside this PID namespace is 0, which would read this process's own).
  const pid_t parent_pid = getppid();
  const std::vector<int> parent = parent_pid > 0 ? AllowedCores(parent_pid) : std::vector<int>{};
  if (!parent.empty()) return mine.size() < parent.size();
  return static_cast<int>(mine.size()) < OnlineCores();
}

}  // namespace

int CoresOfThisProcess(const HostShare& share) {
  if (share.cores > 0) return share.cores;
  return std::max(1, OnlineCores() / std::max(1, share.local_size));
}

std::string BindToHostShare(HostShare* share, bool bind) {
  const std::vector<int> cores = AllowedCores(0);
  const int n = static_cast<int>(cores.size());
  const int ranks = std::max(1, share->local_size);
  if (n == 0) return "every core";  // share->cores stays unknown
  if (LauncherBound(cores)) {
    share->cores = n;
    return Cores(cores) + " (the launcher's binding)";
  }
  if (!bind || ranks == 1 || ranks > n || share->local_rank < 0 || share->local_rank >= ranks) {
    share->cores = std::max(1, n / ranks);
    return "every core (" + CoreList(cores) + ")";
  }
  // Whole physical cores when there are enough of them: two ranks on the two
  // hardware threads of one core would share it.
  std::vector<std::vector<int>> units = PhysicalCores(cores);
  if (static_cast<int>(units.size()) < ranks) {
    units.clear();
    for (int c : cores) units.push_back({c});
  }
  const int count = static_cast<int>(units.size());
  const int first = share->local_rank * count / ranks, last = (share->local_rank + 1) * count / ranks;
  std::vector<int> mine;
  for (int i = first; i < std::max(last, first + 1); ++i) {
    for (int c : units[static_cast<size_t>(i)]) mine.push_back(c);
  }
  std::sort(mine.begin(), mine.end());
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : mine) CPU_SET(c, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    share->cores = std::max(1, n / ranks);
    return "every core (" + CoreList(cores) + ")";
  }
  share->cores = static_cast<int>(mine.size());
  return Cores(mine) + " (towerflow's share; --bind-cores none leaves every core)";
}

ResolvedDevices RankGpus(int physical, int logical_gpus, const HostShare& share) {
  ResolvedDevices r;
  r.uses_gpus = true;
  const int k = std::max(1, logical_gpus);
  const int gpus = physical * k;
  const int ranks = std::max(1, share.local_size);
  const int per_rank = std::max(1, gpus / ranks);
  const int first = gpus >= ranks ? share.local_rank * per_rank : share.local_rank % gpus;
  int offset = 0;  // the first tower's number in this rank's session
  if (ranks > 1) {
    const int first_physical = first / k, last_physical = (first + per_rank - 1) / k;
    for (int p = first_physical; p <= last_physical; ++p) r.visible_gpus.push_back(p);
    offset = first_physical * k;
  }
  for (int i = first; i < first + per_rank; ++i) r.towers.push_back("/device:GPU:" + std::to_string(i - offset));
  return r;
}

StatusOr<ResolvedDevices> ResolveDevices(const std::string& flag, int logical_gpus, const HostShare& share) {
  const int gpus = VisibleCudaGpuCount() * logical_gpus;
  ResolvedDevices r;
  if (flag == "auto" && gpus == 0) {
    const int cores = CoresOfThisProcess(share);
    for (int i = 0; i < cores; ++i) r.towers.push_back("/device:CPU:" + std::to_string(i));
  } else if (flag == "auto" || flag == "gpu") {
    if (gpus == 0) return errors::InvalidArgument("--devices gpu: ", NoGpuReason());
    r = RankGpus(VisibleCudaGpuCount(), logical_gpus, share);
  } else {
    auto parsed = ParseDevices(flag);
    if (!parsed.ok()) return errors::InvalidArgument("--devices: ", parsed.status().message());
    r.towers = *parsed;
    if (r.towers.empty()) {
      return errors::InvalidArgument("--devices '", flag, "' names no device; give auto, gpu, or a list such as cpu:0,cpu:1");
    }
  }
  for (const std::string& d : r.towers) {
    // Canonical names end in the index, which DeviceSpec parsed as an int.
    const int64_t index = std::strtoll(d.c_str() + d.rfind(':') + 1, nullptr, 10);
    if (d.rfind("/device:CPU:", 0) == 0) {
      if (index >= kMaxCpuDevices) {
        return errors::InvalidArgument("--devices ", flag, ": ", d, " is past the last virtual CPU device a run may ",
                                       "have (/device:CPU:", kMaxCpuDevices - 1, ")");
      }
      r.num_cpu_devices = std::max(r.num_cpu_devices, static_cast<int>(index) + 1);
    }
    if (d.rfind("/device:GPU:", 0) == 0) {
      r.uses_gpus = true;
      if (gpus == 0) return errors::InvalidArgument("--devices ", flag, ": ", d, " does not exist: ", NoGpuReason());
      if (index >= gpus) {
        return errors::InvalidArgument("--devices ", flag, ": ", d, " does not exist: ", VisibleCudaGpuCount(),
                                       " GPU(s) visible x ", logical_gpus, " logical (--logical-gpus) = /device:GPU:0",
                                       gpus > 1 ? "../device:GPU:" + std::to_string(gpus - 1) : std::string());
      }
    }
  }
  return r;
}

int CudaOrdinalOf(const std::string& device, int logical_gpus, const std::vector<int>& visible_gpus) {
  if (device.rfind("/device:GPU:", 0) != 0) return -1;
  const int index = static_cast<int>(std::strtol(device.c_str() + device.rfind(':') + 1, nullptr, 10));
  const size_t position = static_cast<size_t>(index / std::max(1, logical_gpus));
  if (visible_gpus.empty()) return static_cast<int>(position);
  return position < visible_gpus.size() ? visible_gpus[position] : -1;
}

Status ChooseCrossProcessDevice(dist::World& world, int logical_gpus, TrainConfig* c, std::string* note) {
  // Every rank takes part in the all-gather, GPU towers or not: a collective
  // that some ranks skip would wait for them until the timeout.
  const std::string& device = c->variable_device;
  std::string mine = "cpu";
  if (device.rfind("/device:GPU:", 0) == 0) {
    const int ordinal = CudaOrdinalOf(device, logical_gpus, c->visible_gpus);
    const std::string bus = CudaGpuPciBusId(ordinal);
    mine = world.hosts()[static_cast<size_t>(world.rank())] + " " +
           (bus.empty() ? "CUDA device " + std::to_string(ordinal) : bus);
  }
  TW_ASSIGN_OR_RETURN(std::vector<std::string> all,
                      world.AllGather({.channel = dist::Channel::kControl, .bucket = 0, .num_buckets = 1,
                                       .what = "the ranks' GPUs"},
                                      mine));
  *note = SharedGpuNote(all);
  if (!note->empty()) c->cross_process_device = "/device:CPU:0";
  return Status::OK();
}

std::string SharedGpuNote(const std::vector<std::string>& gpus) {
  // Ranks on CPUs beside ranks on GPUs: MPI's path is the one all can take
  // (one rank's NCCL call would wait for ranks that never make it).
  const auto cpu = std::find(gpus.begin(), gpus.end(), "cpu");
  const auto gpu = std::find_if(gpus.begin(), gpus.end(), [](const std::string& g) { return g != "cpu"; });
  if (cpu != gpus.end() && gpu != gpus.end()) {
    return "rank " + std::to_string(cpu - gpus.begin()) + " trains on CPUs and rank " +
           std::to_string(gpu - gpus.begin()) + " on a GPU (" + *gpu +
           "): the gradients are reduced between the ranks by MPI, through the CPU";
  }
  for (size_t r = 0; r < gpus.size(); ++r) {
    if (gpus[r] == "cpu") continue;
    for (size_t q = r + 1; q < gpus.size(); ++q) {
      if (gpus[q] != gpus[r]) continue;
      return "ranks " + std::to_string(r) + " and " + std::to_string(q) + " share a GPU (" + gpus[r] +
             "), which NCCL refuses: the gradients are reduced between the ranks by MPI, through the CPU";
    }
  }
  return "";
}

std::string DescribeWorld(const dist::World& world, const TrainConfig& c, const std::string& binding) {
  std::vector<std::pair<std::string, std::vector<int>>> hosts;  // in order of first rank
  for (int r = 0; r < world.size(); ++r) {
    const std::string& h = world.hosts()[static_cast<size_t>(r)];
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& e) { return e.first == h; });
    if (it == hosts.end()) {
      hosts.push_back({h, {r}});
    } else {
      it->second.push_back(r);
    }
  }
  std::string where;
  for (const auto& [host, rs] : hosts) {
    where += (where.empty() ? "" : ", ") + host + ": rank" + (rs.size() > 1 ? "s " : " ") + CoreList(rs);
  }
  const size_t towers = c.devices.size();
  const size_t files = c.files.size(), ranks = static_cast<size_t>(world.size());
  const std::string input =
      files >= ranks ? "input: " + std::to_string(files) + " files split by rank (" + std::to_string(files / ranks) +
                           (files % ranks != 0 ? "-" + std::to_string(files / ranks + 1) : "") + " each)"
                     : "input: " + std::to_string(files) + " file(s) for " + std::to_string(ranks) +
                           " ranks, split by record (rank r reads records r, r+" + std::to_string(ranks) + ", ...)";
  std::string cores = world.rank() == 0 && world.local_size() > 1 ? "; rank 0 runs on " + binding : "";
  if (!c.visible_gpus.empty()) {
    std::string ordinals;
    for (const int o : c.visible_gpus) ordinals += (ordinals.empty() ? "" : ",") + std::to_string(o);
    cores += std::string("; each rank opens only the GPUs of its towers (rank 0: CUDA device") +
             (c.visible_gpus.size() > 1 ? "s " : " ") + ordinals + ")";
  }
  return "world: " + std::to_string(world.size()) + " ranks on " + std::to_string(hosts.size()) + " host" +
         (hosts.size() > 1 ? "s" : "") + " (" + where + "), " + std::to_string(towers) + " tower(s) per rank, " +
         "global batch " + std::to_string(c.batch_size * static_cast<int64_t>(towers) * world.size()) + " = " +
         std::to_string(c.batch_size) + " x " + std::to_string(towers) + " tower(s) x " + std::to_string(world.size()) +
         " ranks; " + input + cores;
}

}  // namespace tw::cli
