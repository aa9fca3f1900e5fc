#!/usr/bin/env python3
"""PyTorch DistributedDataParallel's side of bench/multi_process: N processes
on the gloo backend (the CPU one), each training the MLP 784-256-256-10 or the
TF-tutorial CNN at --batch-size per process, momentum SGD (lr 0.01, 0.9), over
--steps steps after --warmup untimed ones, one thread each.

The data path is torch_train.py's (Fashion-MNIST in memory, a batch gathered
by index from a per-epoch permutation), each rank drawing its own permutation
(as DistributedSampler shards an epoch). DDP's defaults otherwise: gradients
all-reduced in 25 MB buckets overlapping the backward pass. Rank 0 prints one
JSON line: examples/s over every rank (global batch x steps / seconds).

Runs on Debian's python3-torch. Usage:
  torch_ddp_train.py --model mlp|cnn --procs N [--steps S] [--warmup W] [--idx DIR]
"""
import argparse
import json
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch_train import load, make_step, model_of


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.procs)
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    torch.manual_seed(1)  # the same initial weights everywhere (DDP broadcasts rank 0's anyway)
    x_all, y_all = load(args.idx, args.model == "cnn")
    model = torch.nn.parallel.DistributedDataParallel(model_of(args.model))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)
    b = args.batch_size
    step = make_step(model, opt, x_all, y_all, b, lambda n: torch.randperm(n, generator=gen))

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"framework": "pytorch-ddp", "version": torch.__version__, "backend": "gloo",
                          "model": args.model, "procs": args.procs, "threads_per_proc": 1,
                          "batch_size_per_proc": b, "warmup_steps": args.warmup, "steps": args.steps,
                          "seconds": seconds, "final_loss": float(loss),
                          "examples_per_sec": args.steps * b * args.procs / seconds}), flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("mlp", "cnn"), required=True)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--idx", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    mp.spawn(worker, args=(args, free_port()), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main()
