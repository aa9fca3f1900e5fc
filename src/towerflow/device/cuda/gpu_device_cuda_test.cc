// The CUDA device: the statuses of CUDA/cuBLAS/cuDNN/NCCL codes, the factory's
// options and its agreement with the fake GPUs (these run on every machine),
// then, on a GPU: the devices a DeviceSet lists, bit-exact host round trips of
// every dtype a GPU holds, device-to-device copies, the memory limit and its
// ResourceExhausted message, logical GPUs, poisoned blocks, and copies from
// several threads at once.
#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "towerflow/core/tensor.h"
#include "towerflow/device/cuda/cuda_status.h"
#include "towerflow/device/cuda/gpu_allocator.h"
#include "towerflow/device/cuda/gpu_device.h"
#include "towerflow/device/device_set.h"

#define TW_SKIP_WITHOUT_GPU()                                               \
  do {                                                                      \
    if (::tw::VisibleCudaGpuCount() == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)

namespace tw {
namespace {

using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;

// Random bits in every byte (bools: 0 or 1, the only valid values).
Tensor RandomHostTensor(DataType dtype, const TensorShape& shape, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  auto* bytes = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.TotalBytes(); ++i) {
    bytes[i] = static_cast<unsigned char>(dtype == kBool ? rng() & 1 : rng());
  }
  return t;
}

::testing::AssertionResult SameBits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure() << DataTypeName(a.dtype()) << a.shape().ToString() << " vs "
                                         << DataTypeName(b.dtype()) << b.shape().ToString();
  }
  if (a.TotalBytes() > 0 && std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) != 0) {
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

std::unique_ptr<GpuDevice> MakeGpu(size_t limit, int index = 0) {
  GpuDeviceConfig config;
  config.index = index;
  config.memory_limit = limit;
  auto device = GpuDevice::Create(config);
  EXPECT_TRUE(device.ok()) << device.status().ToString();
  return device.ok() ? std::move(device).value() : nullptr;
}

std::vector<GpuDevice*> GpusOf(const DeviceSet& set) {
  std::vector<GpuDevice*> gpus;
  for (const auto& d : set.devices()) {
    if (d->device_type() == kDeviceGpu) gpus.push_back(static_cast<GpuDevice*>(d.get()));
  }
  return gpus;
}

TEST(CudaStatusTest, MessagesCodesAndPaths) {
  EXPECT_TRUE(CudaStatus(cudaSuccess, "x", __FILE__, 1).ok());
  Status oom = CudaStatus(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "/work/t/src/towerflow/k/a_cuda.cu", 12);
  EXPECT_EQ(oom.code(), Code::kResourceExhausted);
  EXPECT_EQ(oom.message(), std::string("cudaMalloc(&p, n) failed at towerflow/k/a_cuda.cu:12: cudaErrorMemoryAllocation: ") +
                               cudaGetErrorString(cudaErrorMemoryAllocation));
  Status bad = CudaStatus(cudaErrorInvalidValue, "f()", "../src/towerflow/x.cc", 3);
  EXPECT_EQ(bad.code(), Code::kInternal);
  EXPECT_THAT(bad.message(), HasSubstr("f() failed at towerflow/x.cc:3: cudaErrorInvalidValue: "));
  // Only a whole "src/" directory is cut, the last one.
  EXPECT_THAT(CudaStatus(cudaErrorInvalidValue, "f()", "/a/mysrc/b.cu", 1).message(), HasSubstr("at /a/mysrc/b.cu:1"));
  EXPECT_THAT(CudaStatus(cudaErrorInvalidValue, "f()", "/a/src/b/src/c.cu", 1).message(), HasSubstr("at c.cu:1"));

  EXPECT_TRUE(CublasStatus(CUBLAS_STATUS_SUCCESS, "x", __FILE__, 1).ok());
  Status blas = CublasStatus(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate(&h)", __FILE__, 7);
  EXPECT_EQ(blas.code(), Code::kResourceExhausted);
  EXPECT_THAT(blas.message(), HasSubstr("cublasCreate(&h) failed at towerflow/device/cuda/gpu_device_cuda_test.cc:7: "
                                        "CUBLAS_STATUS_ALLOC_FAILED: "));
  EXPECT_EQ(CublasStatus(CUBLAS_STATUS_INVALID_VALUE, "x", __FILE__, 1).code(), Code::kInternal);

  EXPECT_TRUE(CudnnStatus(CUDNN_STATUS_SUCCESS, "x", __FILE__, 1).ok());
  EXPECT_EQ(CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "x", __FILE__, 1).code(),
            Code::kResourceExhausted);
  Status dnn = CudnnStatus(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED, "cudnnX()", __FILE__, 1);
  EXPECT_EQ(dnn.code(), Code::kResourceExhausted);
  EXPECT_THAT(dnn.message(), HasSubstr(cudnnGetErrorString(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)));
  EXPECT_EQ(CudnnStatus(CUDNN_STATUS_BAD_PARAM, "x", __FILE__, 1).code(), Code::kInternal);

  EXPECT_TRUE(NcclStatus(ncclSuccess, "x", __FILE__, 1).ok());
  Status nccl = NcclStatus(ncclSystemError, "ncclCommInitAll(...)", __FILE__, 1);
  EXPECT_EQ(nccl.code(), Code::kInternal);  // a failed system call, not memory
  EXPECT_THAT(nccl.message(), HasSubstr(ncclGetErrorString(ncclSystemError)));
}

TEST(CudaDeviceFactoryTest, BadOptionsAreInvalidArgumentOnEveryMachine) {
  for (const SessionOptions& options :
       {SessionOptions{.max_gpus = -2}, SessionOptions{.logical_gpus_per_gpu = 0},
        SessionOptions{.gpu_memory_limit_mb = -1}}) {
    auto set = DeviceSet::Create(options);
    ASSERT_FALSE(set.ok());
    EXPECT_EQ(set.status().code(), Code::kInvalidArgument) << set.status().ToString();
    EXPECT_THAT(set.status().message(), HasSubstr("SessionOptions."));
  }
}

// Runs with and without a GPU: GPU devices exist exactly when CUDA sees a GPU,
// and fake GPUs exist exactly when it does not.
TEST(CudaDeviceFactoryTest, RealAndFakeGpusNeverMix) {
  const int visible = VisibleCudaGpuCount();
  EXPECT_GE(visible, 0);
  EXPECT_EQ(VisibleCudaGpuCount(), visible);  // cached
  auto set = DeviceSet::Create({});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(static_cast<int>(GpusOf(**set).size()), visible);
  EXPECT_EQ((*set)->HasType(kDeviceGpu), visible > 0);
  auto no_gpus = DeviceSet::Create({.max_gpus = 0});
  ASSERT_TRUE(no_gpus.ok()) << no_gpus.status().ToString();
  EXPECT_EQ((*no_gpus)->device_types(), std::vector<std::string>{kDeviceCpu});

  auto fake = DeviceSet::Create({.num_fake_gpus = 2});
  if (visible == 0) {
    ASSERT_TRUE(fake.ok()) << fake.status().ToString();
    ASSERT_EQ((*fake)->num_devices(), 3);
    for (int i = 1; i < 3; ++i) {
      EXPECT_EQ((*fake)->devices()[i]->device_type(), kDeviceGpu);
      EXPECT_TRUE((*fake)->devices()[i]->host_memory());
    }
  } else {
    ASSERT_FALSE(fake.ok());
    EXPECT_EQ(fake.status().code(), Code::kInvalidArgument);
    EXPECT_THAT(fake.status().message(), HasSubstr("num_fake_gpus"));
  }
}

TEST(GpuDeviceTest, DeviceSetListsRealGpus) {
  TW_SKIP_WITHOUT_GPU();
  auto set = DeviceSet::Create({});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<GpuDevice*> gpus = GpusOf(**set);
  ASSERT_EQ(static_cast<int>(gpus.size()), VisibleCudaGpuCount());
  EXPECT_EQ((*set)->device_types().front(), kDeviceGpu);  // priority 210 over the CPU's 60
  for (size_t i = 0; i < gpus.size(); ++i) {
    GpuDevice* gpu = gpus[i];
    EXPECT_EQ(gpu->name(), LocalDeviceName(kDeviceGpu, static_cast<int>(i)));
    EXPECT_EQ(gpu->ordinal(), static_cast<int>(i));
    EXPECT_FALSE(gpu->host_memory());
    EXPECT_THAT(gpu->physical_description(), HasSubstr("device: " + std::to_string(i) + ", name: "));
    EXPECT_THAT(gpu->physical_description(), HasSubstr(", pci bus id: "));
    EXPECT_THAT(gpu->physical_description(), HasSubstr(", compute capability: "));
    EXPECT_GT(gpu->sm_count(), 0);
    EXPECT_NE(gpu->stream(), nullptr);
    EXPECT_NE(gpu->cublas(), nullptr);
    EXPECT_NE(gpu->cublas_lt(), nullptr);
    EXPECT_NE(gpu->cudnn().get(), nullptr);
    EXPECT_GT(gpu->gpu_allocator()->limit(), 0u);
    EXPECT_EQ(gpu->intra_op_threads(), 1);
    EXPECT_TRUE(gpu->Synchronize().ok());
  }
}

// A rank of a multi-process job opens its own GPU alone (visible_gpus): the
// listed ordinal becomes /device:GPU:0, and no other GPU is opened. On a
// machine of one GPU the list is the default one, and what this checks is the
// logical GPUs' numbering; with several, the last GPU renumbered as GPU:0.
TEST(GpuDeviceTest, VisibleGpusOpenTheListedGpuAsGpuZero) {
  TW_SKIP_WITHOUT_GPU();
  const int last = VisibleCudaGpuCount() - 1;
  auto set = DeviceSet::Create({.visible_gpus = {last}, .logical_gpus_per_gpu = 2});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<GpuDevice*> gpus = GpusOf(**set);
  ASSERT_EQ(gpus.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(gpus[static_cast<size_t>(i)]->name(), LocalDeviceName(kDeviceGpu, i));
    EXPECT_EQ(gpus[static_cast<size_t>(i)]->ordinal(), last);
  }
  auto bad = DeviceSet::Create({.visible_gpus = {last + 1}});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("visible_gpus[0]"));
}

