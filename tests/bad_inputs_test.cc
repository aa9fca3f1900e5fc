// Bad inputs (issue 8, item 3): one test per class of input that broke
// TensorFlow and its peers (../shared/reference/bad-inputs.md, table A1), each
// running the real ops through a Session, or the real file readers, on the bad
// input. Each checks the error code, that the message names what a user acts on
// (node and op, key, file, offset, shapes), that nothing crashes, and, for sizes,
// that nothing is allocated beyond what the input justifies: such cases run in a
// forked child whose address space may grow by only kChildBudget bytes, so an
// attempt to allocate a declared size fails the case (or kills the child) instead
// of passing unnoticed, and a crash of one case is reported instead of ending the
// binary. Most classes are covered in depth next to the code; each test names
// where, and keeps a compact case here so that this file lists every class.
// (One file past 1000 lines on purpose: it is the checklist of bad-inputs.md,
// read in one place; each TEST is one class.)
//
// Classes of bad-inputs.md that do not apply to towerflow:
// - A1 #6 (row_splits / partitions inconsistent with values): towerflow has no
//   ragged tensors and no op that takes user-supplied sparse indices or
//   row_splits; VarLenFeature's sparse triple is produced by the parser itself
//   (its consistency is checked in data/example_parser_test.cc, VarLenFeatures).
// - A1 #10 (malformed TensorProto): towerflow parses no TensorProto or GraphDef;
//   tensors are built through Tensor's constructors, which validate shape and
//   dtype. The nearest inputs, an uninitialized tensor fed or made a constant and
//   a default value of the wrong dtype, are in MalformedTensorsAreRejected.
// - A1 #9, DatasetToTFRecord and string -> float16 conversion: towerflow has no
//   tf.data and no float16; the type confusions it can meet are in
//   TypeConfusionInRecords.
// - A1 #14 (Snappy): towerflow reads only uncompressed, ZLIB and GZIP records;
//   the decompressor class is covered with ZLIB and GZIP in
//   TruncatedOrCorruptCompressedStreams.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "towerflow/data/crc32c.h"
#include "towerflow/data/register.h"
#include "towerflow/towerflow.h"

namespace tw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kI32Max = 2147483647;
constexpr int64_t k2p31 = int64_t{1} << 31;
constexpr int64_t k2p62 = int64_t{1} << 62;

// ---- Checking errors ---------------------------------------------------------

// "" when `s` has `code` and every part in its message; otherwise what differs.
// (A string rather than gtest assertions, so that forked children report too.)
std::string Mismatch(const Status& s, Code code, std::initializer_list<std::string_view> parts) {
  std::string why;
  if (s.code() != code) why += StrCat("code ", CodeName(s.code()), " instead of ", CodeName(code), ";");
  for (std::string_view p : parts) {
    if (s.message().find(p) == std::string::npos) why += StrCat(" no '", p, "';");
  }
  return why.empty() ? why : why + " in: " + s.ToString();
}
#define EXPECT_ERROR(status, code, ...) EXPECT_EQ(Mismatch((status), (code), {__VA_ARGS__}), "")

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- Running a case with bounded memory -------------------------------------

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// What a child may map beyond what it had at fork: thread stacks and one malloc
// arena for the session it creates, and the few MB the inputs justify. Declared
// sizes in the cases below are larger (3 GiB and more), so allocating one fails.
constexpr size_t kChildBudget = size_t{1} << 30;

size_t VirtualMemoryBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  statm >> pages;
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// Runs `body` (which returns "" on success, else what went wrong) in a forked
// child whose address space is capped at its size at fork + kChildBudget, with
// one malloc arena so that threads do not reserve 64 MB each. Fails with the
// body's text, the signal that ended the child, or a timeout (60 s) after which
// the child is killed. Sanitizer builds reserve terabytes of shadow memory, so
// there the body runs in-process and only its checks apply.
::testing::AssertionResult InBoundedChild(const std::function<std::string()>& body) {
  if (kSanitized) {
    const std::string why = body();
    if (why.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << why;
  }
  int fds[2];
  if (pipe(fds) != 0) return ::testing::AssertionFailure() << "pipe: " << std::strerror(errno);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  if (pid == 0) {
    close(fds[0]);
    mallopt(M_ARENA_MAX, 1);
    const rlim_t limit = VirtualMemoryBytes() + kChildBudget;
    rlimit rl{limit, limit};
    std::string why = setrlimit(RLIMIT_AS, &rl) == 0 ? body() : "setrlimit failed";
    if (!why.empty() && write(fds[1], why.data(), why.size()) < 0) why = "write failed";
    _exit(why.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  const Clock::time_point start = Clock::now();
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, 200);
    if (r > 0) {
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof(buf));
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    if (SecondsSince(start) > 60) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) return ::testing::AssertionFailure() << "the case hung (killed after 60 s): " << text;
  if (WIFSIGNALED(status)) {
    return ::testing::AssertionFailure() << "the case crashed with signal " << WTERMSIG(status) << " ("
                                         << strsignal(WTERMSIG(status)) << ") " << text;
  }
  if (WEXITSTATUS(status) != 0) return ::testing::AssertionFailure() << text;
  return ::testing::AssertionSuccess();
}

// ---- Files ---------------------------------------------------------------------

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteBytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return out;
}
std::string Le32(uint32_t v) { return Le64(v).substr(0, 4); }

// A TFRecord header declaring `length` bytes, with a valid length CRC: the
// crafted case the CRC cannot catch.
std::string RecordHeader(uint64_t length) {
  const std::string len = Le64(length);
  return len + Le32(MaskCrc(Crc32cValue(len)));
}
std::string Record(std::string_view data) {
  return RecordHeader(data.size()) + std::string(data) + Le32(MaskCrc(Crc32cValue(data)));
}

std::string Deflate(std::string_view bytes, bool gzip) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, gzip ? 31 : 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, bytes.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// ---- tf.train.Example wire bytes (no libprotobuf needed) -------------------------

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7f) | 0x80);
  return out + static_cast<char>(v);
}
std::string Len(uint32_t field, const std::string& payload) {
  return Varint(field << 3 | 2) + Varint(payload.size()) + payload;
}
// Feature's oneof: 1 bytes_list, 2 float_list, 3 int64_list; each list's values
// are field 1 (packed for numbers).
std::string FloatFeature(const std::vector<float>& v) {
  std::string packed(v.size() * 4, '\0');
  if (!v.empty()) std::memcpy(packed.data(), v.data(), packed.size());
  return Len(2, Len(1, packed));
}
std::string Int64Feature(const std::vector<int64_t>& v) {
  std::string packed;
  for (int64_t x : v) packed += Varint(static_cast<uint64_t>(x));
  return Len(3, Len(1, packed));
}
std::string BytesFeature(const std::vector<std::string>& v) {
  std::string list;
  for (const std::string& s : v) list += Len(1, s);
  return Len(1, list);
}
// Example { Features { map<string, Feature> feature = 1 } = 1 }.
std::string ExampleOf(const std::vector<std::pair<std::string, std::string>>& features) {
  std::string entries;
  for (const auto& [key, feature] : features) entries += Len(1, Len(1, key) + Len(2, feature));
  return Len(1, entries);
}

// ---- The fixture -----------------------------------------------------------------

Tensor I32(std::vector<int32_t> v) { return Tensor::Vec<int32_t>(v); }
Tensor F32(std::vector<float> v, TensorShape shape) { return Tensor::FromVector<float>(v, shape); }
Tensor Strings(std::vector<std::string> v) { return Tensor::Vec<std::string>(v); }

class BadInputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureDataRegistered();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ =
        (fs::path(::testing::TempDir()) / StrCat("tw_bad_inputs_", info->name(), "_", ::getpid())).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  // A placeholder of unknown shape, so that only the kernel checks what is fed.
  Output P(const std::string& name, DataType dtype) { return Placeholder(root_.WithOpName(name), dtype); }
  Scope Op(const std::string& name) { return root_.WithOpName(name); }

  // Runs `fetch` with `feeds` in one session shared by the test's cases (nodes
  // built after its creation are placed by the run that first needs them). A
  // bad case must not disturb the next one.
  StatusOr<Tensor> Run(const FeedList& feeds, const Output& fetch) {
    if (!root_.ok()) return root_.status();
    auto out = S().Run(feeds, {fetch});
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  Status RunStatus(const FeedList& feeds, const Output& fetch) { return Run(feeds, fetch).status(); }
  Session& S() {
    if (!session_)
      session_ =
          std::make_unique<Session>(graph_, SessionOptions{.inter_op_threads = 1, .intra_op_threads = 1});
    return *session_;
  }

  // As Run, in a fresh session of its own (for forked children).
  static StatusOr<Tensor> RunFresh(Graph& graph, const FeedList& feeds, const Output& fetch) {
    Session session(graph, SessionOptions{.inter_op_threads = 1, .intra_op_threads = 1});
    auto out = session.Run(feeds, {fetch});
    if (!out.ok()) return out.status();
    return (*out)[0];
  }

  std::string dir_;
  Graph graph_;
  Scope root_{graph_};
  std::unique_ptr<Session> session_;
};

// A1 #1. A scalar was expected and a vector came (or the reverse): TF called
// .scalar<T>() unchecked and CHECK-failed. Every kernel that reads a scalar or a
// vector argument checks its rank first. In depth: parse_example_op_test.cc
// (SerializedOfTheWrongRankIsInvalidArgument), shape_kernels_test.cc.
TEST_F(BadInputsTest, RankMismatch) {
  auto dims = P("dims", kInt32);
  auto value = P("value", kFloat32);
  auto fill = Fill(Op("fill"), dims, value);
  auto x = P("x", kFloat32);
  auto shape = P("shape", kInt32);
  auto reshape = Reshape(Op("reshape"), x, shape);
  auto y = P("y", kFloat32);
  auto matmul = MatMul(Op("matmul"), x, y);
  auto axis = P("axis", kInt32);
  auto argmax = NodeBuilder(Op("argmax"), "ArgMax").Input(x).Input(axis).Finalize();
  auto expand = NodeBuilder(Op("expand"), "ExpandDims").Input(x).Input(axis).Finalize();
  auto sum = SumOverAxes(Op("sum"), x, axis);
  auto concat = NodeBuilder(Op("concat"), "ConcatV2").Inputs({x, y}).Input(axis).Finalize();
  auto serialized = P("serialized", kString);
  auto single = io::ParseSingleExample(Op("parse_single"), serialized, {{"a", io::FixedLenFeature(kInt64)}});
  auto batch = io::ParseExample(Op("parse"), serialized, {{"a", io::FixedLenFeature(kInt64)}});
  auto labels = P("labels", kInt32);
  auto sparse_xent = SparseSoftmaxCrossEntropyWithLogits(Op("sparse_xent"), x, labels);
  auto bias_add = BiasAdd(Op("bias_add"), x, y);
  auto queue = io::FIFOQueue(Op("q"), 10, {kFloat32}, {.shapes = {TensorShape{}}});
  auto n = P("n", kInt32);
  auto dequeue_many = queue.DequeueMany(Op("dequeue_many"), n);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const Tensor m22 = F32({1, 2, 3, 4}, TensorShape{2, 2});

  EXPECT_ERROR(RunStatus({{dims, I32({2})}, {value, F32({1, 2}, TensorShape{2})}}, fill),
               Code::kInvalidArgument, "'fill' (Fill)", "value must be a scalar, got shape [2]");
  EXPECT_ERROR(RunStatus({{dims, Tensor::Scalar<int32_t>(2)}, {value, Tensor::Scalar<float>(1)}}, fill),
               Code::kInvalidArgument, "'fill' (Fill)", "dims must be an int32 vector");
  EXPECT_ERROR(RunStatus({{x, m22}, {shape, Tensor::FromVector<int32_t>({4}, TensorShape{1, 1})}}, reshape),
               Code::kInvalidArgument, "'reshape' (Reshape)", "shape must be an int32 vector");
  EXPECT_ERROR(RunStatus({{x, F32({1, 2}, TensorShape{2})}, {y, m22}}, matmul), Code::kInvalidArgument,
               "'matmul' (MatMul)", "rank-2", "[2]", "[2,2]");
  EXPECT_ERROR(RunStatus({{x, m22}, {axis, I32({0, 1})}}, Output(argmax)), Code::kInvalidArgument,
               "'argmax' (ArgMax)", "must be a scalar, got shape [2]");
  EXPECT_ERROR(RunStatus({{x, m22}, {axis, I32({0, 1})}}, Output(expand)), Code::kInvalidArgument,
               "'expand' (ExpandDims)", "must be one int32");
  EXPECT_ERROR(RunStatus({{x, m22}, {axis, Tensor::FromVector<int32_t>({0}, TensorShape{1, 1})}}, sum),
               Code::kInvalidArgument, "'sum' (Sum)", "must be a scalar or vector, got shape [1,1]");
  EXPECT_ERROR(RunStatus({{x, m22}, {y, m22}, {axis, I32({0, 0})}}, Output(concat)), Code::kInvalidArgument,
               "'concat' (ConcatV2)", "axis must be one int32");
  EXPECT_ERROR(RunStatus({{serialized, Strings({"", ""})}}, single["a"]), Code::kInvalidArgument,
               "'parse_single' (ParseSingleExample)", "Expected serialized to be a scalar, got shape: [2]");
  EXPECT_ERROR(RunStatus({{serialized, Tensor::String("")}}, batch["a"]), Code::kInvalidArgument,
               "'parse' (ParseExample)", "Expected serialized to be a vector, got shape: []");
  EXPECT_ERROR(RunStatus({{x, m22}, {labels, Tensor::FromVector<int32_t>({0, 1}, TensorShape{2, 1})}},
                         sparse_xent.loss),
               Code::kInvalidArgument, "'sparse_xent' (SparseSoftmaxCrossEntropyWithLogits)", "[2,1]");
  EXPECT_ERROR(RunStatus({{x, m22}, {y, m22}}, bias_add), Code::kInvalidArgument, "'bias_add' (BiasAdd)",
               "[2,2]");
  EXPECT_ERROR(RunStatus({{n, I32({1, 2})}}, dequeue_many[0]), Code::kInvalidArgument,
               "'dequeue_many' (QueueDequeueMany", "n must be a scalar, got shape [2]");
  // Right ranks work in the same session afterwards.
  auto ok = Run({{dims, I32({2})}, {value, Tensor::Scalar<float>(7)}}, fill);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->ToVector<float>(), (std::vector<float>{7, 7}));
}

