// NcclAllReducer (nccl_all_reduce.h) against CpuAllReducer on copies of the
// same inputs: odd sizes (and one large enough for several grid-stride
// rounds), sum, mean, max and min, float, double and int32 (integer means
// truncate). Paths: 2 and 3 logical GPUs of one physical GPU (device-memory
// reduction; runs on any machine with a GPU), every physical GPU (NCCL; needs
// 2), 2 logical GPUs on each of 2 physical GPUs (both), one device listed
// twice, one tensor passed twice, and AllReduceBatch with fused buckets. The
// checks of the list give CpuAllReducer's InvalidArgument, plus tensors that
// are not in their device's memory. Skips without a GPU (label cuda).
#include "towerflow/train/nccl_all_reduce.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/device/device_set.h"
#include "towerflow/kernels/gpu_parity_test_util.h"

namespace tw::train {
namespace {

struct Gpus {
  std::unique_ptr<DeviceSet> set;
  std::vector<GpuDevice*> devices;
};

// The GPUs of a DeviceSet of at most `max_gpus` physical GPUs (-1: all), each
// split into `logical` logical GPUs.
Gpus MakeGpus(int max_gpus, int logical) {
  SessionOptions o;
  o.max_gpus = max_gpus;
  o.logical_gpus_per_gpu = logical;
  o.gpu_memory_limit_mb = 2048;
  auto set = DeviceSet::Create(o);
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  Gpus g;
  if (!set.ok()) return g;
  g.set = std::move(set).value();
  for (const auto& d : g.set->devices()) {
    if (d->device_type() == kDeviceGpu) g.devices.push_back(static_cast<GpuDevice*>(d.get()));
  }
  return g;
}

std::vector<Tensor*> Pointers(std::vector<Tensor>& ts) {
  std::vector<Tensor*> out;
  for (Tensor& t : ts) out.push_back(&t);
  return out;
}

void SetTolerance(DataType dtype, double* rtol, double* atol) {
  // Logical GPUs add in CpuAllReducer's order (exact); NCCL's order and its
  // pre-scaled average round differently, within a few units in the last place.
  *rtol = dtype == kFloat32 ? 1e-5 : dtype == kFloat64 ? 1e-12 : 0;
  *atol = dtype == kFloat32 ? 1e-6 : dtype == kFloat64 ? 1e-14 : 0;
}

// Reduces copies of `inputs` (one per device) on the CPU and on the GPUs and
// compares every GPU result with the CPU's.
void ExpectMatchesCpu(NcclAllReducer& gpu, const std::vector<GpuDevice*>& devices,
                      const std::vector<Tensor>& inputs, Reduction op, const std::string& what) {
  SCOPED_TRACE(what + ", " + ReductionName(op));
  std::vector<Tensor> cpu, on_gpu(inputs.size()), back(inputs.size());
  for (const Tensor& t : inputs) cpu.push_back(t.DeepCopy());
  ASSERT_TRUE(CpuAllReducer(1).AllReduce(Pointers(cpu), op).ok());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(devices[i]->CopyFromHost(inputs[i], &on_gpu[i]).ok());
  }
  const Status s = gpu.AllReduce(Pointers(on_gpu), op);
  ASSERT_TRUE(s.ok()) << s.ToString();
  double rtol = 0, atol = 0;
  SetTolerance(inputs[0].dtype(), &rtol, &atol);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_TRUE(devices[i]->CopyToHost(on_gpu[i], &back[i]).ok());
    EXPECT_TRUE(parity::Near(back[i], cpu[i], rtol, atol)) << "tensor " << i;
  }
}

// Every dtype, size and reduction over `devices`.
void CheckDevices(const std::vector<GpuDevice*>& devices, NcclAllReducerOptions options = {}) {
  ASSERT_FALSE(devices.empty());
  parity::SeededRng rng;
  NcclAllReducer reducer(devices, options);
  std::vector<TensorShape> shapes;
  for (int64_t n : parity::OddSizes()) shapes.push_back(TensorShape{n});
  shapes.push_back(TensorShape{33, 7});
  shapes.push_back(TensorShape{3000001});  // several grid-stride rounds
  for (DataType dtype : {kFloat32, kFloat64, kInt32}) {
    for (const TensorShape& shape : shapes) {
      for (Reduction op : {Reduction::kSum, Reduction::kMean, Reduction::kMax, Reduction::kMin}) {
        std::vector<Tensor> inputs;
        for (size_t i = 0; i < devices.size(); ++i) {
          inputs.push_back(parity::RandomTensor(dtype, shape, rng, dtype == kInt32 ? -1000 : -1,
                                                dtype == kInt32 ? 1000 : 1));
        }
        ExpectMatchesCpu(
            reducer, devices, inputs, op,
            std::to_string(devices.size()) + " x " + std::string(DataTypeName(dtype)) + shape.ToString());
      }
    }
  }
}

