// The gradient bucket's block (internal/bucket_buffer.h), without MPI: slots
// at 64-byte aligned offsets, one buffer per slot at a time, every other
// request sent to the device's allocator, the in-place check, layouts that
// change, a failed reduction, and the block outliving its lender while its
// tensors live.
#include "towerflow/dist/internal/bucket_buffer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace tw::dist::internal {
namespace {

// A tensor of `n` floats made by `a` (as a producer's allocate_output).
Tensor Make(Allocator* a, int64_t n) {
  auto t = Tensor::Allocate(a, kFloat32, TensorShape{n});
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : Tensor();
}

std::vector<const Tensor*> Pointers(const std::vector<Tensor>& ts) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : ts) out.push_back(&t);
  return out;
}

// Sizes that leave gaps: 3 floats (12 bytes), 1001 (4004), 16 (64).
const std::vector<size_t> kBytes = {12, 4004, 64};
const std::vector<int64_t> kCounts = {3, 1001, 16};

TEST(BucketBufferTest, NothingIsLentBeforeTheFirstRun) {
  BucketLender lender("b");
  EXPECT_EQ(lender.SlotAllocator(0), nullptr);
  EXPECT_FALSE(lender.lending());
  Tensor t = Make(CpuAllocator(), 3);
  EXPECT_EQ(lender.Contiguous({&t}).data, nullptr);
}

TEST(BucketBufferTest, SlotsLayTheInputsEndToEndAndTheBlockIsReducedInPlace) {
  BucketLender lender("grads");
  lender.Observe(kBytes, sizeof(float), CpuAllocator());
  ASSERT_TRUE(lender.lending());
  EXPECT_EQ(lender.SlotAllocator(3), nullptr) << "past the inputs";
  std::vector<Tensor> in;
  for (int i = 0; i < 3; ++i) in.push_back(Make(lender.SlotAllocator(i), kCounts[static_cast<size_t>(i)]));
  const char* base = static_cast<const char*>(in[0].raw_data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(base) % kTensorAlignment, 0u);
  EXPECT_EQ(static_cast<const char*>(in[1].raw_data()) - base, 64);
  EXPECT_EQ(static_cast<const char*>(in[2].raw_data()) - base, 64 + 4032);
  EXPECT_NE(in[0].buffer()->allocator()->Name().find("bucket grads input 0"), std::string::npos);

  BucketLender::InPlace ip = lender.Contiguous(Pointers(in));
  ASSERT_NE(ip.data, nullptr);
  EXPECT_EQ(ip.data, base);
  EXPECT_EQ(ip.count, (64 + 4032 + 64) / 4);
  // The gaps hold zeros (they are reduced with the rest).
  const float* all = static_cast<const float*>(ip.data);
  for (int64_t i = 3; i < 16; ++i) EXPECT_EQ(all[i], 0.0f) << i;
  ip.keep.reset();

  // Another reference to an input: its caller does not hold it alone.
  Tensor shared = in[1];
  EXPECT_EQ(lender.Contiguous(Pointers(in)).data, nullptr);
  shared = Tensor();
  EXPECT_NE(lender.Contiguous(Pointers(in)).data, nullptr);
  // Fewer inputs than the layout's.
  EXPECT_EQ(lender.Contiguous({&in[0], &in[1]}).data, nullptr);
}

TEST(BucketBufferTest, ASlotServesOneBufferOfItsSizeAtATimeAndSendsTheRestToTheDevice) {
  BucketLender lender("b");
  lender.Observe(kBytes, sizeof(float), CpuAllocator());
  Allocator* slot = lender.SlotAllocator(1);
  Tensor first = Make(slot, 1001);
  Tensor second = Make(slot, 1001);  // the slot is taken: the device's memory
  Tensor other_size = Make(slot, 1000);
  EXPECT_NE(first.raw_data(), second.raw_data());
  std::vector<Tensor> in = {Make(lender.SlotAllocator(0), 3), second, Make(lender.SlotAllocator(2), 16)};
  EXPECT_EQ(lender.Contiguous(Pointers(in)).data, nullptr) << "input 1 is not in its slot";
  void* slot_data = first.raw_data();
  first = Tensor();  // frees the slot
  Tensor again = Make(slot, 1001);
  EXPECT_EQ(again.raw_data(), slot_data);
  in[1] = again;
  again = Tensor();
  EXPECT_NE(lender.Contiguous(Pointers(in)).data, nullptr);
}

TEST(BucketBufferTest, NewSizesMakeANewBlockAndTooManyStopLending) {
  BucketLender lender("b");
  lender.Observe(kBytes, sizeof(float), CpuAllocator());
  lender.Observe(kBytes, sizeof(float), CpuAllocator());
  EXPECT_EQ(lender.layouts(), 1) << "the same sizes keep the block";
  Allocator* old_slot = lender.SlotAllocator(0);
  Tensor held = Make(old_slot, 3);  // a producer's tensor from the old block
  lender.Observe({12, 8}, sizeof(float), CpuAllocator());
  EXPECT_EQ(lender.layouts(), 2);
  Tensor retired = Make(old_slot, 3);  // the old block serves nothing any more
  EXPECT_NE(retired.raw_data(), held.raw_data());
  std::vector<Tensor> in = {held, Make(lender.SlotAllocator(1), 2)};
  held = Tensor();
  EXPECT_EQ(lender.Contiguous(Pointers(in)).data, nullptr) << "input 0 is in the old block";
  for (int k = 3; k <= BucketLender::kMaxLayouts; ++k) lender.Observe({static_cast<size_t>(4 * k)}, 4, CpuAllocator());
  EXPECT_EQ(lender.layouts(), BucketLender::kMaxLayouts);
  EXPECT_TRUE(lender.lending());
  lender.Observe({400}, 4, CpuAllocator());
  EXPECT_FALSE(lender.lending());
  EXPECT_EQ(lender.SlotAllocator(0), nullptr);
}