// A1 #2. Empty tensors and zero-sized dimensions: TF dereferenced null and
// divided by zero. Every op here gives an empty result, or an InvalidArgument
// where the result is undefined. In depth: decode_raw_test.cc (EmptyInputs),
// example_parser_test.cc (ZeroSizedShapesAndWireTypeMismatchInABatch).
TEST_F(BadInputsTest, ZeroSizeDimensions) {
  auto dims = P("dims", kInt32);
  auto fill = Fill(Op("fill"), dims, Const(root_, 1.0f));
  auto x = P("x", kFloat32);
  auto y = P("y", kFloat32);
  auto shape = P("shape", kInt32);
  auto reshape = Reshape(Op("reshape"), x, shape);
  auto matmul = MatMul(Op("matmul"), x, y);
  auto xi = P("xi", kInt32);
  auto mean_i = Mean(Op("mean_i"), xi, {0});
  auto mean_f = Mean(Op("mean_f"), x, {0});
  auto max = Max(Op("max"), x, {1});
  auto argmax = ArgMax(Op("argmax"), x, 1);
  auto softmax = Softmax(Op("softmax"), x);
  auto xent = SoftmaxCrossEntropyWithLogits(Op("xent"), x, y);
  auto labels = P("labels", kInt32);
  auto sparse_xent = SparseSoftmaxCrossEntropyWithLogits(Op("sparse_xent"), x, labels);
  auto pool = MaxPool(Op("pool"), x);
  auto conv = Conv2D(Op("conv"), x, y);
  auto bytes = P("bytes", kString);
  auto decode = io::DecodeRaw(Op("decode"), bytes, kFloat32);
  auto concat = Concat(Op("concat"), {x, y}, 0);
  auto l2 = L2Loss(Op("l2"), x);
  auto serialized = P("serialized", kString);
  auto parsed =
      io::ParseExample(Op("parse"), serialized, {{"e", io::FixedLenFeature(kFloat32, TensorShape{2, 0})}});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const Tensor empty03(kFloat32, TensorShape{0, 3});
  const Tensor empty20(kFloat32, TensorShape{2, 0});

  auto filled = Run({{dims, I32({0, 3})}}, fill);
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  EXPECT_EQ(filled->shape(), TensorShape({0, 3}));
  // Inferring a dimension from 0 elements divides by zero unless refused.
  EXPECT_ERROR(RunStatus({{x, empty03}, {shape, I32({-1, 0})}}, reshape), Code::kInvalidArgument,
               "'reshape' (Reshape)", "[0,3]");
  EXPECT_ERROR(RunStatus({{x, empty03}, {shape, I32({0, -1})}}, reshape), Code::kInvalidArgument,
               "'reshape' (Reshape)", "[0,3]");
  auto reshaped = Run({{x, empty03}, {shape, I32({3, 0, 7})}}, reshape);
  ASSERT_TRUE(reshaped.ok()) << reshaped.status().ToString();
  EXPECT_EQ(reshaped->shape(), TensorShape({3, 0, 7}));
  auto mm = Run({{x, empty03}, {y, Tensor(kFloat32, TensorShape{3, 4})}}, matmul);
  ASSERT_TRUE(mm.ok()) << mm.status().ToString();
  EXPECT_EQ(mm->shape(), TensorShape({0, 4}));
  auto inner0 = Run({{x, empty20}, {y, Tensor(kFloat32, TensorShape{0, 3})}}, matmul);  // an empty sum: zeros
  ASSERT_TRUE(inner0.ok()) << inner0.status().ToString();
  EXPECT_EQ(inner0->ToVector<float>(), std::vector<float>(6, 0.0f));
  // The mean of nothing: integers must not divide by zero (SIGFPE).
  auto mi = Run({{xi, Tensor(kInt32, TensorShape{0, 3})}}, mean_i);
  ASSERT_TRUE(mi.ok()) << mi.status().ToString();
  EXPECT_EQ(mi->ToVector<int32_t>(), (std::vector<int32_t>{0, 0, 0}));
  auto mf = Run({{x, empty03}}, mean_f);
  ASSERT_TRUE(mf.ok()) << mf.status().ToString();
  EXPECT_TRUE(std::isnan(mf->flat<float>()[0]));
  auto mx = Run({{x, empty20}}, max);
  ASSERT_TRUE(mx.ok()) << mx.status().ToString();
  EXPECT_EQ(mx->shape(), TensorShape({2}));
  EXPECT_ERROR(RunStatus({{x, empty20}}, argmax), Code::kInvalidArgument, "'argmax' (ArgMax)",
               "empty dimension", "[2,0]");
  auto sm = Run({{x, empty20}}, softmax);
  ASSERT_TRUE(sm.ok()) << sm.status().ToString();
  EXPECT_EQ(sm->shape(), TensorShape({2, 0}));
  auto xe = Run({{x, empty20}, {y, empty20}}, xent.loss);
  ASSERT_TRUE(xe.ok()) << xe.status().ToString();
  EXPECT_EQ(xe->shape(), TensorShape({2}));
  // No class is a valid label when there are no classes.
  EXPECT_ERROR(RunStatus({{x, empty20}, {labels, I32({0, 0})}}, sparse_xent.loss), Code::kInvalidArgument,
               "'sparse_xent' (SparseSoftmaxCrossEntropyWithLogits)");
  const Tensor image0(kFloat32, TensorShape{1, 0, 0, 1});
  Status pooled = RunStatus({{x, image0}}, pool);
  EXPECT_TRUE(pooled.ok() || errors::IsInvalidArgument(pooled)) << pooled.ToString();
  Status convolved = RunStatus({{x, image0}, {y, Tensor(kFloat32, TensorShape{1, 1, 1, 1})}}, conv);
  EXPECT_TRUE(convolved.ok() || errors::IsInvalidArgument(convolved)) << convolved.ToString();
  auto decoded = Run({{bytes, Strings({"", ""})}}, decode);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->shape(), TensorShape({2, 0}));
  auto joined = Run({{x, empty03}, {y, empty03}}, concat);
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(joined->shape(), TensorShape({0, 3}));
  auto l2v = Run({{x, empty03}}, l2);
  ASSERT_TRUE(l2v.ok()) << l2v.status().ToString();
  EXPECT_EQ(l2v->scalar<float>(), 0.0f);
  // FixedLenFeature of shape [2, 0] (TF divided by zero for [0]): no values parse;
  // any value is one too many.
  auto none = Run({{serialized, Strings({ExampleOf({{"e", FloatFeature({})}})})}}, parsed["e"]);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->shape(), TensorShape({1, 2, 0}));
  EXPECT_ERROR(RunStatus({{serialized, Strings({ExampleOf({{"e", FloatFeature({1})}})})}}, parsed["e"]),
               Code::kInvalidArgument, "'parse' (ParseExample)", "Key: e",
               "Values size: 1 but output shape: [2,0]");
}

// A1 #3. A dimension product that overflows int64 while a shape is built: TF's
// TensorShape CHECK-failed. Shapes from data go through TensorShape::Make, and
// output shapes computed from valid input shapes are checked too: a zero
// dimension makes a tensor of [2^31, 2^31, 1, 0] valid (and empty), yet the
// broadcast, reduction or concatenation of such tensors can name an output
// whose leading dimensions overflow. Each case fails before allocating
// anything. In depth: core_test.cc (MakeRejectsNegativeAndOverflow),
// example_parser_test.cc (BatchShapeOverflowIsInvalidArgument),
// safetensors_test.cc (MalformedEntriesAreDataLoss).
TEST_F(BadInputsTest, ShapeProductOverflow) {
  auto dims = P("dims", kInt32);
  auto fill = Fill(Op("fill"), dims, Const(root_, 1.0f));
  auto x = P("x", kFloat32);
  auto y = P("y", kFloat32);
  auto shape = P("shape", kInt32);
  auto reshape = Reshape(Op("reshape"), x, shape);
  auto random = RandomUniform(Op("random"), shape, kFloat32, 1);
  auto broadcast_to = BroadcastTo(Op("broadcast_to"), x, shape);
  auto add = Add(Op("add"), x, y);
  auto sum = Sum(Op("sum"), x, {0});
  auto sum_keep = Sum(Op("sum_keep"), x, {0}, /*keep_dims=*/true);
  auto concat = Concat(Op("concat"), {x, y}, 0);
  auto concat3 = Concat(Op("concat3"), {x, x, x}, 0);
  auto serialized = P("serialized", kString);
  auto parsed =
      io::ParseExample(Op("parse"), serialized, {{"big", io::FixedLenFeature(kFloat32, TensorShape{k2p62})}});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const Tensor huge3 = I32({kI32Max, kI32Max, kI32Max});
  const Tensor two = F32({1, 2}, TensorShape{2});

  auto bounded = InBoundedChild([&]() -> std::string {
    const Clock::time_point start = Clock::now();
    std::string why;
    auto run = [&](const FeedList& feeds, const Output& fetch) {
      return RunFresh(graph_, feeds, fetch).status();
    };
    why += Mismatch(run({{dims, huge3}}, fill), Code::kInvalidArgument, {"'fill' (Fill)", "int64"});
    why += Mismatch(run({{x, two}, {shape, huge3}}, reshape), Code::kInvalidArgument,
                    {"'reshape' (Reshape)", "too many elements"});
    why += Mismatch(run({{shape, huge3}}, random), Code::kInvalidArgument,
                    {"'random' (RandomUniform)", "int64"});
    why += Mismatch(run({{x, two}, {shape, huge3}}, broadcast_to), Code::kInvalidArgument,
                    {"'broadcast_to' (BroadcastTo)", "int64"});
    // Valid, empty operands whose broadcast shape [2^31, 2^31, 2^31, 0] overflows.
    why += Mismatch(run({{x, Tensor(kFloat32, TensorShape{k2p31, k2p31, 1, 0})},
                         {y, Tensor(kFloat32, TensorShape{k2p31, 0})}},
                        add),
                    Code::kInvalidArgument, {"'add' (Add)", "[2147483648,2147483648,1,0]", "[2147483648,0]"});
    // Reducing away the zero of [0, 2^21, 2^21, 2^21] leaves 2^63 elements.
    const Tensor leading_zero(kFloat32, TensorShape{0, 1 << 21, 1 << 21, 1 << 21});
    why += Mismatch(run({{x, leading_zero}}, sum), Code::kInvalidArgument,
                    {"'sum' (Sum)", "[0,2097152,2097152,2097152]"});
    why += Mismatch(run({{x, leading_zero}}, sum_keep), Code::kInvalidArgument, {"'sum_keep' (Sum)"});
    // Concatenating [2, 2^61, 0] and [2, 2^61, 0] gives [4, 2^61, 0].
    const Tensor half(kFloat32, TensorShape{2, k2p62 / 2, 0});
    why += Mismatch(run({{x, half}, {y, half}}, concat), Code::kInvalidArgument, {"'concat' (ConcatV2)"});
    // Three [2^62, 0] along axis 0: the axis itself overflows.
    why += Mismatch(run({{x, Tensor(kFloat32, TensorShape{k2p62, 0})}}, concat3), Code::kInvalidArgument,
                    {"'concat3' (ConcatV2)"});
    // A batch of 2 of a feature of 2^62 values.
    why += Mismatch(run({{serialized, Strings({"", ""})}}, parsed["big"]), Code::kInvalidArgument,
                    {"'parse' (ParseExample)"});
    if (SecondsSince(start) > 20) why += StrCat(" took ", SecondsSince(start), " s");
    return why;
  });
  EXPECT_TRUE(bounded);
  // TensorShape itself, for shapes that come from users or files.
  EXPECT_ERROR(TensorShape::Make({kI32Max, kI32Max, kI32Max}).status(), Code::kInvalidArgument, "int64");
}

