// All-reduce: the CPU reducer against a plain loop over odd sizes, 1 to 4
// inputs, every reduction and several dtypes, chunk sizes that leave remainders;
// aliasing, concurrent calls, errors. The graph composition: values, devices of
// its nodes, errors.
#include "towerflow/train/all_reduce.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/runtime/session.h"

namespace tw::train {
namespace {

// SessionOptions with `cpus` virtual CPU devices, once sessions have them
// (until then every node runs on CPU:0 whatever it asks for).
template <typename O = SessionOptions>
O WithCpus(int cpus, O o = {}) {
  if constexpr (requires { o.num_cpu_devices; }) o.num_cpu_devices = cpus;
  return o;
}

template <typename T>
Tensor Random(int64_t n, std::mt19937& rng) {
  Tensor t(DataTypeOf<T>(), TensorShape{n});
  std::uniform_int_distribution<int> dist(-1000, 1000);
  for (auto& v : t.flat<T>()) {
    if constexpr (std::is_floating_point_v<T>) {
      v = static_cast<T>(dist(rng)) / static_cast<T>(7.3);
    } else {
      v = static_cast<T>(dist(rng));
    }
  }
  return t;
}

// The reference: element by element, inputs in order, mean divides at the end.
template <typename T>
std::vector<T> PlainLoop(const std::vector<Tensor>& in, Reduction op) {
  std::vector<T> out(in[0].flat<T>().begin(), in[0].flat<T>().end());
  for (size_t j = 1; j < in.size(); ++j) {
    for (size_t k = 0; k < out.size(); ++k) {
      const T x = in[j].flat<T>()[k];
      if (op == Reduction::kMax) {
        out[k] = std::max(out[k], x);
      } else if (op == Reduction::kMin) {
        out[k] = std::min(out[k], x);
      } else {
        out[k] = static_cast<T>(out[k] + x);
      }
    }
  }
  if (op == Reduction::kMean) {
    for (T& v : out) v = static_cast<T>(v / static_cast<T>(in.size()));
  }
  return out;
}

template <typename T>
void CheckAgainstPlainLoop(AllReducer& reducer, int64_t n, int num, Reduction op, std::mt19937& rng) {
  std::vector<Tensor> inputs;
  for (int j = 0; j < num; ++j) inputs.push_back(Random<T>(n, rng));
  std::vector<Tensor> copies;
  for (const Tensor& t : inputs) copies.push_back(t.DeepCopy());
  const std::vector<T> want = PlainLoop<T>(copies, op);
  std::vector<Tensor*> ptrs;
  for (Tensor& t : inputs) ptrs.push_back(&t);
  ASSERT_TRUE(reducer.AllReduce(ptrs, op).ok());
  for (int j = 0; j < num; ++j) {
    const auto got = inputs[static_cast<size_t>(j)].flat<T>();
    for (int64_t k = 0; k < n; ++k) {
      // Same operations in the same order: bitwise equal, not just close.
      ASSERT_EQ(got[static_cast<size_t>(k)], want[static_cast<size_t>(k)])
          << "n=" << n << " inputs=" << num << " op=" << ReductionName(op) << " output " << j << " element "
          << k;
    }
  }
}

TEST(CpuAllReducer, MatchesPlainLoopOverOddSizesAndCounts) {
  std::mt19937 rng(1);
  ThreadPool pool("test", 3);
  // 256-byte chunks: every size above 64 floats spans several chunks with a
  // remainder; 1e6 elements keep all four threads busy.
  CpuAllReducer small_chunks(&pool, {.chunk_bytes = 256});
  CpuAllReducer defaults(&pool);
  CpuAllReducer inline_reducer(nullptr);
  for (AllReducer* r : std::vector<AllReducer*>{&small_chunks, &defaults, &inline_reducer}) {
    for (int64_t n : {1, 7, 33, 1000, 1000000}) {
      for (int num = 1; num <= 4; ++num) {
        for (Reduction op : {Reduction::kSum, Reduction::kMean, Reduction::kMax, Reduction::kMin}) {
          CheckAgainstPlainLoop<float>(*r, n, num, op, rng);
        }
      }
    }
  }
}

TEST(CpuAllReducer, OtherDtypes) {
  std::mt19937 rng(2);
  CpuAllReducer reducer(3, {.chunk_bytes = 64});
  for (int64_t n : {1, 33, 1000}) {
    for (int num = 1; num <= 4; ++num) {
      for (Reduction op : {Reduction::kSum, Reduction::kMean, Reduction::kMax}) {
        CheckAgainstPlainLoop<double>(reducer, n, num, op, rng);
        CheckAgainstPlainLoop<int32_t>(reducer, n, num, op, rng);
        CheckAgainstPlainLoop<int64_t>(reducer, n, num, op, rng);
      }
    }
  }
}

TEST(CpuAllReducer, HandComputedMean) {
  CpuAllReducer reducer(2);
  Tensor a = Tensor::Vec<float>({1, 2, 3}), b = Tensor::Vec<float>({3, 4, 5}),
         c = Tensor::Vec<float>({5, 0, -2});
  ASSERT_TRUE(reducer.AllReduce({&a, &b, &c}).ok());
  for (const Tensor* t : {&a, &b, &c}) EXPECT_EQ(t->ToVector<float>(), (std::vector<float>{3, 2, 2}));
  Tensor i = Tensor::Vec<int32_t>({7, -7}), j = Tensor::Vec<int32_t>({0, 0});
  ASSERT_TRUE(reducer.AllReduce({&i, &j}, Reduction::kMean).ok());
  EXPECT_EQ(i.ToVector<int32_t>(), (std::vector<int32_t>{3, -3}));  // truncation toward zero
}

TEST(CpuAllReducer, SharedBuffersCountOnceEachAndReadBeforeWrite) {
  CpuAllReducer reducer(2, {.chunk_bytes = 8});
  Tensor a = Tensor::Vec<float>({1, 2, 3, 4, 5});
  Tensor alias = a;  // the same buffer
  Tensor b = Tensor::Vec<float>({10, 20, 30, 40, 50});
  ASSERT_TRUE(reducer.AllReduce({&a, &alias, &b}, Reduction::kSum).ok());
  EXPECT_EQ(a.ToVector<float>(), (std::vector<float>{12, 24, 36, 48, 60}));
  EXPECT_EQ(b.ToVector<float>(), (std::vector<float>{12, 24, 36, 48, 60}));
}

TEST(CpuAllReducer, ConcurrentCallsShareOnePool) {
  ThreadPool pool("test", 3);
  CpuAllReducer reducer(&pool, {.chunk_bytes = 1024});
  auto run = [&](float base, std::vector<float>* result) {
    for (int rep = 0; rep < 20; ++rep) {
      Tensor x(kFloat32, TensorShape{100000}), y(kFloat32, TensorShape{100000});
      for (auto& v : x.flat<float>()) v = base;
      for (auto& v : y.flat<float>()) v = base + 2;
      ASSERT_TRUE(reducer.AllReduce({&x, &y}).ok());
      *result = {x.flat<float>()[0], x.flat<float>()[99999], y.flat<float>()[50000]};
    }
  };
  std::vector<float> r1, r2;
  std::thread t1(run, 1.0f, &r1), t2(run, 100.0f, &r2);
  t1.join();
  t2.join();
  EXPECT_EQ(r1, (std::vector<float>{2, 2, 2}));
  EXPECT_EQ(r2, (std::vector<float>{101, 101, 101}));
}

TEST(CpuAllReducer, ErrorsLeaveTensorsUnchanged) {
  CpuAllReducer reducer(1);
  EXPECT_EQ(reducer.AllReduce({}).code(), Code::kInvalidArgument);
  Tensor a = Tensor::Vec<float>({1, 2}), b = Tensor::Vec<float>({1, 2, 3}), d = Tensor::Vec<double>({1, 2});
  Tensor uninit;
  EXPECT_EQ(reducer.AllReduce({&a, nullptr}).code(), Code::kInvalidArgument);
  EXPECT_EQ(reducer.AllReduce({&a, &uninit}).code(), Code::kInvalidArgument);
  Status shape = reducer.AllReduce({&a, &b});
  EXPECT_EQ(shape.code(), Code::kInvalidArgument);
  EXPECT_NE(shape.message().find("tensor 1 has shape [3] but tensor 0 has shape [2]"), std::string::npos)
      << shape.message();
  Status dtype = reducer.AllReduce({&a, &d});
  EXPECT_NE(dtype.message().find("tensor 1 is double but tensor 0 is float"), std::string::npos)
      << dtype.message();
  Tensor s1 = Tensor::Vec<std::string>({"a"}), s2 = Tensor::Vec<std::string>({"b"});
  Status str = reducer.AllReduce({&s1, &s2});
  EXPECT_EQ(str.code(), Code::kInvalidArgument);
  EXPECT_NE(str.message().find("string cannot be reduced"), std::string::npos) << str.message();
  EXPECT_EQ(a.ToVector<float>(), (std::vector<float>{1, 2}));
  EXPECT_EQ(s1.ToVector<std::string>(), (std::vector<std::string>{"a"}));
}

TEST(GraphAllReduce, MeanOnEveryDevice) {
  Graph graph;
  Scope root(graph);
  std::vector<Output> in;
  for (int i = 0; i < 3; ++i) {
    in.push_back(
        Placeholder(root.WithDevice("/device:CPU:" + std::to_string(i)), kFloat32, PartialShape({2})));
  }
  std::vector<Output> out = AllReduce(root, in, {.reduction = Reduction::kMean, .reduce_on = 1});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(out.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[static_cast<size_t>(i)].node->name(), "all_reduce/broadcast_" + std::to_string(i));
    EXPECT_EQ(out[static_cast<size_t>(i)].node->requested_device(), "/device:CPU:" + std::to_string(i));
  }
  const Node* sum = graph.FindNode("all_reduce/AddN");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->requested_device(), "/device:CPU:1");
  EXPECT_NE(graph.FindNode("all_reduce/truediv"), nullptr);

