// StepStats: what one step did, when a caller asks for it (Session::Run with
// a StepStats, SessionOptions::collect_step_stats for the kernel times): the
// time spent inside kernels and, per node and per cross-device transfer, when
// it ran, on which thread and device. runtime/trace.h draws them as a Chrome
// trace. A plain value: fill one per step, read it from one thread.
//
// The Node and Device pointers are the session's: valid while the session
// and its graph live (Device is opaque to users: DeviceNameOf gives its name).
#ifndef TOWERFLOW_RUNTIME_STEP_STATS_H_
#define TOWERFLOW_RUNTIME_STEP_STATS_H_

// Internal (device/device.h), opaque to users: declared before the exported
// region, so that libtowerflow.so does not export it.
namespace tw {
class Device;
}  // namespace tw

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <string>
#include <vector>

namespace tw {

class Node;

struct StepStats {
  // Time spent inside Compute, summed over nodes (ns); step overhead is the
  // step's wall time minus this. Transfers are not kernels: not counted.
  int64_t kernel_ns = 0;
  // Per node that ran and per transfer: start and end of Compute (of the copy),
  // steady-clock ns, in no particular order. Filled when the caller asks for
  // stats (Session::Run with a StepStats); runtime/trace.h draws them.
  struct NodeTiming {
    const Node* node;  // for a transfer, the producer of the value moved
    int64_t start_ns;
    int64_t end_ns;
    // The thread that ran it: a small integer per thread, stable for the
    // thread's life, numbered from 0 in the order threads first record a timing.
    int thread = 0;
    // A transfer (partition.h) copied output `output` of `node` from
    // `transfer_from` to `device`; otherwise the node's kernel ran on `device`.
    bool transfer = false;
    int output = 0;
    const Device* device = nullptr;
    const Device* transfer_from = nullptr;
    const Node* fused_producer = nullptr;  // a fused item's consumer's producer (fusion.h)
    std::vector<const Node*> fused = {};   // all the nodes it absorbed, fused_producer last
  };
  std::vector<NodeTiming> nodes;
};

// The full name of a timing's device ("/job:localhost/replica:0/task:0/
// device:GPU:0"); "" for nullptr.
std::string DeviceNameOf(const Device* device);

}  // namespace tw

#pragma GCC visibility pop

#endif  // TOWERFLOW_RUNTIME_STEP_STATS_H_
