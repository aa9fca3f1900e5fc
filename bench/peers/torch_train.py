#!/usr/bin/env python3
"""PyTorch's side of bench/run's training cases: examples/s of the MLP
784-256-256-10 or the TF-tutorial CNN at batch 100, momentum SGD (lr 0.01,
0.9), over --steps steps after --warmup untimed ones, on T threads.

PyTorch's usual loop over tensors in memory: Fashion-MNIST's 60,000 training
images are read once from the IDX files that `towerflow convert fashion-mnist`
converts (Debian's dataset-fashion-mnist), scaled to [0, 1] as float32; each
epoch draws a random permutation, each step gathers its batch by index, then
zero_grad, forward, cross_entropy, backward, step. The models are towerflow's
(src/towerflow/cli/models.cc) in PyTorch's layout (NCHW for the CNN).

Runs on Debian's python3-torch: matmuls through the system BLAS (OpenBLAS with
libopenblas0-pthread; bench/run sets OPENBLAS_NUM_THREADS and OMP_NUM_THREADS
to T), convolutions through its bundled oneDNN. Prints one JSON line.

Usage: torch_train.py --model mlp|cnn --threads T [--steps S] [--warmup W] [--idx DIR]
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch


def read_idx(path, offset):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(idx_dir, cnn):
    images = read_idx(os.path.join(idx_dir, "train-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(idx_dir, "train-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    x = x.reshape(-1, 1, 28, 28) if cnn else x.reshape(-1, 784)
    return x, torch.from_numpy(labels.astype(np.int64))


def model_of(name):
    nn = torch.nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.4), nn.Linear(1024, 10))


def make_step(model, opt, x_all, y_all, b, randperm=torch.randperm):
    """One training step per call: a batch of b gathered by index from an
    epoch's permutation (randperm(n), a new one when it runs out), zero_grad,
    forward, cross_entropy, backward, step; returns the loss."""
    n = x_all.shape[0]
    state = {"perm": randperm(n), "pos": 0}

    def step():
        if state["pos"] + b > n:
            state["perm"], state["pos"] = randperm(n), 0
        idx = state["perm"][state["pos"]:state["pos"] + b]
        state["pos"] += b
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        return loss

    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--idx", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # towerflow and TensorFlow flush denormals in their compute threads.
    torch.set_flush_denormal(True)
    torch.manual_seed(1)
    x_all, y_all = load(args.idx, args.model == "cnn")
    model = model_of(args.model)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    b = args.batch_size
    step = make_step(model, opt, x_all, y_all, b)

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    seconds = time.perf_counter() - start
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "model": args.model,
                      "threads": args.threads, "batch_size": b, "warmup_steps": args.warmup,
                      "steps": args.steps, "seconds": seconds, "final_loss": float(loss),
                      "examples_per_sec": args.steps * b / seconds}), flush=True)


if __name__ == "__main__":
    main()