// The layout depends on the sizes alone: a rank without memory for the
// block, or after a failed reduction, keeps it (and packs by it).
class NoMemory final : public Allocator {
 public:
  std::string Name() const override { return "none"; }
  void* Allocate(size_t) override { return nullptr; }
  void Deallocate(void*, size_t) override {}
  size_t BytesInUse() const override { return 0; }
};

TEST(BucketBufferTest, TheLayoutIsTheSizesAloneWhateverTheBlock) {
  NoMemory none;
  BucketLender lender("b");
  std::vector<size_t> offsets;
  size_t total = 0;
  EXPECT_FALSE(lender.Layout(kBytes, &offsets, &total));
  lender.Observe(kBytes, sizeof(float), &none);
  EXPECT_FALSE(lender.lending());
  ASSERT_TRUE(lender.Layout(kBytes, &offsets, &total));
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 64, 4096}));
  EXPECT_EQ(total, 4160u);
  EXPECT_FALSE(lender.Layout({12, 4004}, &offsets, &total)) << "other sizes";

  BucketLender failing("c");
  failing.Observe(kBytes, sizeof(float), CpuAllocator());
  EXPECT_TRUE(failing.lending());
  failing.Failed();
  EXPECT_FALSE(failing.lending());
  EXPECT_TRUE(failing.Layout(kBytes, &offsets, &total));
  failing.Observe({8}, sizeof(float), CpuAllocator());  // a new layout, still nothing lent
  EXPECT_FALSE(failing.lending());
  EXPECT_TRUE(failing.Layout({8}, &offsets, &total));
}

TEST(BucketBufferTest, AnEmptySlotThatIsNoLongerEmptyIsNotInPlace) {
  BucketLender lender("b");
  lender.Observe({0, 8}, sizeof(float), CpuAllocator());
  Tensor grown = Make(CpuAllocator(), 1);
  Tensor second = Make(lender.SlotAllocator(1), 2);
  EXPECT_EQ(lender.Contiguous({&grown, &second}).data, nullptr);
  Tensor empty = Make(CpuAllocator(), 0);
  EXPECT_NE(lender.Contiguous({&empty, &second}).data, nullptr);
}

TEST(BucketBufferTest, SizesThatAreNotWholeElementsAreNotLent) {
  BucketLender lender("b");
  lender.Observe({6}, sizeof(float), CpuAllocator());
  EXPECT_FALSE(lender.lending());
}

TEST(BucketBufferTest, AFailedReductionRetiresTheBlockAndItsMemoryOutlivesTheLender) {
  std::vector<Tensor> in;
  BucketLender::InPlace ip;
  {
    BucketLender lender("b");
    lender.Observe(kBytes, sizeof(float), CpuAllocator());
    for (int i = 0; i < 3; ++i) in.push_back(Make(lender.SlotAllocator(i), kCounts[static_cast<size_t>(i)]));
    ip = lender.Contiguous(Pointers(in));
    ASSERT_NE(ip.data, nullptr);
    lender.Failed();
    EXPECT_FALSE(lender.lending());
    EXPECT_EQ(lender.SlotAllocator(0), nullptr);
  }
  // The lender is gone: the call's hold and the tensors keep the block, and
  // writing to it is writing to live memory (ASan would say otherwise).
  std::memset(ip.data, 0, static_cast<size_t>(ip.count) * sizeof(float));
  for (Tensor& t : in) t.data<float>()[0] = 1.0f;
  in.clear();
  static_cast<float*>(ip.data)[0] = 2.0f;
  ip.keep.reset();
}

// Steps of one plan on several threads: each slot's bytes belong to one
// tensor at a time (the others get the device's memory), and a layout that
// changes meanwhile leaves every pointer the threads took valid.
TEST(BucketBufferTest, ThreadsTakingSlotsAtOnceNeverShareBytes) {
  BucketLender lender("b");
  lender.Observe(kBytes, sizeof(float), CpuAllocator());
  std::atomic<int> clashes{0}, served{0};
  auto run = [&](int thread) {
    for (int i = 0; i < 2000; ++i) {
      Allocator* slot = lender.SlotAllocator(1);
      if (slot == nullptr) continue;
      Tensor t = Make(slot, 1001);  // the slot's bytes, or the device's while another tensor holds them
      float* data = t.data<float>();
      data[0] = data[1000] = static_cast<float>(thread);
      std::this_thread::yield();
      if (data[0] != static_cast<float>(thread) || data[1000] != static_cast<float>(thread)) ++clashes;
      ++served;
      if (thread == 0 && i == 1000) lender.Observe({12, 4000, 64}, sizeof(float), CpuAllocator());
    }
  };
  std::thread a(run, 0), b(run, 1), c(run, 2);
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(clashes.load(), 0);
  EXPECT_GT(served.load(), 0);
}

}  // namespace
}  // namespace tw::dist::internal
