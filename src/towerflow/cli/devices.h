// Where `towerflow train` puts its towers (train.cc): --devices resolved to
// canonical devices, the share of a host's cores and GPUs that each rank of a
// multi-process job takes, and the line that describes the job's world.
#ifndef TOWERFLOW_CLI_DEVICES_H_
#define TOWERFLOW_CLI_DEVICES_H_

#include <string>
#include <vector>

#include "towerflow/cli/trainer.h"
#include "towerflow/core/status.h"
#include "towerflow/dist/launch.h"
#include "towerflow/dist/world.h"

namespace tw::cli {

// The ranks of a multi-process job on this host (dist/launch.h; one without a
// launcher, or when the launcher does not say): they share its cores and GPUs.
struct HostShare {
  int local_rank = 0;
  int local_size = 1;
  int cores = 0;  // the cores this process's threads may use (BindToHostShare; 0: not known yet)
};
HostShare ThisHostShare(const dist::Launch& launch);

// The cores this process may use (>= 1): `share.cores` once BindToHostShare
// set it, else the host's split between its ranks.
int CoresOfThisProcess(const HostShare& share);

// Binds this process to its share of the cores it may run on when it is one
// of several ranks on the host, its launcher did not bind it (mpirun
// --bind-to none, or a launcher that does not bind), there are at least as
// many cores as ranks, and `bind` is true: local rank r of n takes the r-th
// n-th of them, whole physical cores (both hardware threads of a core go to
// one rank) when there are at least n. Two ranks on two cores, the MLP:
// 81-84k -> 88-108k examples/s: the ranks no longer wait for each other in
// the gradient all-reduce while the scheduler moves their threads. A
// launcher's binding is kept: OpenMPI says so in its environment
// (OMPI_MCA_orte_bound_at_launch); another launcher's is a set of cores
// smaller than its parent's (a cpuset that the parent shares, a container's,
// is this host's to split). Call before any thread starts: threads inherit
// it. Sets share->cores, one process too (under taskset or in a cpuset,
// --devices auto makes as many CPU towers as it may use cores, not the
// host's). Returns how this process's cores were chosen, for the world line:
// "cores 0-3 (towerflow's share; ...)", "core 2 (the launcher's binding)", or
// "every core (0-7)" (shared with the host's other ranks).
std::string BindToHostShare(HostShare* share, bool bind);

// Why there is no GPU to train on, for messages: "no GPU is visible (...)",
// or that the build has no CUDA backend.
std::string NoGpuReason();

// The towers of one rank and what its session opens (ResolveDevices).
struct ResolvedDevices {
  std::vector<std::string> towers;  // canonical: "/device:CPU:1", "/device:GPU:0"
  int num_cpu_devices = 1;          // SessionOptions::num_cpu_devices
  bool uses_gpus = false;           // some tower is on a GPU
  // SessionOptions::visible_gpus: the physical GPUs (CUDA ordinals) this
  // rank opens, renumbered from /device:GPU:0 in the towers; empty: every
  // visible GPU, as numbered by CUDA.
  std::vector<int> visible_gpus;
};

// "auto": every GPU when there is one, else one virtual CPU device per core
// this process may use (CoresOfThisProcess);
// "gpu": every GPU; else a list (cpu:0,cpu:1 or /gpu:0,/gpu:1). A GPU is one
// of `logical_gpus` logical GPUs of each visible physical GPU. Ranks of a job
// on one host split "auto" and "gpu" between them: its cores, or its GPUs
// (RankGpus), each rank opening only the physical GPUs its towers are on. A
// list names visible GPUs and opens them all. InvalidArgument naming the entry
// for a device that does not parse or does not exist.
StatusOr<ResolvedDevices> ResolveDevices(const std::string& flag, int logical_gpus, const HostShare& share);

// The GPU towers of local rank `share.local_rank` of `share.local_size` on a
// host with `physical` visible GPUs of `logical_gpus` logical GPUs each
// (physical >= 1): the host's logical GPUs split evenly between its ranks,
// each rank its own when there are enough, else logical GPU local_rank modulo
// their count (ranks then share a GPU, and cross their buckets through the
// CPU: ChooseCrossProcessDevice). With several ranks on the host, the towers
// are renumbered from /device:GPU:0 over `visible_gpus`, the physical GPUs
// that hold them; one rank keeps every GPU and CUDA's numbering. A rank whose
// towers begin in the middle of a card (logical GPUs that do not split evenly
// between the ranks) also has the card's logical GPUs before its first tower,
// which it does not train on. Sets `towers`, `visible_gpus` and `uses_gpus`.
ResolvedDevices RankGpus(int physical, int logical_gpus, const HostShare& share);

// The CUDA ordinal of the physical GPU that holds `device` ("/device:GPU:3")
// in a session of `logical_gpus` logical GPUs per physical GPU that opened
// `visible_gpus` (SessionOptions::visible_gpus; empty: every visible GPU);
// -1 for a device that is not a GPU, or past the list.
int CudaOrdinalOf(const std::string& device, int logical_gpus, const std::vector<int>& visible_gpus);

// Where the gradient buckets are reduced between the ranks
// (c->cross_process_device): the variables' device, so GPU towers reduce with
// NCCL where the gradients are, unless two ranks would be on one physical GPU
// (NCCL refuses two ranks of a communicator on one GPU: ranks sharing a host's
// GPUs, logical GPUs of one card split between ranks) or some ranks have no
// GPU. The ranks compare
// their GPUs' hosts and PCI bus ids (an all-gather: every rank decides alike);
// then the buckets go through the CPU, reduced by MPI, and `note` says why.
// No change for CPU towers.
Status ChooseCrossProcessDevice(dist::World& world, int logical_gpus, TrainConfig* c, std::string* note);
// The decision from the gathered identities, one per rank ("cpu", or
// "<host> <PCI bus id>"): a note naming the first two ranks on one GPU, or a
// rank on CPUs and one on a GPU (hosts with and without GPUs under
// --devices auto); empty when every rank has a GPU of its own, or none has.
std::string SharedGpuNote(const std::vector<std::string>& gpus);

// The job, printed once by rank 0: "world: 3 ranks on 1 host (vm: ranks
// 0-2), 2 tower(s) per rank, global batch 600 = 100 x 2 tower(s) x 3 ranks;
// input: 8 files split by rank (2-3 each)" (dist/sharding.h's split).
// `binding` is BindToHostShare's answer on this rank (rank 0's is printed).
std::string DescribeWorld(const dist::World& world, const TrainConfig& c, const std::string& binding);

}  // namespace tw::cli

#endif  // TOWERFLOW_CLI_DEVICES_H_