  Session session(graph, WithCpus(3));
  auto r = session.Run({{in[0], Tensor::Vec<float>({1, 2})},
                        {in[1], Tensor::Vec<float>({3, 4})},
                        {in[2], Tensor::Vec<float>({5, 9})}},
                       out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const Tensor& t : *r) EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{3, 5}));
}

TEST(GraphAllReduce, SumAndSingleInput) {
  Graph graph;
  Scope root(graph);
  Output a = Const(root, std::vector<float>{1, 2}, TensorShape{2});
  Output b = Const(root, std::vector<float>{10, 20}, TensorShape{2});
  std::vector<Output> sum = AllReduce(root, {a, b}, {.reduction = Reduction::kSum});
  std::vector<Output> one = AllReduce(root, {a});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  auto r = session.Run({sum[0], sum[1], one[0]});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].ToVector<float>(), (std::vector<float>{11, 22}));
  EXPECT_EQ((*r)[1].ToVector<float>(), (std::vector<float>{11, 22}));
  EXPECT_EQ((*r)[2].ToVector<float>(), (std::vector<float>{1, 2}));
}

TEST(GraphAllReduce, ErrorsAreRecordedInTheScope) {
  Graph graph;
  Scope root(graph);
  Output f = Const(root, std::vector<float>{1, 2}, TensorShape{2});
  Output g = Const(root, std::vector<float>{1, 2, 3}, TensorShape{3});
  Output d = Const(root, 1.0);
  // Each case in a fresh scope on the same graph (its own error list).
  auto expect_error = [&](const std::vector<Output>& inputs, const GraphAllReduceOptions& options,
                          const std::string& message) {
    Scope s(graph);
    std::vector<Output> out = AllReduce(s, inputs, options);
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().message();
    EXPECT_EQ(out.size(), inputs.size());
    for (const Output& o : out) EXPECT_FALSE(o.valid());
  };
  expect_error({}, {}, "no inputs");
  expect_error({f, g}, {}, "has shape [3] but input 0");
  expect_error({f, d}, {}, "is double but input 0");
  GraphAllReduceOptions max;
  max.reduction = Reduction::kMax;
  expect_error({f, f}, max, "supports sum and mean, not max");
  GraphAllReduceOptions out_of_range;
  out_of_range.reduce_on = 2;
  expect_error({f, f}, out_of_range, "reduce_on 2 is not one of the 2 inputs");
}