TEST(GpuDeviceTest, HostRoundTripIsBitExact) {
  TW_SKIP_WITHOUT_GPU();
  auto gpu = MakeGpu(512 * kMiB);
  ASSERT_NE(gpu, nullptr);
  std::mt19937_64 rng(1);
  for (DataType dtype : {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool}) {
    for (int64_t n : {0, 1, 7, 33, 1000, 1 << 20}) {
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + "[" + std::to_string(n) + "]");
      Tensor host = RandomHostTensor(dtype, TensorShape{n}, rng);
      Tensor expected = host.DeepCopy();
      Tensor on_gpu, back;
      ASSERT_TRUE(gpu->CopyFromHost(host, &on_gpu).ok());
      // The source may be overwritten and freed as soon as the copy returns.
      if (host.TotalBytes() > 0) std::memset(host.raw_data(), 0x5A, host.TotalBytes());
      host = Tensor();
      EXPECT_EQ(on_gpu.dtype(), dtype);
      EXPECT_EQ(on_gpu.shape(), TensorShape{n});
      ASSERT_TRUE(gpu->CopyToHost(on_gpu, &back).ok());
      EXPECT_TRUE(SameBits(back, expected));
    }
  }
  Tensor matrix = RandomHostTensor(kFloat32, TensorShape{33, 7}, rng), on_gpu, back;
  ASSERT_TRUE(gpu->CopyFromHost(matrix, &on_gpu).ok());
  ASSERT_TRUE(gpu->CopyToHost(on_gpu, &back).ok());
  EXPECT_TRUE(SameBits(back, matrix));
  on_gpu = Tensor();
  EXPECT_EQ(gpu->gpu_allocator()->BytesInUse(), 0u);
  EXPECT_GE(gpu->gpu_allocator()->peak_bytes(), size_t{8} << 20);  // the int64[1<<20]
  EXPECT_TRUE(gpu->Synchronize().ok());
}

