// A dataset as graph ops: one-shot and initializable iterators, OutOfRange at
// the end, errors naming the element, session close cancelling a waiting
// GetNext, and an iterator's position saved from one session into another.
#include "towerflow/data/iterator_ops.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "towerflow/graph/ops/array_ops.h"
#include "towerflow/graph/ops/math_ops.h"

namespace tw::data {
namespace {

Output I64(const Scope& s, int64_t v) { return Const(s, Tensor::Scalar<int64_t>(v)); }

int64_t Next(Session& session, const Output& x) {
  auto got = session.Run({x});
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  return got.ok() ? (*got)[0].scalar<int64_t>() : -1;
}

TEST(IteratorOpsTest, OneShotThenOutOfRangeAndInitializerRestarts) {
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root, Dataset::Range(3));
  std::vector<Output> next = it.GetNext(root);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].dtype(), kInt64);
  EXPECT_EQ(next[0].shape(), PartialShape(TensorShape{}));
  EXPECT_EQ(next[0].node->op(), "IteratorGetNext");
  Session session(graph);
  EXPECT_EQ(Next(session, next[0]), 0);
  EXPECT_EQ(Next(session, next[0]), 1);
  EXPECT_EQ(Next(session, next[0]), 2);
  auto end = session.Run({next[0]});
  EXPECT_EQ(end.status().code(), Code::kOutOfRange);
  EXPECT_NE(end.status().message().find("End of sequence"), std::string::npos) << end.status().ToString();
  ASSERT_TRUE(session.Run(it.initializer()).ok());
  EXPECT_EQ(Next(session, next[0]), 0);
}

// tf.data's make_initializable_iterator: nothing is read before the
// initializer runs (FailedPrecondition, TensorFlow's message), then as one-shot.
TEST(IteratorOpsTest, AnInitializableIteratorFailsUntilItsInitializerRuns) {
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root, Dataset::Range(3), {.initializable = true});
  std::vector<Output> next = it.GetNext(root);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph);
  auto early = session.Run({next[0]});
  EXPECT_EQ(early.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(early.status().message().find("the iterator has not been initialized"), std::string::npos)
      << early.status().ToString();
  IteratorState state;
  EXPECT_EQ(SaveIterator(session, it, &state).code(), Code::kFailedPrecondition);
  ASSERT_TRUE(session.Run(it.initializer()).ok());
  EXPECT_EQ(Next(session, next[0]), 0);
  EXPECT_EQ(Next(session, next[0]), 1);
  // Another session has its own pass: not initialized there yet.
  Session other(graph);
  EXPECT_EQ(other.Run({next[0]}).status().code(), Code::kFailedPrecondition);
}

TEST(IteratorOpsTest, ComponentsOfSeveralDtypesKeepTheirOrder) {
  Graph graph;
  Scope root(graph);
  Dataset d = Dataset::Range(4).Map([](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Cast(s, x[0], kFloat32), x[0], Cast(s, x[0], kInt32)};
  }).Batch(2);
  GraphIterator it = MakeIterator(root, d);
  std::vector<Output> next = it.GetNext(root);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  ASSERT_EQ(next.size(), 3u);
  EXPECT_EQ(next[0].dtype(), kFloat32);
  EXPECT_EQ(next[1].dtype(), kInt64);
  EXPECT_EQ(next[2].dtype(), kInt32);
  EXPECT_EQ(next[1].shape(), PartialShape({-1}));
  Session session(graph);
  auto got = session.Run(next);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ((*got)[0].ToVector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ((*got)[1].ToVector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*got)[2].ToVector<int32_t>(), (std::vector<int32_t>{0, 1}));
}

TEST(IteratorOpsTest, ADatasetErrorIsRecordedInTheScope) {
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root, Dataset::Range(3).Batch(0));
  EXPECT_FALSE(it.valid());
  EXPECT_EQ(root.status().code(), Code::kInvalidArgument);
  EXPECT_NE(root.status().message().find("Batch"), std::string::npos);
}

TEST(IteratorOpsTest, AMapErrorFailsTheRunNamingNodeAndElement) {
  Graph graph;
  Scope root(graph);
  Dataset d = Dataset::Range(5).Map([](const Scope& s, const std::vector<Output>& x) {
    return std::vector<Output>{Div(s.WithOpName("inverse"), I64(s, 1), Sub(s, x[0], I64(s, 2)))};
  });
  GraphIterator it = MakeIterator(root, d);
  Output next = it.GetNext(root)[0];
  ASSERT_TRUE(root.ok());
  Session session(graph);
  EXPECT_EQ(Next(session, next), 0);  // 1 / -2 truncates to 0
  EXPECT_EQ(Next(session, next), -1);
  auto failed = session.Run({next});
  EXPECT_EQ(failed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(failed.status().message().find("IteratorGetNext"), std::string::npos) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("Map: element 2"), std::string::npos) << failed.status().ToString();
  EXPECT_NE(failed.status().message().find("inverse"), std::string::npos) << failed.status().ToString();
}