TEST(GraphAllReduce, CollectiveOnEveryDevice) {
  Graph graph;
  Scope root(graph);
  std::vector<Output> in;
  for (int i = 0; i < 3; ++i) {
    in.push_back(Placeholder(root.WithDevice("/device:CPU:" + std::to_string(i)), kFloat32, PartialShape({2})));
  }
  std::vector<Output> out = AllReduce(root, in, {.algorithm = AllReduceAlgorithm::kCollective});
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(out[static_cast<size_t>(i)].node->name(), "all_reduce/device_" + std::to_string(i));
    EXPECT_EQ(out[static_cast<size_t>(i)].node->op(), "CollectiveAllReduce");
    EXPECT_EQ(out[static_cast<size_t>(i)].node->requested_device(), "/device:CPU:" + std::to_string(i));
  }
  Session session(graph, WithCpus(3));
  auto r = session.Run({{in[0], Tensor::Vec<float>({1, 2})},
                        {in[1], Tensor::Vec<float>({3, 4})},
                        {in[2], Tensor::Vec<float>({5, 9})}},
                       out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const Tensor& t : *r) EXPECT_EQ(t.ToVector<float>(), (std::vector<float>{3, 5}));
}

TEST(GraphAllReduce, ManyTensorsPerDeviceWithBothAlgorithms) {
  // Device i holds {a_i [2], b_i [3]}; both algorithms give every device the means.
  for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::kReduceBroadcast, AllReduceAlgorithm::kCollective}) {
    Graph graph;
    Scope root(graph);
    std::vector<std::vector<Output>> in(2);
    FeedList feeds;
    for (int i = 0; i < 2; ++i) {
      Scope d = root.WithDevice("/device:CPU:" + std::to_string(i));
      in[static_cast<size_t>(i)] = {Placeholder(d, kFloat32, PartialShape({2})),
                                    Placeholder(d, kFloat32, PartialShape({3}))};
      const float f = static_cast<float>(2 * i + 1);  // 1, then 3
      feeds.emplace_back(in[static_cast<size_t>(i)][0], Tensor::Vec<float>({f, 2 * f}));
      feeds.emplace_back(in[static_cast<size_t>(i)][1], Tensor::Vec<float>({-f, 0, 10 * f}));
    }
    std::vector<std::vector<Output>> out = AllReduceMany(root, in, {.algorithm = algorithm});
    ASSERT_TRUE(root.ok()) << root.status().ToString();
    if (algorithm == AllReduceAlgorithm::kReduceBroadcast) {
      // Tensor k sums on device k mod 2.
      const Node* sum1 = graph.FindNode("all_reduce/tensor_1/AddN");
      ASSERT_NE(sum1, nullptr);
      EXPECT_EQ(sum1->requested_device(), "/device:CPU:1");
    } else {
      // One meeting per device for the whole list.
      EXPECT_EQ(out[1][0].node, out[1][1].node);
      EXPECT_EQ(out[1][0].node->name(), "all_reduce/device_1");
    }
    Session session(graph, WithCpus(2));
    auto r = session.Run(feeds, {out[0][0], out[0][1], out[1][0], out[1][1]});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ((*r)[static_cast<size_t>(2 * i)].ToVector<float>(), (std::vector<float>{2, 4}));
      EXPECT_EQ((*r)[static_cast<size_t>(2 * i + 1)].ToVector<float>(), (std::vector<float>{-2, 0, 20}));
    }
  }
}

