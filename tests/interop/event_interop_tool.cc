// The C++ side of the TensorBoard interop test (tensorboard_reads_events.py):
//
//   event_interop_tool --logdir DIR [--steps N]
//
// Writes one event file into DIR with EventFileWriter: scalars "loss" and
// "accuracy" at steps 0..N-1 (even steps as one Event holding both, odd steps
// as one Event each), then the graph of a small two-device model (placeholders,
// variables, MatMul, BiasAdd, Relu, softmax cross-entropy with its two
// outputs, a mean loss, gradient descent with control dependencies), each node
// with the device a Session placed it on. Prints one JSON object saying what it
// wrote:
//   {"file": PATH, "events": COUNT (file_version included),
//    "scalars": {"loss": [[step, float32 bits], ...], "accuracy": [...]},
//    "nodes": [{"name", "op", "inputs": [...], "device"}, ...]}
// Exit status 0 on success; 1 with "towerflow: <Code>: <message>" on stderr.
#include <CLI/CLI.hpp>
#include <bit>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "towerflow/towerflow.h"
#include "towerflow/train/event_writer.h"

namespace {

using Json = nlohmann::json;

// The values the Python side expects too; computed in double, stored as float.
double Loss(int64_t step) { return 2.0 / static_cast<double>(step + 1) - 0.01 * static_cast<double>(step); }
double Accuracy(int64_t step) { return 1.0 - 1.0 / static_cast<double>(step + 2); }

uint32_t Bits(double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); }

// A two-layer classifier, the first layer on CPU:0 and the rest on CPU:1.
tw::Status BuildModel(tw::Graph& graph) {
  tw::Scope root(graph);
  auto x = tw::Placeholder(root.WithOpName("x"), tw::kFloat32, tw::PartialShape{-1, 4});
  auto labels = tw::Placeholder(root.WithOpName("labels"), tw::kFloat32, tw::PartialShape{-1, 3});
  tw::Scope l1 = root.WithDevice("/cpu:0").WithVariableScope("layer1");
  auto w1 = tw::GetVariable(l1, "w", tw::TensorShape{4, 8});
  auto b1 = tw::GetVariable(l1, "b", tw::TensorShape{8});
  auto h = tw::Relu(l1, tw::BiasAdd(l1, tw::MatMul(l1, x, w1.value), b1.value));
  tw::Scope l2 = root.WithDevice("/cpu:1").WithVariableScope("layer2");
  auto w2 = tw::GetVariable(l2, "w", tw::TensorShape{8, 3});
  auto logits = tw::MatMul(l2, h, w2.value);
  auto xent = tw::SoftmaxCrossEntropyWithLogits(root.WithDevice("/cpu:1").WithOpName("xent"), logits, labels);
  auto loss = tw::Mean(root.WithOpName("loss"), xent.loss, {0});
  tw::train::GradientDescent opt({.learning_rate = 0.1});
  opt.Minimize(root, loss);
  tw::VariablesInitializer(root.WithOpName("init"), {w1, b1, w2});
  return root.status();
}

int Run(const std::string& logdir, int64_t steps) {
  tw::Graph graph;
  tw::Status s = BuildModel(graph);
  if (!s.ok()) return tw::Fail(s);
  tw::SessionOptions options;
  options.num_cpu_devices = 2;
  tw::Session session(graph, options);  // places every node
  std::map<std::string, std::string> devices;
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const tw::Node& n = *graph.node(id);
    std::string d = session.PlacedDevice(n);
    if (!d.empty()) devices[n.name()] = d;
  }

  auto writer_or = tw::train::EventFileWriter::Create(logdir);
  if (!writer_or.ok()) return tw::Fail(writer_or.status());
  auto writer = std::move(writer_or).value();
  Json scalars = {{"loss", Json::array()}, {"accuracy", Json::array()}};
  int64_t events = 1;
  for (int64_t step = 0; step < steps; ++step) {
    if (step % 2 == 0) {
      s = writer->AddScalars(step, {{"loss", Loss(step)}, {"accuracy", Accuracy(step)}});
      events += 1;
    } else {
      s = writer->AddScalar("loss", Loss(step), step);
      if (s.ok()) s = writer->AddScalar("accuracy", Accuracy(step), step);
      events += 2;
    }
    if (!s.ok()) return tw::Fail(s);
    scalars["loss"].push_back({step, Bits(Loss(step))});
    scalars["accuracy"].push_back({step, Bits(Accuracy(step))});
  }
  s = writer->AddGraph(graph, devices);
  events += 1;
  if (s.ok()) s = writer->Close();
  if (!s.ok()) return tw::Fail(s);

  Json nodes = Json::array();
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const tw::Node& n = *graph.node(id);
    Json inputs = Json::array();
    for (const tw::Output& in : n.inputs()) {
      inputs.push_back(in.index == 0 ? in.node->name() : in.node->name() + ":" + std::to_string(in.index));
    }
    for (const tw::Node* c : n.control_inputs()) inputs.push_back("^" + c->name());
    auto d = devices.find(n.name());
    nodes.push_back({{"name", n.name()},
                     {"op", n.op()},
                     {"inputs", std::move(inputs)},
                     {"device", d != devices.end() ? d->second : n.requested_device()}});
  }
  Json out = {{"file", writer->path()}, {"events", events}, {"scalars", std::move(scalars)},
              {"nodes", std::move(nodes)}};
  std::cout << out.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes a TensorBoard logdir (scalars and a graph) with EventFileWriter", "event_interop_tool"};
  std::string logdir;
  int64_t steps = 20;
  app.add_option("--logdir", logdir, "the log directory (made if missing)")->required();
  app.add_option("--steps", steps, "scalar steps 0..N-1")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return Run(logdir, steps);
}