TEST(IteratorOpsTest, ClosingTheSessionCancelsAWaitingGetNext) {
  Graph graph;
  Scope root(graph);
  // Every element costs a long chain of adds: the consumer outruns the map.
  Dataset d = Dataset::Range(1000000)
                  .Map(
                      [](const Scope& s, const std::vector<Output>& x) {
                        Output v = x[0];
                        for (int i = 0; i < 200; ++i) v = Add(s, v, I64(s, 0));
                        return std::vector<Output>{v};
                      },
                      {.num_parallel_calls = 1})
                  .Prefetch(1);
  Output next = MakeIterator(root, d).GetNext(root)[0];
  ASSERT_TRUE(root.ok());
  Session session(graph);
  std::atomic<int64_t> closed_at{0};
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    closed_at.store(std::chrono::steady_clock::now().time_since_epoch().count());
    session.Close();
  });
  Status s;
  while (true) {
    auto got = session.Run({next});
    if (!got.ok()) {
      s = got.status();
      break;
    }
  }
  const auto returned = std::chrono::steady_clock::now();
  closer.join();
  EXPECT_EQ(s.code(), Code::kCancelled) << s.ToString();
  // From Close to the waiting run's return: within a second (the bound).
  const auto closed = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(closed_at.load()));
  EXPECT_LT(returned - closed, std::chrono::seconds(1));
}

TEST(IteratorOpsTest, APositionSavedInOneSessionContinuesInAnother) {
  auto make = [] { return Dataset::Range(30).Shuffle(10, {.seed = 4}).Batch(3).Prefetch(2); };
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root, make());
  Output next = it.GetNext(root)[0];
  ASSERT_TRUE(root.ok());
  std::vector<int64_t> whole, resumed;
  {
    Graph g;
    Scope r(g);
    Output n = MakeIterator(r, make()).GetNext(r)[0];
    Session s(g);
    for (int i = 0; i < 10; ++i) {
      auto v = s.Run({n});
      ASSERT_TRUE(v.ok());
      for (int64_t x : (*v)[0].ToVector<int64_t>()) whole.push_back(x);
    }
  }
  IteratorState state;
  {
    Session first(graph);
    for (int i = 0; i < 4; ++i) {
      auto v = first.Run({next});
      ASSERT_TRUE(v.ok());
      for (int64_t x : (*v)[0].ToVector<int64_t>()) resumed.push_back(x);
    }
    ASSERT_TRUE(SaveIterator(first, it, &state).ok());
  }
  Session second(graph);
  ASSERT_TRUE(RestoreIterator(second, it, state).ok());
  for (int i = 0; i < 6; ++i) {
    auto v = second.Run({next});
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    for (int64_t x : (*v)[0].ToVector<int64_t>()) resumed.push_back(x);
  }
  EXPECT_EQ(resumed, whole);
  EXPECT_EQ(second.Run({next}).status().code(), Code::kOutOfRange);
}

TEST(IteratorOpsTest, PrefetchToDeviceHandsOutElementsInTheDevicesMemory) {
  Graph graph;
  Scope root(graph);
  Dataset d = Dataset::Range(10)
                  .Map([](const Scope& s, const std::vector<Output>& x) {
                    return std::vector<Output>{Cast(s, x[0], kFloat32)};
                  })
                  .Batch(2)
                  .PrefetchToDevice("/gpu:0", 2);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  GraphIterator it = MakeIterator(root.WithDevice("/device:CPU:0"), d);
  EXPECT_EQ(it.device(), "/device:GPU:0");
  // Built in a CPU scope, the GetNext still goes to the GPU.
  Output next = it.GetNext(root.WithDevice("/device:CPU:0"))[0];
  Output twice = Add(root.WithDevice("/device:GPU:0"), next, next);
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  Session session(graph, {.num_fake_gpus = 1});
  for (int b = 0; b < 5; ++b) {
    auto got = session.Run({next, twice});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ((*got)[0].ToVector<float>(), (std::vector<float>{2.0f * b, 2.0f * b + 1}));
    EXPECT_EQ((*got)[1].ToVector<float>(), (std::vector<float>{4.0f * b, 4.0f * b + 2}));
  }
  EXPECT_EQ(session.PlacedDevice(*next.node), "/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_EQ(session.Run({next}).status().code(), Code::kOutOfRange);
  // Elements already on the device are not in a checkpoint's position.
  IteratorState state;
  EXPECT_EQ(SaveIterator(session, it, &state).code(), Code::kUnimplemented);
  // The initializer starts a new pass, prefetched again.
  ASSERT_TRUE(session.Run(it.initializer()).ok());
  auto first = session.Run({next});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)[0].ToVector<float>(), (std::vector<float>{0, 1}));
}

TEST(IteratorOpsTest, PrefetchToDeviceComesLastAndNamesOneDevice) {
  Dataset d = Dataset::Range(4).PrefetchToDevice("/gpu:0");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.DebugString(), "PrefetchToDevice[/device:GPU:0](Range)");
  Dataset after = d.Batch(2);
  EXPECT_EQ(after.status().code(), Code::kInvalidArgument);
  EXPECT_NE(after.status().message().find("PrefetchToDevice must be the last transformation"), std::string::npos);
  EXPECT_EQ(Dataset::Range(4).PrefetchToDevice("gpu").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Dataset::Range(4).PrefetchToDevice("/gpu:0", 0).status().code(), Code::kInvalidArgument);
  // Iterated from C++ it is a Prefetch.
  auto cpp = d.MakeIterator();
  ASSERT_TRUE(cpp.ok());
  Element e;
  std::vector<int64_t> got;
  while ((*cpp)->GetNext(&e).ok()) got.push_back(e[0].scalar<int64_t>());
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3}));
  // A string component cannot go to a device without host memory; the fake
  // GPU (host memory) takes it.
  Graph graph;
  Scope root(graph);
  GraphIterator it = MakeIterator(root, Dataset::FromTensorSlices({Tensor::Vec<std::string>({"a", "b"})})
                                            .PrefetchToDevice("/gpu:0"));
  Output next = it.GetNext(root)[0];
  ASSERT_TRUE(root.ok());
  Session session(graph, {.num_fake_gpus = 1});
  auto s = session.Run({next});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)[0].scalar<std::string>(), "a");
}

}  // namespace
}  // namespace tw::data