TEST(GraphAllReduce, ManyErrorsNameTheTensorAndDevice) {
  Graph graph;
  Output f2 = Const(Scope(graph), std::vector<float>{1, 2}, TensorShape{2});
  Output f3 = Const(Scope(graph), std::vector<float>{1, 2, 3}, TensorShape{3});
  for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::kReduceBroadcast, AllReduceAlgorithm::kCollective}) {
    auto expect_error = [&](const std::vector<std::vector<Output>>& inputs, const std::string& message) {
      Scope s(graph);
      AllReduceMany(s, inputs, {.algorithm = algorithm});
      ASSERT_FALSE(s.ok()) << message;
      EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status().ToString();
    };
    expect_error({}, "no inputs");
    expect_error({{f2}, {f2, f2}}, "device 1 has 2 tensors but device 0 has 1");
    expect_error({{f2, f2}, {f2, f3}}, "has shape [3] but");
  }
  Scope s(graph);
  AllReduceMany(s, {{f2, f2}, {f2, f3}}, {.algorithm = AllReduceAlgorithm::kCollective});
  EXPECT_NE(s.status().message().find("tensor 1 of device 1"), std::string::npos) << s.status().ToString();
}

TEST(GraphAllReduce, TheCollectiveNeedsOneDeviceTypeAndItsDtypes) {
  Graph graph;
  Scope root(graph);
  Output on_cpu = Const(root.WithDevice("/device:CPU:0"), std::vector<float>{1, 2}, TensorShape{2});
  Output on_gpu = Const(root.WithDevice("/device:GPU:0"), std::vector<float>{1, 2}, TensorShape{2});
  Output bytes = Const(root.WithDevice("/device:CPU:1"), Tensor::Vec<uint8_t>({1, 2}));
  Output bytes0 = Const(root.WithDevice("/device:CPU:0"), Tensor::Vec<uint8_t>({1, 2}));
  {
    Scope s(graph);
    AllReduceMany(s, {{on_cpu}, {on_gpu}}, {.algorithm = AllReduceAlgorithm::kCollective});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("every device of one type"), std::string::npos) << s.status().ToString();
    EXPECT_NE(s.status().message().find("/device:GPU:0"), std::string::npos) << s.status().ToString();
  }
  {
    Scope s(graph);
    AllReduce(s, {on_cpu, on_gpu}, {.algorithm = AllReduceAlgorithm::kCollective});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("every device of one type"), std::string::npos) << s.status().ToString();
  }
  {
    Scope s(graph);
    AllReduceMany(s, {{bytes0}, {bytes}}, {.reduction = Reduction::kSum, .algorithm = AllReduceAlgorithm::kCollective});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("not uint8"), std::string::npos) << s.status().ToString();
  }
  {
    // kAuto: reduce-broadcast, which sums bytes, on any devices.
    Scope s(graph);
    auto out = AllReduceMany(s, {{bytes0}, {bytes}}, {.reduction = Reduction::kSum});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE(out[1][0].valid());
    EXPECT_NE(out[1][0].node->op(), "CollectiveAllReduce");
  }
}

}  // namespace
}  // namespace tw::train