TEST(NcclAllReduceCudaTest, TwoAndThreeLogicalGpusOfOnePhysicalGpu) {
  TW_SKIP_WITHOUT_GPU();
  for (int logical : {2, 3}) {
    Gpus g = MakeGpus(1, logical);
    ASSERT_EQ(g.devices.size(), static_cast<size_t>(logical));
    CheckDevices(g.devices);
  }
}

// The NCCL calls on a machine with one GPU: the two logical GPUs' sum goes
// through a communicator of one rank (ncclCommInitAll, ncclGroupStart/End,
// ncclAllReduce on the lead's stream, every dtype), as it would between
// physical GPUs.
TEST(NcclAllReduceCudaTest, OneRankCommunicatorOnOneGpu) {
  TW_SKIP_WITHOUT_GPU();
  Gpus g = MakeGpus(1, 2);
  ASSERT_EQ(g.devices.size(), 2u);
  CheckDevices(g.devices, {.nccl_with_one_gpu = true});
}

TEST(NcclAllReduceCudaTest, PhysicalGpus) {
  TW_SKIP_WITHOUT_GPU();
  if (VisibleCudaGpuCount() < 2)
    GTEST_SKIP() << "NCCL across GPUs needs 2 GPUs, " << VisibleCudaGpuCount() << " visible";
  Gpus g = MakeGpus(-1, 1);
  CheckDevices(g.devices);
}

TEST(NcclAllReduceCudaTest, LogicalGpusOnTwoPhysicalGpus) {
  TW_SKIP_WITHOUT_GPU();
  if (VisibleCudaGpuCount() < 2) GTEST_SKIP() << "needs 2 GPUs, " << VisibleCudaGpuCount() << " visible";
  Gpus g = MakeGpus(2, 2);
  ASSERT_EQ(g.devices.size(), 4u);
  CheckDevices(g.devices);
}

TEST(NcclAllReduceCudaTest, OneDeviceListedTwiceAndOneTensorPassedTwice) {
  TW_SKIP_WITHOUT_GPU();
  Gpus g = MakeGpus(1, 1);
  ASSERT_EQ(g.devices.size(), 1u);
  GpuDevice* d = g.devices[0];
  parity::SeededRng rng;
  NcclAllReducer twice({d, d});
  for (Reduction op : {Reduction::kSum, Reduction::kMean}) {
    ExpectMatchesCpu(twice, {d, d},
                     {parity::RandomTensor(kFloat32, TensorShape{1000}, rng),
                      parity::RandomTensor(kFloat32, TensorShape{1000}, rng)},
                     op, "one device twice");
  }
  // The same buffer twice: each input is read before any output is written.
  Tensor host = parity::RandomTensor(kFloat64, TensorShape{33}, rng), cpu = host.DeepCopy(), on_gpu, back;
  ASSERT_TRUE(CpuAllReducer(1).AllReduce({&cpu, &cpu}, Reduction::kSum).ok());
  ASSERT_TRUE(d->CopyFromHost(host, &on_gpu).ok());
  ASSERT_TRUE(twice.AllReduce({&on_gpu, &on_gpu}, Reduction::kSum).ok());
  ASSERT_TRUE(d->CopyToHost(on_gpu, &back).ok());
  EXPECT_TRUE(parity::Near(back, cpu, 0, 0));
  // A single device: the tensor is its own reduction.
  NcclAllReducer one({d});
  ExpectMatchesCpu(one, {d}, {parity::RandomTensor(kFloat32, TensorShape{7}, rng)}, Reduction::kMean,
                   "one device");
}

