#!/usr/bin/env python3
"""PyTorch peer of bench/mlp_step_bench.cc: one training step of the MLP
784-256-256-10 at batch 100, momentum SGD, on N threads (its usual loop:
zero_grad, forward, cross_entropy, backward, step). Prints one JSON line.

Runs on Debian's python3-torch (linked against the system BLAS; install
libopenblas0-pthread so that BLAS is OpenBLAS, as towerflow's is)."""
import json
import sys
import time

import torch


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    torch.set_num_threads(threads)
    # towerflow flushes denormals in its compute threads (as TensorFlow does); the
    # step trains on one fixed batch, whose gradients decay into denormals.
    torch.set_flush_denormal(True)
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.rand(100, 784)
    y = torch.randint(0, 10, (100,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(50):
        step()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            step()
        steps += 20
    elapsed = time.perf_counter() - start
    print(json.dumps({"peer": "pytorch", "version": torch.__version__, "threads": threads,
                      "steps": steps, "examples_per_sec": steps * 100 / elapsed}))


if __name__ == "__main__":
    main()