// A1 #4. Negative dimensions and counts: TF broke std::vector invariants and
// segfaulted. Every shape and count argument is checked for sign. In depth:
// shape_kernels_test.cc (ReshapeErrorsNameShapesAndCounts), queue_test.cc.
TEST_F(BadInputsTest, NegativeDimensions) {
  auto dims = P("dims", kInt32);
  auto fill = Fill(Op("fill"), dims, Const(root_, 1.0f));
  auto x = P("x", kFloat32);
  auto shape = P("shape", kInt32);
  auto reshape = Reshape(Op("reshape"), x, shape);
  auto random = RandomUniform(Op("random"), shape, kFloat32, 1);
  auto broadcast_to = BroadcastTo(Op("broadcast_to"), x, shape);
  auto begin = P("begin", kInt32);
  auto size = P("size", kInt32);
  auto slice = Slice(Op("slice"), x, begin, size);
  auto axis = P("axis", kInt32);
  auto expand = NodeBuilder(Op("expand"), "ExpandDims").Input(x).Input(axis).Finalize();
  auto queue = io::FIFOQueue(Op("q"), 10, {kFloat32}, {.shapes = {TensorShape{}}});
  auto n = P("n", kInt32);
  auto dequeue_many = queue.DequeueMany(Op("dequeue_many"), n);
  auto dequeue_up_to = queue.DequeueUpTo(Op("dequeue_up_to"), n);
  auto labels = P("labels", kInt32);
  auto sparse_xent = SparseSoftmaxCrossEntropyWithLogits(Op("sparse_xent"), x, labels);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const Tensor four = F32({1, 2, 3, 4}, TensorShape{4});

  EXPECT_ERROR(RunStatus({{dims, I32({-1, 3})}}, fill), Code::kInvalidArgument, "'fill' (Fill)", "[?,3]",
               "negative");
  EXPECT_ERROR(RunStatus({{x, four}, {shape, I32({-2, 2})}}, reshape), Code::kInvalidArgument,
               "'reshape' (Reshape)", "negative dimension or more than one -1");
  EXPECT_ERROR(RunStatus({{x, four}, {shape, I32({-1, -1})}}, reshape), Code::kInvalidArgument,
               "'reshape' (Reshape)", "more than one -1");
  EXPECT_ERROR(RunStatus({{shape, I32({-5})}}, random), Code::kInvalidArgument, "'random' (RandomUniform)",
               "negative");
  EXPECT_ERROR(RunStatus({{x, four}, {shape, I32({-4})}}, broadcast_to), Code::kInvalidArgument,
               "'broadcast_to' (BroadcastTo)", "negative");
  EXPECT_ERROR(RunStatus({{x, four}, {begin, I32({-1})}, {size, I32({2})}}, slice), Code::kInvalidArgument,
               "'slice' (Slice)");
  EXPECT_ERROR(RunStatus({{x, four}, {begin, I32({1})}, {size, I32({-2})}}, slice), Code::kInvalidArgument,
               "'slice' (Slice)");
  EXPECT_ERROR(RunStatus({{x, four}, {axis, Tensor::Scalar<int32_t>(-3)}}, Output(expand)),
               Code::kInvalidArgument, "'expand' (ExpandDims)", "dim -3 is out of range");
  EXPECT_ERROR(RunStatus({{n, Tensor::Scalar<int32_t>(-1)}}, dequeue_many[0]), Code::kInvalidArgument,
               "'dequeue_many' (QueueDequeueMany", "-1 < 0");
  EXPECT_ERROR(RunStatus({{n, Tensor::Scalar<int32_t>(-3)}}, dequeue_up_to[0]), Code::kInvalidArgument,
               "'dequeue_up_to' (QueueDequeueUpTo", "-3 < 0");
  // A negative class index (an index into the paired logits).
  EXPECT_ERROR(
      RunStatus({{x, F32({1, 2, 3, 4}, TensorShape{2, 2})}, {labels, I32({0, -1})}}, sparse_xent.loss),
      Code::kInvalidArgument, "'sparse_xent' (SparseSoftmaxCrossEntropyWithLogits)", "-1");
  EXPECT_ERROR(TensorShape::Make({3, -1}).status(), Code::kInvalidArgument, "negative");
  EXPECT_ERROR(PartialShape::FromDims({-2}).status(), Code::kInvalidArgument, "below -1");
}