// StartCopyToHostMany: the values read when the copy was queued, whatever is
// queued on the device after it (a write over the source, its release and the
// reuse of its memory), each tensor at its own offset; waited for once.
TEST(GpuDeviceTest, StartedCopiesToTheHostReadTheValuesWhenQueued) {
  TW_SKIP_WITHOUT_GPU();
  auto gpu = MakeGpu(512 * kMiB);
  ASSERT_NE(gpu, nullptr);
  std::mt19937_64 rng(7);
  std::vector<Tensor> expected, on_gpu;
  for (auto [dtype, n] : std::vector<std::pair<DataType, int64_t>>{
           {kFloat32, 1}, {kInt64, 1}, {kFloat32, 0}, {kUInt8, 33}, {kFloat64, 1 << 20}}) {
    Tensor host = RandomHostTensor(dtype, TensorShape{n}, rng), t;
    ASSERT_TRUE(gpu->CopyFromHost(host, &t).ok());
    expected.push_back(host);
    on_gpu.push_back(t);
  }
  std::vector<Tensor> back;
  auto pending = gpu->StartCopyToHostMany(on_gpu, &back);
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  ASSERT_EQ(back.size(), expected.size());
  // Queued after the copies: overwrite the last source, then release them all
  // and fill new blocks (likely the same memory) with other bits.
  Tensor junk = RandomHostTensor(kFloat64, TensorShape{1 << 20}, rng), junk_on_gpu;
  ASSERT_TRUE(gpu->CopyFromHost(junk, &junk_on_gpu).ok());
  ASSERT_TRUE(gpu->CopyOnDevice(junk_on_gpu.raw_data(), on_gpu.back().raw_data(), junk.TotalBytes()).ok());
  on_gpu.clear();
  std::vector<Tensor> reuse(4);
  for (Tensor& r : reuse) ASSERT_TRUE(gpu->CopyFromHost(junk, &r).ok());
  ASSERT_TRUE((*pending)->Wait().ok());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_TRUE(SameBits(back[i], expected[i])) << i;
  EXPECT_FALSE((*pending)->Wait().ok()) << "waited for twice";
  // One never waited for is dropped safely.
  std::vector<Tensor> dropped;
  auto abandoned = gpu->StartCopyToHostMany(reuse, &dropped);
  ASSERT_TRUE(abandoned.ok());
  abandoned->reset();
  EXPECT_TRUE(gpu->Synchronize().ok());
}

