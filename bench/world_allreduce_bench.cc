// The multi-process world's gradient all-reduce (dist/world.h), timed alone:
// what a step of `mpirun -np N towerflow train` pays per gradient bucket, the
// pack into the call's buffer, MPI's exchange, the mean's copy-out and the
// hand-over to the channel's thread included.
//
//   mpirun -np 2 --bind-to core build/bench/world_allreduce_bench [--rounds 30] [--iters 100]
//
// Every rank runs the same fixed number of calls (a collective benchmark
// cannot let each process choose its own iteration count, as Google
// Benchmark does). For each size, rounds of `iters` calls are timed and rank 0
// prints the best and the median round's time per call: on a shared machine
// the best round is the figure to compare between builds, the median says
// how noisy the machine was. Sizes: 4 KB, 256 KB, the MLP's bucket (1.08 MB)
// and the CNN's dense layer (12.9 MB).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "towerflow/dist/launch.h"
#include "towerflow/dist/world.h"

namespace {

using Clock = std::chrono::steady_clock;

int Flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::max(1, std::atoi(argv[i + 1]));
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = Flag(argc, argv, "--rounds", 30), iters = Flag(argc, argv, "--iters", 100);
  if (!tw::dist::DetectLaunch().multi_process) {
    std::fprintf(stderr, "world_allreduce_bench: run it under mpirun, e.g. mpirun -np 2 --bind-to core %s\n", argv[0]);
    return 2;
  }
  auto started = tw::dist::World::Start({.collective_timeout_seconds = 120});
  if (!started.ok()) {
    std::fprintf(stderr, "world_allreduce_bench: %s\n", started.status().ToString().c_str());
    return 2;
  }
  tw::dist::World& world = **started;
  const tw::dist::CollectiveTag tag{
      .channel = tw::dist::Channel::kGradients, .bucket = 0, .num_buckets = 1, .what = "benchmark bucket"};
  if (world.rank() == 0) {
    std::printf("%d ranks, %d rounds of %d calls per size, the mean of float32 gradients\n\n", world.size(), rounds,
                iters);
    std::printf("| bytes | best round, us per call | median round, us per call | GB/s (best) |\n|---|---|---|---|\n");
  }
  for (const int64_t count : {int64_t{1} << 10, int64_t{1} << 16, int64_t{269322}, int64_t{3211264}}) {
    // Two pieces, as a bucket of several tensors: the first written in place.
    std::vector<float> a(static_cast<size_t>(count / 4), 1.0f + static_cast<float>(world.rank()));
    std::vector<float> b_in(static_cast<size_t>(count - count / 4), 0.5f), b_out(b_in.size());
    const std::vector<tw::dist::World::Piece> pieces = {
        {a.data(), a.data(), static_cast<int64_t>(a.size())},
        {b_in.data(), b_out.data(), static_cast<int64_t>(b_in.size())}};
    std::vector<double> per_call;
    for (int round = -1; round < rounds; ++round) {  // round -1 warms up
      const auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) {
        if (auto s = world.AllReduce(tag, tw::kFloat32, pieces, tw::dist::ReduceOp::kMean); !s.ok()) {
          std::fprintf(stderr, "world_allreduce_bench: rank %d: %s\n", world.rank(), s.ToString().c_str());
          world.Abort(1);
        }
      }
      if (round >= 0) per_call.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iters);
    }
    std::sort(per_call.begin(), per_call.end());
    if (world.rank() == 0) {
      const double bytes = static_cast<double>(count) * sizeof(float);
      std::printf("| %.0f | %.1f | %.1f | %.2f |\n", bytes, per_call.front(), per_call[per_call.size() / 2],
                  bytes / per_call.front() / 1e3);
    }
  }
  world.Finalize();
  return 0;
}