// A1 #5. Paired tensors of inconsistent sizes (TF: indices vs values, a heap
// overflow): every op taking two tensors that must agree checks them against
// each other and names both shapes. In depth: math_kernels_test.cc,
// nn_kernels_test.cc, queue_test.cc (ComponentMismatchesAreInvalidArgument),
// state_kernels_test.cc (AssignOfAnotherShapeIsInvalidArgument).
TEST_F(BadInputsTest, PairedTensorsOfInconsistentSizes) {
  auto x = P("x", kFloat32);
  auto y = P("y", kFloat32);
  auto labels = P("labels", kInt32);
  auto sparse_xent = SparseSoftmaxCrossEntropyWithLogits(Op("sparse_xent"), x, labels);
  auto xent = SoftmaxCrossEntropyWithLogits(Op("xent"), x, y);
  auto matmul = MatMul(Op("matmul"), x, y);
  auto bias_add = BiasAdd(Op("bias_add"), x, y);
  auto add = Add(Op("add"), x, y);
  auto add_n = AddN(Op("add_n"), {x, y});
  auto concat = Concat(Op("concat"), {x, y}, 0);
  auto shape = P("shape", kInt32);
  auto sum_to_shape = SumToShape(Op("sum_to_shape"), x, shape);
  Variable var = GetVariable(root_, "v", TensorShape{3}, {.initializer = ZerosInitializer()});
  auto assign = Assign(Op("assign"), var, y);
  auto apply = ApplyGradientDescent(Op("apply"), var.ref, Const(root_, 0.5f), y);
  auto queue = io::FIFOQueue(Op("q"), 10, {kFloat32, kInt32});
  Node* enqueue_many = queue.EnqueueMany(Op("enqueue_many"), {x, labels});
  Node* init = GlobalVariablesInitializer(graph_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(S().Run(init).ok());
  const Tensor m23 = F32({1, 2, 3, 4, 5, 6}, TensorShape{2, 3});
  const Tensor m24(kFloat32, TensorShape{2, 4});

  EXPECT_ERROR(RunStatus({{x, m23}, {labels, I32({0, 1, 2})}}, sparse_xent.loss), Code::kInvalidArgument,
               "'sparse_xent' (SparseSoftmaxCrossEntropyWithLogits)", "[2,3]", "[3]");
  // A label is an index into its row of logits: past the end is caught.
  EXPECT_ERROR(RunStatus({{x, m23}, {labels, I32({0, 3})}}, sparse_xent.loss), Code::kInvalidArgument,
               "'sparse_xent' (SparseSoftmaxCrossEntropyWithLogits)", "3");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, m24}}, xent.loss), Code::kInvalidArgument,
               "'xent' (SoftmaxCrossEntropyWithLogits)", "[2,3]", "[2,4]");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, m24}}, matmul), Code::kInvalidArgument, "'matmul' (MatMul)", "[2,3]",
               "[2,4]", "3 vs 2");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, F32({1, 2, 3, 4}, TensorShape{4})}}, bias_add),
               Code::kInvalidArgument, "'bias_add' (BiasAdd)", "[2,3]", "[4]");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, m24}}, add), Code::kInvalidArgument, "'add' (Add)",
               "Incompatible shapes", "[2,3]", "[2,4]");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, m24}}, add_n), Code::kInvalidArgument, "'add_n' (AddN)", "[2,3]",
               "[2,4]");
  EXPECT_ERROR(RunStatus({{x, m23}, {y, m24}}, concat), Code::kInvalidArgument, "'concat' (ConcatV2)",
               "[2,3]", "[2,4]");
  EXPECT_ERROR(RunStatus({{x, m23}, {shape, I32({4})}}, sum_to_shape), Code::kInvalidArgument,
               "'sum_to_shape' (SumToShape)", "[4]", "[2,3]");
  EXPECT_ERROR(RunStatus({{y, F32({1, 2}, TensorShape{2})}}, assign), Code::kInvalidArgument,
               "'assign' (Assign)", "[3]", "[2]");
  EXPECT_ERROR(RunStatus({{y, F32({1, 2, 3, 4}, TensorShape{4})}}, apply), Code::kInvalidArgument,
               "'apply' (ApplyGradientDescent)", "[3]", "[4]");
  Status enq =
      S().Run({{x, F32({1, 2, 3}, TensorShape{3})}, {labels, I32({1, 2})}}, {}, {enqueue_many}).status();
  EXPECT_ERROR(enq, Code::kInvalidArgument, "'enqueue_many' (QueueEnqueueMany", "0th dimension");
  // The variable was not touched by the failed updates.
  auto v = Run({}, var.value);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->ToVector<float>(), (std::vector<float>{0, 0, 0}));
}

// A1 #7. A feature stored with another dtype than requested: TF's fast parser
// returned -1 and its callers used it as a size (an unbounded heap write), in
// the sparse path that an earlier fix missed. Dense and VarLen, single and
// batched. In depth: example_parser_test.cc (DataTypeMismatch),
// example_parser_differential_test.cc, parse_example_op_test.cc.
TEST_F(BadInputsTest, FeatureDtypeDiffersFromRequested) {
  auto serialized = P("serialized", kString);
  auto one = P("one", kString);
  io::FeatureMap dense_int = {{"f", io::FixedLenFeature(kInt64)}};
  io::FeatureMap dense_float = {{"f", io::FixedLenFeature(kFloat32)}};
  io::FeatureMap dense_string = {{"f", io::FixedLenFeature(kString)}};
  io::FeatureMap sparse_int = {{"f", io::VarLenFeature(kInt64)}};
  auto as_int = io::ParseExample(Op("as_int"), serialized, dense_int);
  auto as_float = io::ParseExample(Op("as_float"), serialized, dense_float);
  auto as_string = io::ParseExample(Op("as_string"), serialized, dense_string);
  auto sparse = io::ParseExample(Op("sparse"), serialized, sparse_int);
  auto single_sparse = io::ParseSingleExample(Op("single_sparse"), one, sparse_int);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const std::string floats = ExampleOf({{"f", FloatFeature({1.5f, 2.5f})}});
  const std::string ints = ExampleOf({{"f", Int64Feature({7})}});
  const std::string bytes = ExampleOf({{"f", BytesFeature({"abc"})}});
  const std::string empty_floats = ExampleOf({{"f", FloatFeature({})}});

  EXPECT_ERROR(RunStatus({{serialized, Strings({floats})}}, as_int["f"]), Code::kInvalidArgument,
               "'as_int' (ParseExample)", "Feature: f",
               "Data types don't match. Data type: float Expected type: int64");
  EXPECT_ERROR(RunStatus({{serialized, Strings({bytes})}}, as_float["f"]), Code::kInvalidArgument,
               "'as_float' (ParseExample)", "Data type: string Expected type: float");
  EXPECT_ERROR(RunStatus({{serialized, Strings({ints})}}, as_string["f"]), Code::kInvalidArgument,
               "'as_string' (ParseExample)", "Data type: int64 Expected type: string");
  // The sparse path, with values and without (the kind alone names the type),
  // and in the second example of a batch.
  EXPECT_ERROR(RunStatus({{serialized, Strings({floats})}}, sparse["f"].values()), Code::kInvalidArgument,
               "'sparse' (ParseExample)", "Data type: float Expected type: int64");
  EXPECT_ERROR(RunStatus({{serialized, Strings({empty_floats})}}, sparse["f"].values()),
               Code::kInvalidArgument, "'sparse' (ParseExample)", "Data type: float Expected type: int64");
  EXPECT_ERROR(RunStatus({{serialized, Strings({ints, floats})}}, sparse["f"].values()),
               Code::kInvalidArgument, "'sparse' (ParseExample)", "Data type: float Expected type: int64");
  EXPECT_ERROR(RunStatus({{one, Tensor::String(bytes)}}, single_sparse["f"].values()), Code::kInvalidArgument,
               "'single_sparse' (ParseSingleExample)", "Data type: string Expected type: int64");
  // The right type parses.
  auto good = Run({{serialized, Strings({ints, ints})}}, sparse["f"].values());
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->ToVector<int64_t>(), (std::vector<int64_t>{7, 7}));
}

// Wrong value counts: a FixedLenFeature whose stored list holds more or fewer
// values than its shape. In depth: example_parser_test.cc (WrongValueCount).
TEST_F(BadInputsTest, WrongValueCounts) {
  auto serialized = P("serialized", kString);
  auto parsed = io::ParseExample(Op("parse"), serialized,
                                 {{"x", io::FixedLenFeature(kFloat32, TensorShape{3})},
                                  {"ids", io::FixedLenFeature(kInt64, TensorShape{2, 2})}});
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  auto example = [](std::vector<float> x, std::vector<int64_t> ids) {
    return ExampleOf({{"x", FloatFeature(x)}, {"ids", Int64Feature(ids)}});
  };
  EXPECT_ERROR(RunStatus({{serialized, Strings({example({1, 2}, {1, 2, 3, 4})})}}, parsed["x"]),
               Code::kInvalidArgument, "'parse' (ParseExample)", "Key: x, Index: 0",
               "Values size: 2 but output shape: [3]");
  EXPECT_ERROR(RunStatus({{serialized, Strings({example({1, 2, 3, 4}, {1, 2, 3, 4})})}}, parsed["x"]),
               Code::kInvalidArgument, "Key: x", "Values size: 4 but output shape: [3]");
  // The second example of the batch is the bad one.
  EXPECT_ERROR(
      RunStatus({{serialized, Strings({example({1, 2, 3}, {1, 2, 3, 4}), example({1, 2, 3}, {1, 2, 3})})}},
                parsed["ids"]),
      Code::kInvalidArgument, "Key: ids, Index: 1", "Number of int64 values != expected",
      "Values size: 3 but output shape: [2,2]");
  // A default value of the wrong count is refused when the graph is built.
  Graph g;
  Scope s(g);
  io::ParseExample(s, Placeholder(s, kString),
                   {{"x", io::FixedLenFeature(kFloat32, TensorShape{3}, Tensor::Vec<float>({1, 2}))}});
  EXPECT_ERROR(s.status(), Code::kInvalidArgument, "'x'");
  auto good = Run({{serialized, Strings({example({1, 2, 3}, {1, 2, 3, 4})})}}, parsed["x"]);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->shape(), TensorShape({1, 3}));
}