TEST(GpuDeviceTest, CopyOnDevice) {
  TW_SKIP_WITHOUT_GPU();
  auto gpu = MakeGpu(64 * kMiB);
  ASSERT_NE(gpu, nullptr);
  std::mt19937_64 rng(2);
  for (int64_t n : {1, 7, 33, 1000, 1 << 20}) {
    Tensor host = RandomHostTensor(kFloat64, TensorShape{n}, rng), src, back;
    ASSERT_TRUE(gpu->CopyFromHost(host, &src).ok());
    auto dst = Tensor::Allocate(gpu->allocator(), kFloat64, TensorShape{n});
    ASSERT_TRUE(dst.ok());
    ASSERT_TRUE(gpu->CopyOnDevice(src.raw_data(), dst->raw_data(), src.TotalBytes()).ok());
    src = Tensor();  // freed stream-ordered, after the copy
    ASSERT_TRUE(gpu->CopyToHost(*dst, &back).ok());
    EXPECT_TRUE(SameBits(back, host)) << n;
  }
  EXPECT_TRUE(gpu->CopyOnDevice(nullptr, nullptr, 0).ok());
}

TEST(GpuDeviceTest, AllocationPastTheLimitIsResourceExhausted) {
  TW_SKIP_WITHOUT_GPU();
  auto set = DeviceSet::Create({.logical_gpus_per_gpu = 2, .gpu_memory_limit_mb = 64});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<GpuDevice*> gpus = GpusOf(**set);
  ASSERT_GE(gpus.size(), 2u);
  GpuAllocator* a = gpus[0]->gpu_allocator();
  GpuAllocator* b = gpus[1]->gpu_allocator();
  ASSERT_EQ(a->limit(), 64 * kMiB);
  EXPECT_EQ(a->Allocate(64 * kMiB + 1), nullptr);
  EXPECT_EQ(a->BytesInUse(), 0u);
  void* p = a->Allocate(40 * kMiB);
  void* q = a->Allocate(24 * kMiB);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kTensorAlignment, 0u);
  EXPECT_EQ(a->Allocate(1), nullptr);  // exactly at the limit
  EXPECT_EQ(a->BytesInUse(), 64 * kMiB);
  // The other logical GPU of the same physical one has a limit of its own.
  void* r = b->Allocate(60 * kMiB);
  EXPECT_NE(r, nullptr);
  b->Deallocate(r, 60 * kMiB);

  auto big = Tensor::Allocate(a, kFloat32, TensorShape{1024, 1024});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("float[1024,1024] (1048576 elements, 4194304 bytes) on GPU:0"));
  EXPECT_THAT(big.status().message(), HasSubstr("limit 64.0 MiB"));
  EXPECT_THAT(big.status().message(), HasSubstr(std::to_string(64 * kMiB) + " bytes in use"));
  EXPECT_THAT(a->Describe(), HasSubstr("GPU:0 (ordinal 0): 64.0 MiB in use of a 64.0 MiB limit, peak 64.0 MiB"));
  a->Deallocate(p, 40 * kMiB);
  a->Deallocate(q, 24 * kMiB);
  EXPECT_EQ(a->BytesInUse(), 0u);
  EXPECT_EQ(a->peak_bytes(), 64 * kMiB);
  void* zero1 = a->Allocate(0);
  void* zero2 = a->Allocate(0);
  EXPECT_NE(zero1, nullptr);
  EXPECT_NE(zero1, zero2);
  a->Deallocate(zero1, 0);
  a->Deallocate(zero2, 0);
  EXPECT_EQ(a->BytesInUse(), 0u);
  EXPECT_TRUE(gpus[0]->Synchronize().ok());
}