// Values of mixed sizes and dtypes through AllReduceBatch with 4 KiB buckets:
// the small ones fused (several buckets per dtype), 3000 floats alone.
void CheckBatch(const std::vector<GpuDevice*>& devices) {
  SCOPED_TRACE(std::to_string(devices.size()) + " devices");
  parity::SeededRng rng;
  NcclAllReducer reducer(devices, NcclAllReducerOptions{.bucket_bytes = 4096});
  const std::vector<std::pair<DataType, int64_t>> specs = {
      {kFloat32, 1}, {kFloat64, 7}, {kFloat32, 33},   {kFloat32, 1000}, {kFloat32, 3000},
      {kFloat64, 1}, {kFloat32, 7}, {kFloat64, 1000}, {kFloat32, 0},    {kInt32, 33}};
  for (Reduction op : {Reduction::kSum, Reduction::kMean}) {
    std::vector<std::vector<Tensor>> cpu(specs.size()), on_gpu(specs.size());
    std::vector<std::vector<Tensor*>> values;
    for (size_t v = 0; v < specs.size(); ++v) {
      for (size_t i = 0; i < devices.size(); ++i) {
        Tensor host = parity::RandomTensor(specs[v].first, TensorShape{specs[v].second}, rng, -100, 100);
        cpu[v].push_back(host.DeepCopy());
        on_gpu[v].emplace_back();
        ASSERT_TRUE(devices[i]->CopyFromHost(host, &on_gpu[v].back()).ok());
      }
      ASSERT_TRUE(CpuAllReducer(1).AllReduce(Pointers(cpu[v]), op).ok());
      values.push_back(Pointers(on_gpu[v]));
    }
    const Status s = reducer.AllReduceBatch(values, op);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t v = 0; v < specs.size(); ++v) {
      double rtol = 0, atol = 0;
      SetTolerance(specs[v].first, &rtol, &atol);
      for (size_t i = 0; i < devices.size(); ++i) {
        Tensor back;
        ASSERT_TRUE(devices[i]->CopyToHost(on_gpu[v][i], &back).ok());
        EXPECT_TRUE(parity::Near(back, cpu[v][i], rtol, atol * 100))
            << ReductionName(op) << ", value " << v << ", tensor " << i;
      }
    }
  }
}

TEST(NcclAllReduceCudaTest, BatchFusesSmallValues) {
  TW_SKIP_WITHOUT_GPU();
  CheckBatch(MakeGpus(1, 2).devices);
  if (VisibleCudaGpuCount() >= 2) CheckBatch(MakeGpus(-1, 1).devices);
}

TEST(NcclAllReduceCudaTest, BadListsGiveCpuReducersErrors) {
  TW_SKIP_WITHOUT_GPU();
  Gpus g = MakeGpus(1, 2);
  ASSERT_EQ(g.devices.size(), 2u);
  NcclAllReducer nccl(g.devices);
  CpuAllReducer cpu(1);
  Tensor a(kFloat32, TensorShape{4}), b(kFloat32, TensorShape{5}), c(kFloat64, TensorShape{4});
  Tensor flags(kBool, TensorShape{4}), flags2(kBool, TensorShape{4}), none;
  const std::vector<std::vector<Tensor*>> bad = {{},       {&a, nullptr}, {&a, &none},
                                                 {&a, &b}, {&a, &c},      {&flags, &flags2}};
  for (size_t k = 0; k < bad.size(); ++k) {
    const Status want = cpu.AllReduce(bad[k]);
    const Status got = nccl.AllReduce(bad[k]);
    EXPECT_EQ(want.code(), Code::kInvalidArgument) << k << ": " << want.ToString();
    EXPECT_EQ(got, want) << k;
    const Status batch = nccl.AllReduceBatch({bad[k]});
    EXPECT_EQ(batch.code(), Code::kInvalidArgument) << k << ": " << batch.ToString();
  }
  // One tensor for two devices, and tensors in host memory.
  Tensor a2(kFloat32, TensorShape{4});
  EXPECT_EQ(nccl.AllReduce({&a}).code(), Code::kInvalidArgument);
  const Status host = nccl.AllReduce({&a, &a2});
  EXPECT_EQ(host.code(), Code::kInvalidArgument) << host.ToString();
  EXPECT_NE(host.message().find("not in the memory of"), std::string::npos) << host.ToString();
  EXPECT_TRUE(nccl.AllReduceBatch({}).ok());
}

}  // namespace
}  // namespace tw::train
