// A program outside towerflow's tree, built against an installed towerflow
// (find_package or pkg-config; tests/install/run.sh): fits y = 3x - 1 with a
// session and gradient descent, writes tf.train.Example records (built with
// the public ExampleBuilder, GZIP-compressed) and counts them. Prints the
// first and last loss and the session's devices; exits 0 when the loss fell a
// hundredfold and every record came back.
#include <towerflow/towerflow.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  const std::string records = argc > 1 ? argv[1] : "consumer.tfrecord";
  tw::Graph graph;
  tw::Scope root(graph);
  graph.set_seed(1);
  auto x = tw::Placeholder(root.WithOpName("x"), tw::kFloat32, {-1, 1});
  auto y = tw::Placeholder(root.WithOpName("y"), tw::kFloat32, {-1, 1});
  auto w = tw::GetVariable(root, "w", {1, 1}, {.initializer = tw::ZerosInitializer()});
  auto b = tw::GetVariable(root, "b", {1}, {.initializer = tw::ZerosInitializer()});
  auto err = tw::Sub(root, tw::BiasAdd(root, tw::MatMul(root, x, w.value), b.value), y);
  auto loss = tw::Mean(root, tw::Square(root, err), {0, 1});
  tw::train::GradientDescent sgd({.learning_rate = 0.1});
  tw::Node* train_op = sgd.Minimize(root, loss);
  if (!root.ok()) return tw::Fail(root.status());

  tw::Session session(graph);
  if (tw::Status s = session.Run(tw::GlobalVariablesInitializer(graph)); !s.ok()) return tw::Fail(s);
  const tw::Tensor xs = tw::Tensor::FromVector<float>({-1, 0, 1, 2}, tw::TensorShape{4, 1});
  const tw::Tensor ys = tw::Tensor::FromVector<float>({-4, -1, 2, 5}, tw::TensorShape{4, 1});
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    auto out = session.Run({{x, xs}, {y, ys}}, {loss}, {train_op});
    if (!out.ok()) return tw::Fail(out.status());
    last = (*out)[0].scalar<float>();
    if (step == 0) first = last;
  }

  auto writer = tw::RecordWriter::Open(records, {.compression = tw::Compression::kGzip});
  if (!writer.ok()) return tw::Fail(writer.status());
  for (int i = 0; i < 3; ++i) {
    tw::io::ExampleBuilder example;
    example.SetBytes("name", "record " + std::to_string(i)).SetInt64("label", {i}).SetFloat("x", {0.5f * i});
    auto bytes = example.Serialize();
    if (!bytes.ok()) return tw::Fail(bytes.status());
    if (tw::Status s = (*writer)->WriteRecord(*bytes); !s.ok()) return tw::Fail(s);
  }
  if (tw::Status s = (*writer)->Close(); !s.ok()) return tw::Fail(s);
  auto count = tw::CountRecords(records, tw::Compression::kGzip);
  if (!count.ok()) return tw::Fail(count.status());

  std::string devices;
  for (const tw::DeviceAttributes& d : session.ListDevices()) devices += " " + d.short_name;
  std::printf("loss %.6f -> %.6f, %lld records, devices%s\n", first, last, static_cast<long long>(*count),
              devices.c_str());
  return last < first / 100 && *count == 3 ? 0 : 1;
}