TEST(GpuDeviceTest, LogicalGpus) {
  TW_SKIP_WITHOUT_GPU();
  auto set = DeviceSet::Create({.logical_gpus_per_gpu = 2, .gpu_memory_limit_mb = 256});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<GpuDevice*> gpus = GpusOf(**set);
  ASSERT_EQ(static_cast<int>(gpus.size()), 2 * VisibleCudaGpuCount());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(gpus[i]->name(), LocalDeviceName(kDeviceGpu, i));
    EXPECT_EQ(gpus[i]->ordinal(), 0);
    EXPECT_EQ(gpus[i]->config().logical_index, i);
    EXPECT_EQ(gpus[i]->gpu_allocator()->limit(), 256 * kMiB);
    EXPECT_THAT(gpus[i]->physical_description(), HasSubstr(", logical " + std::to_string(i + 1) + " of 2"));
  }
  EXPECT_NE(gpus[0]->stream(), gpus[1]->stream());
  EXPECT_NE(gpus[0]->cublas(), gpus[1]->cublas());
  // Each copies on its own streams; data stays apart.
  std::mt19937_64 rng(3);
  Tensor x = RandomHostTensor(kInt32, TensorShape{1000}, rng), y = RandomHostTensor(kInt32, TensorShape{1000}, rng);
  Tensor gx, gy, bx, by;
  ASSERT_TRUE(gpus[0]->CopyFromHost(x, &gx).ok());
  ASSERT_TRUE(gpus[1]->CopyFromHost(y, &gy).ok());
  ASSERT_TRUE(gpus[1]->CopyToHost(gy, &by).ok());
  ASSERT_TRUE(gpus[0]->CopyToHost(gx, &bx).ok());
  EXPECT_TRUE(SameBits(bx, x));
  EXPECT_TRUE(SameBits(by, y));

  auto too_big = DeviceSet::Create({.logical_gpus_per_gpu = 2, .gpu_memory_limit_mb = int64_t{1} << 30});
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), Code::kInvalidArgument);
  EXPECT_THAT(too_big.status().message(), HasSubstr("gpu_memory_limit_mb"));
}

