#!/usr/bin/env python3
"""bench/scaling_model.py: the cost model of docs/scaling.md. Computes the step
time and scaling efficiency of data-parallel training (one process per GPU,
gradients all-reduced by NCCL in buckets overlapping the backward pass) at 1 to
256 GPUs on 8-GPU nodes, from a model's single-GPU step time and its layers' parameter counts.

The model, per step at N GPUs (weak scaling: the batch per GPU is fixed):

  compute   t_c = the single-GPU step time (measured or given); the backward
            pass is `--backward-share` of it (2/3: two GEMMs per layer to the
            forward pass's one).
  all-reduce of S bytes in buckets of B bytes (PyTorch DDP's 25 MB, the first
            1 MB), each bucket b a NCCL all-reduce costing
              ring:  2(N-1)/N * b / busbw + 2(N-1) * alpha
              tree:  2(N-1)/N * b / busbw + 2 log2(N) * alpha
            (NCCL's published algorithm costs: the ring moves 2(N-1)/N of the
            buffer through every link; the double binary tree has the same
            bandwidth term and a latency term in log N); NCCL picks the cheaper.
            busbw is the slowest link the collective crosses: NVLink inside a
            node (N <= 8), the network between nodes (N > 8; one NIC per GPU,
            rail-optimised, as DGX-class nodes are wired).
  overlap   every bucket but the last (the first layers' gradients, produced
            last) runs while the backward pass goes on: the exposed
            communication is max(last bucket, total - backward time).
  step      t(N) = t_c + exposed;  efficiency = t_c / t(N).

Inputs are command-line flags with the defaults documented in
docs/scaling.md; --table prints the Markdown tables of docs/scaling.md.

Usage: bench/scaling_model.py [--table] [--model NAME:STEP_MS:P1,P2,... ...]
       [--nvlink-gbs G] [--net-gbits G ...] [--alpha-us-nvlink A] [--alpha-us-net A]
"""
import argparse
import math

# Single-GPU step times on an H200 at batch 100 (docs/gpu-results.md, PyTorch's
# examples/s, 2026-11-30: the compute a GPU-bound step takes) and the
# parameters of each layer in forward order (float32 gradients; counted from
# src/towerflow/cli/models.cc). The ResNet-50 row is assumed, not measured:
# its stages' parameter counts (conv1, layer1-4, fc: 25.6M in all, each stage
# as 8 equal tensors) and 85 ms for a batch of 256 in mixed precision (about
# 3,000 images/s per GPU).
def _resnet50():
    stages = [9408, 215808, 1219584, 7098368, 14964736]
    return [p / 8 for p in stages for _ in range(8)] + [2049000]


DEFAULT_MODELS = [
    ("MLP 784-256-256-10", 100 / 69927 * 1e3, [784 * 256 + 256, 256 * 256 + 256, 256 * 10 + 10]),
    ("CNN (TF tutorial)", 100 / 40303 * 1e3, [5 * 5 * 32 + 32, 5 * 5 * 32 * 64 + 64, 3136 * 1024 + 1024, 10250]),
    ("ResNet-50-sized (assumed)", 85.0, _resnet50()),
]
GPUS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
GPUS_PER_NODE = 8


def allreduce_seconds(nbytes, n, busbw, alpha):
    if n == 1 or nbytes == 0:
        return 0.0
    bandwidth = 2 * (n - 1) / n * nbytes / busbw
    ring = bandwidth + 2 * (n - 1) * alpha
    tree = bandwidth + 2 * math.log2(n) * alpha
    return min(ring, tree)


def buckets(layers, first=1 << 20, rest=25 << 20):
    """Bucket sizes in bytes, in the order they are reduced: the gradients in
    reverse layer order, a bucket closing once past its cap (dist/'s
    CrossProcessMean, PyTorch DDP's rule)."""
    out, size = [], 0
    for params in reversed(layers):
        size += params * 4
        if size >= (first if not out else rest):
            out.append(size)
            size = 0
    if size > 0:
        out.append(size)
    return out


def step(t_c, layers, n, args, net_gbits):
    if n <= GPUS_PER_NODE:
        busbw, alpha = args.nvlink_gbs * 1e9, args.alpha_us_nvlink * 1e-6
    else:
        busbw, alpha = net_gbits / 8 * 1e9, args.alpha_us_net * 1e-6
    parts = [allreduce_seconds(b, n, busbw, alpha) for b in buckets(layers)]
    total = sum(parts)
    backward = args.backward_share * t_c
    exposed = max(parts[-1] if parts else 0.0, total - backward)
    return t_c + exposed, total, exposed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", default=[],
                        help="NAME:STEP_MS:P1,P2,... (a single-GPU step time, each layer's parameter count)")
    parser.add_argument("--nvlink-gbs", type=float, default=360.0,
                        help="NCCL bus bandwidth inside a node, GB/s (H100/H200 NVLink: ~360 in nccl-tests)")
    parser.add_argument("--net-gbits", type=float, action="append", default=[],
                        help="network bandwidth per GPU between nodes, Gb/s (default: 100 and 400)")
    parser.add_argument("--alpha-us-nvlink", type=float, default=5.0, help="latency per algorithm step inside a node")
    parser.add_argument("--alpha-us-net", type=float, default=15.0, help="latency per algorithm step across nodes")
    parser.add_argument("--backward-share", type=float, default=2 / 3, help="the backward pass's share of a step")
    parser.add_argument("--table", action="store_true", help="Markdown tables (docs/scaling.md)")
    args = parser.parse_args()
    models = [(m.split(":")[0], float(m.split(":")[1]), [float(p) for p in m.split(":")[2].split(",")])
              for m in args.model] or DEFAULT_MODELS
    nets = args.net_gbits or [25.0, 100.0, 400.0]
    for net in nets:
        print("\n### %g Gb/s per GPU between nodes, NVLink %g GB/s inside\n" % (net, args.nvlink_gbs))
        print("| GPUs | " + " | ".join("%s: step ms (all-reduce, exposed) / efficiency" % name for name, _, _ in models) + " |")
        print("|---:|" + "---|" * len(models))
        for n in GPUS:
            cells = []
            for _, t_ms, layers in models:
                t_c = t_ms / 1e3
                t, total, exposed = step(t_c, layers, n, args, net)
                cells.append("%.2f (%.2f, %.2f) / %.0f%%" % (t * 1e3, total * 1e3, exposed * 1e3, 100 * t_c / t))
            print("| %d | %s |" % (n, " | ".join(cells)))


if __name__ == "__main__":
    main()