// A1 #8. DecodeRaw lengths: TF's decode_padded_raw advanced by
// fixed_length * sizeof(T) while copying fixed_length bytes (a heap write past
// the end). towerflow's DecodeRaw has no fixed_length; every string must be a
// multiple of the element size and all the same length, and the output holds
// exactly len / size elements per string. Every dtype. In depth:
// decode_raw_test.cc.
TEST_F(BadInputsTest, DecodeRawLengths) {
  auto bytes = P("bytes", kString);
  std::vector<std::pair<DataType, Output>> decoders;
  for (DataType t : {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kBool}) {
    decoders.push_back({t, io::DecodeRaw(Op(StrCat("decode_", DataTypeName(t))), bytes, t)});
  }
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  std::mt19937 rng(8);
  for (const auto& [dtype, decode] : decoders) {
    SCOPED_TRACE(DataTypeName(dtype));
    const size_t size = DataTypeSize(dtype);
    const std::string node = StrCat("'decode_", DataTypeName(dtype), "' (DecodeRaw)");
    if (size > 1) {
      EXPECT_ERROR(RunStatus({{bytes, Strings({std::string(size + 1, 'a')})}}, decode),
                   Code::kInvalidArgument, node,
                   StrCat("has length ", size + 1, " that is not a multiple of ", size));
    }
    EXPECT_ERROR(
        RunStatus({{bytes, Strings({std::string(size * 2, 'a'), std::string(size * 3, 'a')})}}, decode),
        Code::kInvalidArgument, node, StrCat("element 1 has size ", size * 3, " != ", size * 2));
    // A valid input decodes to exactly its bytes: nothing read or written past them.
    std::string raw(size * 1001, '\0');
    for (char& c : raw) c = static_cast<char>(dtype == kBool ? rng() & 1 : rng());
    auto out = Run({{bytes, Strings({raw, raw})}}, decode);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(out->shape(), TensorShape({2, 1001}));
    ASSERT_EQ(out->TotalBytes(), 2 * raw.size());
    EXPECT_EQ(std::memcmp(out->raw_data(), raw.data(), raw.size()), 0);
    EXPECT_EQ(std::memcmp(static_cast<const char*>(out->raw_data()) + raw.size(), raw.data(), raw.size()), 0);
  }
}

// A1 #9. Type confusion: a tensor of one dtype where another is expected. Feeds
// are checked against the placeholder's dtype, and ops that need strings refuse
// other types when the graph is built. In depth: session_test.cc
// (FeedsAreCheckedForDtypeAndShape), tfrecord_reader_op_test.cc
// (QueueOfNonStringsIsInvalidArgument).
TEST_F(BadInputsTest, TypeConfusionInRecords) {
  auto serialized = P("serialized", kString);
  auto decode = io::DecodeRaw(Op("decode"), serialized, kFloat32);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_ERROR(RunStatus({{serialized, Tensor::Vec<float>({1, 2})}}, decode), Code::kInvalidArgument,
               "serialized:0", "float", "string");
  // Numbers where strings are needed: refused at build time, each naming the op.
  Graph g;
  Scope s(g);
  io::DecodeRaw(s.WithOpName("decode_floats"), Const(s, 1.0f), kFloat32);
  EXPECT_ERROR(s.status(), Code::kInvalidArgument, "decode_floats");
  Graph g2;
  Scope s2(g2);
  io::ParseExample(s2.WithOpName("parse_ints"), Const(s2, std::vector<int32_t>{1, 2}),
                   {{"a", io::FixedLenFeature(kInt64)}});
  EXPECT_ERROR(s2.status(), Code::kInvalidArgument, "parse_ints");
  Graph g3;
  Scope s3(g3);
  io::Queue ints = io::FIFOQueue(s3, 4, {kInt32});
  io::TFRecordReader reader(s3.WithOpName("reader"));
  reader.Read(ints);
  EXPECT_ERROR(s3.status(), Code::kInvalidArgument, "string");
  Graph g4;
  Scope s4(g4);
  Output cast_out = Cast(s4.WithOpName("cast"), Const(s4, Tensor::String("1.5")), kFloat32);
  Status cast = s4.ok() ? Session(g4).Run({cast_out}).status() : s4.status();
  EXPECT_FALSE(cast.ok());
  EXPECT_NE(cast.message().find("cast"), std::string::npos) << cast.ToString();
}

// A1 #10, the nearest towerflow has: tensors that are not valid values.
TEST_F(BadInputsTest, MalformedTensorsAreRejected) {
  auto x = P("x", kFloat32);
  auto y = Identity(Op("y"), x);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  EXPECT_ERROR(RunStatus({{x, Tensor()}}, y), Code::kInvalidArgument, "x:0", "uninitialized tensor");
  Graph g;
  Scope s(g);
  Const(s.WithOpName("c"), Tensor());
  EXPECT_FALSE(s.ok());
  Graph g2;
  Scope s2(g2);
  io::ParseExample(s2, Placeholder(s2, kString),
                   {{"x", io::FixedLenFeature(kFloat32, TensorShape{}, Tensor::Scalar<int64_t>(1))}});
  EXPECT_ERROR(s2.status(), Code::kInvalidArgument, "'x'");
}