// GPU to GPU without the host: between logical GPUs of one physical GPU (and
// physical GPUs, when there are two), ordered after the work that produced the
// source; the source may be freed and its memory reused at once.
TEST(GpuDeviceTest, CopiesBetweenGpusWithoutTheHost) {
  TW_SKIP_WITHOUT_GPU();
  auto set = DeviceSet::Create({.logical_gpus_per_gpu = 2, .gpu_memory_limit_mb = 256});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  std::vector<GpuDevice*> gpus = GpusOf(**set);
  std::mt19937_64 rng(11);
  std::vector<std::pair<int, int>> pairs = {{0, 1}, {1, 0}};
  if (gpus.size() >= 4) pairs.push_back({0, 2});  // two physical GPUs: peer to peer
  for (auto [from, to] : pairs) {
    SCOPED_TRACE(gpus[from]->name() + " -> " + gpus[to]->name());
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{1} << 20}) {
      Tensor x = RandomHostTensor(kFloat32, TensorShape{n}, rng);
      Tensor on_from, on_to, back;
      ASSERT_TRUE(gpus[from]->CopyFromHost(x, &on_from).ok());
      ASSERT_TRUE(gpus[from]->CopyToPeer(on_from, gpus[to], &on_to).ok());
      if (n > 0) {
        EXPECT_EQ(on_to.buffer()->allocator(), gpus[to]->allocator());
      }
      // The source goes at once; a new tensor may reuse its memory.
      on_from = Tensor();
      Tensor reuse;
      ASSERT_TRUE(gpus[from]->CopyFromHost(RandomHostTensor(kFloat32, TensorShape{n}, rng), &reuse).ok());
      ASSERT_TRUE(gpus[to]->CopyToHost(on_to, &back).ok());
      EXPECT_TRUE(SameBits(back, x)) << n;
    }
  }
  Tensor s(kString, TensorShape{1}), out;
  Status strings = gpus[0]->CopyToPeer(s, gpus[1], &out);
  EXPECT_EQ(strings.code(), Code::kInvalidArgument);
  EXPECT_EQ(gpus[0]->CopyToPeer(Tensor(kFloat32, TensorShape{1}), set.value()->client_device(), &out).code(),
            Code::kUnimplemented);
}

TEST(GpuDeviceTest, PoisonFillsNewBlocksWithOnes) {
  TW_SKIP_WITHOUT_GPU();
  setenv("TOWERFLOW_GPU_POISON", "1", 1);
  auto gpu = MakeGpu(64 * kMiB);
  unsetenv("TOWERFLOW_GPU_POISON");
  ASSERT_NE(gpu, nullptr);
  for (int64_t n : {1, 33, 1000}) {
    auto t = Tensor::Allocate(gpu->allocator(), kFloat32, TensorShape{n});
    ASSERT_TRUE(t.ok());
    Tensor back;
    ASSERT_TRUE(gpu->CopyToHost(*t, &back).ok());
    const auto* bytes = static_cast<const unsigned char*>(back.raw_data());
    for (size_t i = 0; i < back.TotalBytes(); ++i) ASSERT_EQ(bytes[i], 0xFF) << "byte " << i << " of " << n;
    EXPECT_TRUE(std::isnan(back.data<float>()[0]));
  }
}

TEST(GpuDeviceTest, StringsAndEmptyTensors) {
  TW_SKIP_WITHOUT_GPU();
  auto gpu = MakeGpu(16 * kMiB);
  ASSERT_NE(gpu, nullptr);
  Tensor strings(kString, TensorShape{2}), out;
  Status s = gpu->CopyFromHost(strings, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(gpu->name()));
  EXPECT_FALSE(out.IsInitialized());
  Tensor empty(kInt64, TensorShape{0, 3}), on_gpu, back;
  ASSERT_TRUE(gpu->CopyFromHost(empty, &on_gpu).ok());
  ASSERT_TRUE(gpu->CopyToHost(on_gpu, &back).ok());
  EXPECT_EQ(back.dtype(), kInt64);
  EXPECT_EQ(back.shape(), (TensorShape{0, 3}));
}

TEST(GpuDeviceTest, CopiesFromManyThreads) {
  TW_SKIP_WITHOUT_GPU();
  auto gpu = MakeGpu(256 * kMiB);
  ASSERT_NE(gpu, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      for (int i = 0; i < 50; ++i) {
        const int64_t n = static_cast<int64_t>(rng() % 300000);
        Tensor host = RandomHostTensor(kFloat32, TensorShape{n}, rng), on_gpu, back;
        if (!gpu->CopyFromHost(host, &on_gpu).ok() || !gpu->CopyToHost(on_gpu, &back).ok() ||
            !SameBits(back, host)) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(gpu->gpu_allocator()->BytesInUse(), 0u);
}

}  // namespace
}  // namespace tw
