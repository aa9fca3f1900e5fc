#!/usr/bin/env python3
"""PyTorch's side of bench/gpu_bench: examples/s of the MLP 784-256-256-10 or
the TF-tutorial CNN at batch B on one CUDA GPU, momentum SGD (lr 0.01, 0.9),
over --steps steps after --warmup untimed ones.

The GPU version of torch_train.py (same models, same optimizer, same data),
written as PyTorch users write it for speed: Fashion-MNIST's 60,000 training
images are read once from the IDX files `towerflow convert fashion-mnist`
reads (or bench/gpu_bench's synthetic ones of the same shapes), scaled to
[0, 1] as float32 and moved to the GPU as tensors; each epoch draws a random
permutation on the GPU, each step gathers its batch by index there, then
zero_grad, forward, cross_entropy, backward, step, with no host sync inside
the timed loop (one torch.cuda.synchronize() before and after it).
cudnn.benchmark is on (cuDNN picks its fastest convolution algorithms in the
warm-up); TF32 is off for matmuls and convolutions unless --allow-tf32 (PyTorch
turns it on for cuDNN by default: it is set explicitly both ways, as towerflow's
--allow-tf32 is off by default). Prints one JSON line.

Usage: torch_gpu_train.py --model mlp|cnn [--batch-size B] [--steps S] [--warmup W]
                          [--idx DIR] [--allow-tf32]
Exit status 3 when PyTorch has no CUDA device (bench/gpu_bench then skips it).
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch


def read_idx(path, offset):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def load(idx_dir, cnn, device):
    images = read_idx(os.path.join(idx_dir, "train-images-idx3-ubyte.gz"), 16)
    labels = read_idx(os.path.join(idx_dir, "train-labels-idx1-ubyte.gz"), 8)
    x = torch.from_numpy(images.astype(np.float32) / 255.0)
    x = x.reshape(-1, 1, 28, 28) if cnn else x.reshape(-1, 784)
    return x.to(device), torch.from_numpy(labels.astype(np.int64)).to(device)


def model_of(name):
    nn = torch.nn
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 1024), nn.ReLU(), nn.Dropout(0.4), nn.Linear(1024, 10))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), required=True)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--idx", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--allow-tf32", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("torch_gpu_train.py: PyTorch %s sees no CUDA device" % torch.__version__, file=sys.stderr)
        sys.exit(3)
    device = torch.device("cuda:0")
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = args.allow_tf32
    torch.backends.cudnn.allow_tf32 = args.allow_tf32
    torch.manual_seed(1)
    x_all, y_all = load(args.idx, args.model == "cnn", device)
    model = model_of(args.model).to(device)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    n, b = x_all.shape[0], args.batch_size
    perm, pos = torch.randperm(n, device=device), 0

    def step():
        nonlocal perm, pos
        if pos + b > n:
            perm, pos = torch.randperm(n, device=device), 0
        idx = perm[pos:pos + b]
        pos += b
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x_all[idx]), y_all[idx])
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({"framework": "pytorch", "version": torch.__version__, "model": args.model,
                      "device": torch.cuda.get_device_name(0), "batch_size": b, "warmup_steps": args.warmup,
                      "steps": args.steps, "seconds": seconds, "final_loss": float(loss),
                      "allow_tf32": args.allow_tf32, "examples_per_sec": args.steps * b / seconds}), flush=True)


if __name__ == "__main__":
    main()