// A1 #11. Tampered checkpoints: TF's loaders overflowed, read out of bounds and
// dereferenced null on missing names. Every case goes through Saver::Restore
// (ReadSafetensors, then the all-or-nothing restore) and leaves the variables
// as they were. In depth: safetensors_test.cc, saver_test.cc,
// checkpoint_manager_test.cc.
TEST_F(BadInputsTest, TamperedCheckpoints) {
  Variable a = GetVariable(root_, "a", TensorShape{2, 3}, {.initializer = ConstantInitializer(1.0)});
  Variable b = GetVariable(root_, "b", TensorShape{4}, {.dtype = kInt64, .initializer = ZerosInitializer()});
  train::Saver saver(root_);
  Node* init = GlobalVariablesInitializer(graph_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  Session session(graph_, {.inter_op_threads = 1});
  ASSERT_TRUE(session.Run(init).ok());

  // A hand-made file: a F32 [2,3] (24 bytes) then b I64 [4] (32 bytes).
  auto file = [](const std::string& header, const std::string& buffer) {
    return Le64(header.size()) + header + buffer;
  };
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape, uint64_t begin,
                  const std::string& end) {
    return StrCat("\"", name, "\":{\"dtype\":\"", dtype, "\",\"shape\":", shape, ",\"data_offsets\":[", begin,
                  ",", end, "]}");
  };
  std::string buffer;
  for (int i = 0; i < 6; ++i) {
    const float v = 10.0f + static_cast<float>(i);
    buffer.append(reinterpret_cast<const char*>(&v), 4);
  }
  for (int64_t i = 0; i < 4; ++i) buffer += Le64(static_cast<uint64_t>(100 + i));
  auto header = [&](const std::string& a_entry, const std::string& b_entry) {
    return "{" + a_entry + (b_entry.empty() ? "" : "," + b_entry) + "}";
  };
  const std::string good_a = entry("a", "F32", "[2,3]", 0, "24"), good_b = entry("b", "I64", "[4]", 24, "56");
  auto values = [&] {
    auto r = session.Run({a.value, b.value});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::make_pair((*r)[0].ToVector<float>(), (*r)[1].ToVector<int64_t>());
  };
  const auto before = values();

  struct Case {
    std::string name;
    std::string bytes;
    Code code;
    std::vector<std::string> parts;
  };
  const uint64_t u64max = ~uint64_t{0};
  const std::vector<Case> cases = {
      {"header_length_huge",
       Le64(uint64_t{1} << 62) + "{}",
       Code::kDataLoss,
       {"header length", "exceeds the limit"}},
      {"header_length_past_end",
       Le64(1000) + header(good_a, good_b) + buffer,
       Code::kDataLoss,
       {"runs past the end"}},
      {"shorter_than_8_bytes", "\x05\x00\x00", Code::kDataLoss, {"fewer than the 8-byte header length"}},
      {"header_not_json", file("{\"a\":", buffer), Code::kDataLoss, {"not valid JSON"}},
      {"header_not_an_object", file("[1, 2]", ""), Code::kDataLoss, {"does not start with '{'"}},
      {"offset_past_the_buffer",
       file(header(entry("a", "F32", "[2,3]", 0, "24"), entry("b", "I64", "[4]", 24, "4096")), buffer),
       Code::kDataLoss,
       {"data_offsets [24, 4096]", "end past the"}},
      {"offset_huge",
       file(header(good_a, entry("b", "I64", "[4]", 24, std::to_string(u64max))), buffer),
       Code::kDataLoss,
       {"data_offsets"}},
      {"offset_begin_after_end",
       file(header(good_a, entry("b", "I64", "[4]", 56, "24")), buffer),
       Code::kDataLoss,
       {"begin after end"}},
      {"shape_disagrees_with_bytes",
       file(header(entry("a", "F32", "[2,2]", 0, "24"), good_b), buffer),
       Code::kDataLoss,
       {"'a'"}},
      {"shape_overflows",
       file(header(entry("a", "F32", "[4611686018427387904,4]", 0, "24"), good_b), buffer),
       Code::kDataLoss,
       {"more elements than fit in 64 bits"}},
      {"shape_negative",
       file(header(entry("a", "F32", "[-2,3]", 0, "24"), good_b), buffer),
       Code::kDataLoss,
       {"not a list of non-negative integers"}},
      {"tensors_overlap",
       file(header(good_a, entry("b", "I64", "[4]", 16, "48")), buffer),
       Code::kDataLoss,
       {"'b'"}},
      {"truncated_data", file(header(good_a, good_b), buffer.substr(0, 40)), Code::kDataLoss, {}},
      {"unknown_dtype",
       file(header(entry("a", "F16", "[2,3]", 0, "24"), good_b), buffer),
       Code::kDataLoss,
       {"unknown dtype"}},
      // Valid files that do not fit the variables: refused before anything is assigned.
      {"missing_tensor",
       file(header(good_a, ""), buffer.substr(0, 24)),
       Code::kNotFound,
       {"variable 'b' is not in checkpoint"}},
      {"shape_of_another_variable",
       file(header(entry("a", "F32", "[3,2]", 0, "24"), good_b), buffer),
       Code::kInvalidArgument,
       {"variable 'a'", "[2,3]", "[3,2]"}},
      {"dtype_of_another_variable",
       file(header(entry("a", "I32", "[2,3]", 0, "24"), good_b), buffer),
       Code::kInvalidArgument,
       {"variable 'a'", "float", "int32"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Path(c.name + ".safetensors");
    WriteBytes(path, c.bytes);
    // The file reader alone, with bounded memory: corrupt files are DataLoss, the
    // valid ones that do not fit the variables read.
    auto bounded = InBoundedChild([&]() -> std::string {
      Status read = train::ReadSafetensors(path).status();
      return c.code == Code::kDataLoss ? Mismatch(read, c.code, {path}) : read.ok() ? "" : read.ToString();
    });
    EXPECT_TRUE(bounded);
    Status s = saver.Restore(session, path);
    EXPECT_EQ(Mismatch(s, c.code, {path}), "");
    for (const std::string& part : c.parts)
      EXPECT_NE(s.message().find(part), std::string::npos) << s.ToString();
    EXPECT_EQ(values(), before);
  }
  // The hand-made file itself is valid: the cases above differ from it by one thing.
  WriteBytes(Path("good.safetensors"), file(header(good_a, good_b), buffer));
  ASSERT_TRUE(saver.Restore(session, Path("good.safetensors")).ok());
  EXPECT_EQ(values().second, (std::vector<int64_t>{100, 101, 102, 103}));

  // A CheckpointManager passes over a tampered newest checkpoint to the one before.
  train::CheckpointManager manager(Path("ckpts"), 3);
  ASSERT_TRUE(manager.Save(session, saver, 1).ok());
  ASSERT_TRUE(manager.Save(session, saver, 2).ok());
  std::string newest = ReadBytes(manager.CheckpointPath(2));
  newest[0] = '\xff';  // header length
  WriteBytes(manager.CheckpointPath(2), newest);
  auto restored = manager.RestoreLatest(session, saver);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  EXPECT_EQ(restored->step, 1);
  ASSERT_EQ(restored->rejected.size(), 1u);
  EXPECT_ERROR(restored->rejected[0], Code::kDataLoss, manager.CheckpointPath(2));
}

// A1 #12. An integer overflow, or just a huge valid size, that feeds an
// allocation: ResourceExhausted naming the node and the device, at once, not an
// abort or the OOM killer. In depth: core_test.cc
// (AllocationFailureIsResourceExhausted); tests/step_failure_test.cc runs the
// session on after it.
TEST_F(BadInputsTest, IntegerOverflowFeedingAllocation) {
  auto dims = P("dims", kInt32);
  auto fill = Fill(Op("fill"), dims, Const(root_, 1.0f));
  auto random = RandomUniform(Op("random"), dims, kFloat32, 1);
  auto x = P("x", kFloat32);
  auto broadcast_to = BroadcastTo(Op("broadcast_to"), x, dims);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  auto bounded = InBoundedChild([&]() -> std::string {
    std::string why;
    auto run = [&](const FeedList& feeds, const Output& fetch) {
      const Clock::time_point start = Clock::now();
      Status s = RunFresh(graph_, feeds, fetch).status();
      if (SecondsSince(start) > 10)
        why += StrCat(" ", fetch.node->name(), " took ", SecondsSince(start), " s;");
      return s;
    };
    // 2^40 floats: 4 TiB, a valid shape no machine here holds.
    why += Mismatch(run({{dims, I32({1 << 20, 1 << 20})}}, fill), Code::kResourceExhausted,
                    {"'fill' (Fill)", "/device:CPU:0", "float[1048576,1048576]"});
    // (2^31-1)^2 floats: the element count fits int64, the byte count overflows size_t.
    why +=
        Mismatch(run({{dims, I32({kI32Max, kI32Max})}}, fill), Code::kResourceExhausted, {"'fill' (Fill)"});
    why += Mismatch(run({{dims, I32({kI32Max, kI32Max, 2})}}, random), Code::kResourceExhausted,
                    {"'random' (RandomUniform)", "/device:CPU:0"});
    why += Mismatch(run({{x, Tensor::Scalar<float>(1)}, {dims, I32({1 << 20, 1 << 20})}}, broadcast_to),
                    Code::kResourceExhausted, {"'broadcast_to' (BroadcastTo)"});
    return why;
  });
  EXPECT_TRUE(bounded);
}

// A1 #13. Empty batches: TF Lite's ParseExample indexed an empty vector. A
// batch of zero examples parses to empty outputs, and the training ops take
// batches of zero rows.
TEST_F(BadInputsTest, EmptyBatch) {
  auto serialized = P("serialized", kString);
  auto parsed = io::ParseExample(
      Op("parse"), serialized,
      {{"x", io::FixedLenFeature(kFloat32, TensorShape{3})}, {"ids", io::VarLenFeature(kInt64)}});
  auto x = P("x", kFloat32);
  auto labels = P("labels", kInt32);
  auto loss = Mean(Op("loss"), SparseSoftmaxCrossEntropyWithLogits(Op("xent"), x, labels).loss, {0});
  auto queue = io::FIFOQueue(Op("q"), 10, {kFloat32}, {.shapes = {TensorShape{2}}});
  auto dequeue_many = queue.DequeueMany(Op("dequeue_many"), 0);
  auto dequeue_up_to = queue.DequeueUpTo(Op("dequeue_up_to"), 4);
  Node* close = queue.Close(root_);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  const Tensor none(kString, TensorShape{0});
  auto dense = Run({{serialized, none}}, parsed["x"]);
  ASSERT_TRUE(dense.ok()) << dense.status().ToString();
  EXPECT_EQ(dense->shape(), TensorShape({0, 3}));
  auto sparse_shape = Run({{serialized, none}}, parsed["ids"].dense_shape());
  ASSERT_TRUE(sparse_shape.ok()) << sparse_shape.status().ToString();
  EXPECT_EQ(sparse_shape->ToVector<int64_t>(), (std::vector<int64_t>{0, 0}));
  auto indices = Run({{serialized, none}}, parsed["ids"].indices());
  ASSERT_TRUE(indices.ok()) << indices.status().ToString();
  EXPECT_EQ(indices->shape(), TensorShape({0, 2}));
  auto mean =
      Run({{x, Tensor(kFloat32, TensorShape{0, 10})}, {labels, Tensor(kInt32, TensorShape{0})}}, loss);
  ASSERT_TRUE(mean.ok()) << mean.status().ToString();
  EXPECT_TRUE(std::isnan(mean->scalar<float>()));  // the mean of nothing, as TF
  auto zero = Run({}, dequeue_many[0]);
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  EXPECT_EQ(zero->shape(), TensorShape({0, 2}));
  ASSERT_TRUE(S().Run(close).ok());
  EXPECT_ERROR(RunStatus({}, dequeue_up_to[0]), Code::kOutOfRange, "'q' is closed");
}

// A1 #14. Decompressor bugs: truncated and corrupted GZIP and ZLIB streams are
// DataLoss naming the file, through the reader op as through RecordReader. In
// depth: record_io_test.cc (TruncatedGzipStreamIsDataLoss,
// CutCompressedStreamGivesTheSameRecordsAtEveryBufferSize).
TEST_F(BadInputsTest, TruncatedOrCorruptCompressedStreams) {
  std::string plain;
  for (int i = 0; i < 50; ++i)
    plain += Record(StrCat("record ", i, " ", std::string(static_cast<size_t>(i * 7), 'z')));
  std::mt19937 rng(14);
  for (Compression c : {Compression::kGzip, Compression::kZlib}) {
    SCOPED_TRACE(CompressionName(c));
    const std::string whole = Deflate(plain, c == Compression::kGzip);
    std::vector<std::pair<std::string, std::string>> bad;
    for (int k = 0; k < 8; ++k) {
      const size_t cut = 1 + rng() % (whole.size() - 9);
      bad.push_back({StrCat("cut_at_", cut), whole.substr(0, cut)});
    }
    std::string flipped = whole;
    flipped[whole.size() / 2] = static_cast<char>(flipped[whole.size() / 2] ^ 0x41);
    bad.push_back({"flipped", flipped});
    for (const auto& [name, bytes] : bad) {
      SCOPED_TRACE(name);
      const std::string path = Path(StrCat(name, ".", CompressionName(c)));
      WriteBytes(path, bytes);
      auto reader = RecordReader::Open(path, {.compression = c});
      ASSERT_TRUE(reader.ok()) << reader.status().ToString();
      std::string record;
      Status s;
      int n = 0;
      while ((s = (*reader)->ReadRecord(&record)).ok()) ++n;
      EXPECT_LT(n, 50);
      EXPECT_ERROR(s, Code::kDataLoss, path);
    }
  }
  // Through the op: a GZIP file cut short, read by a TFRecordReader in a session.
  const std::string cut = Path("op.gz");
  WriteBytes(cut, Deflate(plain, true).substr(0, 200));
  io::Queue files = io::FIFOQueue(root_, 4, {kString});
  Node* enqueue = files.Enqueue(root_, {Const(root_, Tensor::String(cut))});
  Node* close = files.Close(root_);
  io::TFRecordReader reader(Op("reader"), {.compression = Compression::kGzip});
  auto read = reader.Read(files);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(S().Run(enqueue).ok());
  ASSERT_TRUE(S().Run(close).ok());
  Status s;
  for (int i = 0; i < 60 && (s = RunStatus({}, read.value)).ok(); ++i) {
  }
  EXPECT_ERROR(s, Code::kDataLoss, cut, "GZIP", "(ReaderRead)");
}

// A1 #15. A record declaring more bytes than the file holds, with a valid length
// CRC (so only the length betrays it): huge (2^62), just past the end, above
// what the child may allocate (3 GiB), and the "negative length cast to
// unsigned" DALI's users saw. DataLoss "truncated record at <offset>" naming the
// file, at once and without allocating the declared size, through RecordReader
// (plain and GZIP) and through the reader op. In depth: record_io_test.cc
// (HugeDeclaredLengthFailsFast, TruncationAtEveryByte).
TEST_F(BadInputsTest, DeclaredRecordLengthBeyondTheFile) {
  const std::string first = Record("a valid first record");
  // (The last one is beyond what memory can address: "record size too large".)
  const std::vector<uint64_t> lengths = {uint64_t{1} << 62, uint64_t{3} << 30, 41, 18446744072373679986ull};
  std::vector<std::string> paths;
  for (uint64_t length : lengths) {
    // 40 bytes of data follow the header, so 41 is one past the end.
    const std::string bytes = first + RecordHeader(length) + std::string(40, 'd');
    paths.push_back(Path(StrCat("len_", length, ".tfrecord")));
    WriteBytes(paths.back(), bytes);
    WriteBytes(paths.back() + ".gz", Deflate(bytes, true));
  }
  const std::string at = StrCat("truncated record at ", first.size());
  const std::string too_large = StrCat("record size too large at ", first.size());
  auto bounded = InBoundedChild([&]() -> std::string {
    std::string why;
    for (const std::string& path : paths) {
      for (Compression c : {Compression::kNone, Compression::kGzip}) {
        const std::string file = c == Compression::kNone ? path : path + ".gz";
        const Clock::time_point start = Clock::now();
        auto reader = RecordReader::Open(file, {.compression = c});
        if (!reader.ok()) return reader.status().ToString();
        std::string record;
        if (!(*reader)->ReadRecord(&record).ok()) why += file + ": the valid first record failed;";
        const bool unaddressable = path == paths.back();
        why +=
            Mismatch((*reader)->ReadRecord(&record), Code::kDataLoss, {file, unaddressable ? too_large : at});
        if (record.capacity() > (size_t{1} << 20))
          why += StrCat(file, ": record grew to ", record.capacity(), ";");
        if (SecondsSince(start) > 5) why += StrCat(file, ": took ", SecondsSince(start), " s;");
      }
    }
    return why;
  });
  EXPECT_TRUE(bounded);
  // A bound on what a record may declare names it as too large instead.
  auto limited = RecordReader::Open(paths[1], {.max_record_bytes = 1 << 20});
  ASSERT_TRUE(limited.ok());
  std::string record;
  ASSERT_TRUE((*limited)->ReadRecord(&record).ok());
  EXPECT_ERROR((*limited)->ReadRecord(&record), Code::kDataLoss, paths[1], too_large);

  // Through the reader op, in a session.
  io::Queue files = io::FIFOQueue(root_, 4, {kString});
  Node* enqueue = files.EnqueueMany(root_, {Const(root_, Tensor::Vec<std::string>({paths[0]}))});
  io::TFRecordReader reader(Op("reader"));
  auto read = reader.Read(files);
  ASSERT_TRUE(root_.ok()) << root_.status().ToString();
  ASSERT_TRUE(S().Run(enqueue).ok());
  auto valid = Run({}, read.value);
  ASSERT_TRUE(valid.ok()) << valid.status().ToString();
  EXPECT_EQ(valid->scalar<std::string>(), "a valid first record");
  EXPECT_ERROR(RunStatus({}, read.value), Code::kDataLoss, paths[0], at, "(ReaderRead)");
}

}  // namespace
}  // namespace tw
