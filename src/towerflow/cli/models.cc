#include "towerflow/cli/models.h"

#include <charconv>

#include "example.pb.h"

namespace tw::cli {
namespace {

constexpr int64_t kImageSide = 28;
constexpr int64_t kImageBytes = kImageSide * kImageSide;
constexpr int64_t kClasses = 10;
constexpr int64_t kMaxHiddenLayers = 16;
constexpr int64_t kMaxUnits = 65536;
constexpr float kCnnDropout = 0.4f;

bool ParseInt(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

Status SchemaError(const std::string& file, const std::string& model, const std::string& what) {
  return errors::InvalidArgument(file, ": record 0 does not fit --model ", model, ": ", what);
}

// The feature `key` of `example`, checked to be a bytes list of one value.
StatusOr<std::string> OneBytes(const tensorflow::Example& example, const std::string& key) {
  const auto& map = example.features().feature();
  auto it = map.find(key);
  if (it == map.end()) return errors::InvalidArgument("no feature '", key, "'");
  if (!it->second.has_bytes_list() || it->second.bytes_list().value_size() != 1) {
    return errors::InvalidArgument("feature '", key, "' must hold one bytes value");
  }
  return it->second.bytes_list().value(0);
}

Status CheckImageSchema(const tensorflow::Example& example) {
  auto image = OneBytes(example, "image");
  if (!image.ok()) return image.status();
  if (static_cast<int64_t>(image->size()) != kImageBytes) {
    return errors::InvalidArgument("feature 'image' holds ", image->size(), " bytes, not ", kImageBytes,
                                   " (28x28 uint8)");
  }
  const auto& map = example.features().feature();
  auto label = map.find("label");
  if (label == map.end()) return errors::InvalidArgument("no feature 'label'");
  if (!label->second.has_int64_list() || label->second.int64_list().value_size() != 1) {
    return errors::InvalidArgument("feature 'label' must hold one int64 value");
  }
  return Status::OK();
}

Status CheckSeedSchema(const tensorflow::Example& example, int64_t* n_features) {
  auto x = OneBytes(example, "x");
  if (!x.ok()) return x.status();
  if (x->empty() || x->size() % 8 != 0) {
    return errors::InvalidArgument("feature 'x' holds ", x->size(),
                                   " bytes, not int32 [2, F] (a non-zero multiple of 8)");
  }
  auto labels = OneBytes(example, "labels");
  if (!labels.ok()) return labels.status();
  if (labels->size() != 8) {
    return errors::InvalidArgument("feature 'labels' holds ", labels->size(), " bytes, not int32 [1, 2] (8)");
  }
  *n_features = static_cast<int64_t>(x->size() / 8);
  return Status::OK();
}

Output Dense(const Scope& scope, const std::string& name, const Output& in, int64_t fan_in, int64_t units,
             bool relu, std::vector<Variable>* kernels) {
  Scope s = scope.WithVariableScope(name);
  Variable w = GetVariable(s, "kernel", {fan_in, units});
  Variable b = GetVariable(s, "bias", {units}, {.initializer = ZerosInitializer()});
  kernels->push_back(w);
  Output z = MatMul(s, in, w.value);
  return relu ? BiasAddRelu(s, z, b.value) : BiasAdd(s, z, b.value);
}

Output ConvLayer(const Scope& scope, const std::string& name, const Output& in, int64_t in_channels,
                 int64_t out_channels, std::vector<Variable>* kernels) {
  Scope s = scope.WithVariableScope(name);
  Variable w = GetVariable(s, "kernel", {5, 5, in_channels, out_channels});
  Variable b = GetVariable(s, "bias", {out_channels}, {.initializer = ZerosInitializer()});
  kernels->push_back(w);
  Output conv = Conv2D(s, in, w.value, {.padding = "SAME"});
  return BiasAddRelu(s, conv, b.value);
}

// Dense ReLU layers "hidden1".."hiddenN", then "logits".
Output MlpLogits(const Scope& s, const Output& input, int64_t width, const std::vector<int64_t>& hidden,
                 int64_t classes, std::vector<Variable>* kernels) {
  Output h = input;
  int64_t fan_in = width;
  for (size_t i = 0; i < hidden.size(); ++i) {
    h = Dense(s, "hidden" + std::to_string(i + 1), h, fan_in, hidden[i], true, kernels);
    fan_in = hidden[i];
  }
  return Dense(s, "logits", h, fan_in, classes, false, kernels);
}

Output CnnLogits(const Scope& s, const Output& images, bool training, std::vector<Variable>* kernels) {
  Output c1 = ConvLayer(s, "conv1", images, 1, 32, kernels);
  Output p1 = MaxPool(s.WithOpName("pool1"), c1);
  Output c2 = ConvLayer(s, "conv2", p1, 32, 64, kernels);
  Output p2 = MaxPool(s.WithOpName("pool2"), c2);
  const int32_t flat_width = 7 * 7 * 64;
  Output flat = Reshape(s, p2, {-1, flat_width});
  Output dense = Dense(s, "dense", flat, flat_width, 1024, true, kernels);
  if (training) dense = Dropout(s, dense, kCnnDropout).output;
  return Dense(s, "logits", dense, 1024, kClasses, false, kernels);
}

// A batch of pixels as float in [0, 1], shaped for the model: [n, 784] or [n, 28, 28, 1].
Output ImageInput(const Scope& s, const Output& pixels, const ModelConfig& config) {
  Output scaled = Mul(s, Cast(s, pixels, kFloat32), Const(s, 1.0f / 255.0f));
  const int32_t side = static_cast<int32_t>(kImageSide);
  if (config.name == "cnn") return Reshape(s, scaled, {-1, side, side, 1});
  return Reshape(s, scaled, {-1, side * side});
}

io::FeatureMap Features(const ModelConfig& config) {
  if (config.name == "seed") {
    return {{"x", io::FixedLenFeature(kString)}, {"labels", io::FixedLenFeature(kString)}};
  }
  return {{"image", io::FixedLenFeature(kString)}, {"label", io::FixedLenFeature(kInt64)}};
}

}  // namespace

StatusOr<std::vector<int64_t>> ParseHidden(const std::string& text) {
  std::vector<int64_t> units;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t value = 0;
    if (!ParseInt(item, &value) || value < 1 || value > kMaxUnits) {
      return errors::InvalidArgument("--hidden '", text, "': '", item, "' is not a layer width in 1..", kMaxUnits,
                                     " (expected a comma-separated list such as 256,256)");
    }
    units.push_back(value);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (static_cast<int64_t>(units.size()) > kMaxHiddenLayers) {
    return errors::InvalidArgument("--hidden '", text, "': more than ", kMaxHiddenLayers, " layers");
  }
  return units;
}

Status CheckSchema(const std::string& record, const std::string& file, ModelConfig* config) {
  tensorflow::Example example;
  if (!example.ParseFromString(record)) {
    return SchemaError(file, config->name, "not a tf.train.Example");
  }
  Status status = config->name == "seed" ? CheckSeedSchema(example, &config->n_features) : CheckImageSchema(example);
  if (!status.ok()) return SchemaError(file, config->name, status.message());
  return Status::OK();
}

std::map<std::string, std::string> ModelMetadata(const ModelConfig& config) {
  std::string hidden;
  for (int64_t u : config.hidden) hidden += (hidden.empty() ? "" : ",") + std::to_string(u);
  std::map<std::string, std::string> m = {{"model", config.name}, {"hidden", hidden}};
  if (config.name == "seed") m["n_features"] = std::to_string(config.n_features);
  return m;
}

StatusOr<ModelConfig> ModelFromMetadata(const std::map<std::string, std::string>& metadata) {
  ModelConfig config;
  auto model = metadata.find("model");
  if (model == metadata.end() || (model->second != "mlp" && model->second != "cnn" && model->second != "seed")) {
    return errors::InvalidArgument("checkpoint metadata: 'model' missing or not mlp|cnn|seed");
  }
  config.name = model->second;
  if (config.name != "cnn") {
    auto hidden = metadata.find("hidden");
    if (hidden == metadata.end()) return errors::InvalidArgument("checkpoint metadata: 'hidden' missing");
    auto units = ParseHidden(hidden->second);
    if (!units.ok()) return errors::InvalidArgument("checkpoint metadata: ", units.status().message());
    config.hidden = *units;
  }
  if (config.name == "seed") {
    auto f = metadata.find("n_features");
    if (f == metadata.end() || !ParseInt(f->second, &config.n_features) || config.n_features < 1) {
      return errors::InvalidArgument("checkpoint metadata: 'n_features' missing or not a positive integer");
    }
  }
  return config;
}

tw::Batch DecodeBatch(const Scope& scope, const Output& serialized, const ModelConfig& config,
                      const Output& names) {
  Scope s = scope.NewSubScope("decode");
  io::ParsedFeatures f = io::ParseExample(s, serialized, Features(config), names);
  if (config.name == "seed") {
    const int32_t width = static_cast<int32_t>(config.n_features);
    Output x = Reshape(s, io::DecodeRaw(s, f["x"], kInt32), {-1, 2, width});
    Output labels = Reshape(s, io::DecodeRaw(s, f["labels"], kInt32), {-1, 1, 2});
    return {x, labels};
  }
  // The pixels stay bytes until the tower (BuildModel): the shuffle queue
  // then holds and copies a quarter of the bytes, and a GPU tower receives them.
  const int32_t pixels = static_cast<int32_t>(kImageBytes);
  // The labels stay int64 as parsed: the loss and the accuracy both read them
  // so, with no Cast in the tower (nor a second copy of them to a GPU).
  return {Reshape(s, io::DecodeRaw(s, f["image"], kUInt8), {-1, pixels}), f["label"]};
}

ModelOutputs BuildModel(const Scope& scope, const tw::Batch& batch, const ModelConfig& config, bool training,
                        double l2) {
  ModelOutputs out;
  if (batch.size() != 2) {
    scope.UpdateStatus(errors::InvalidArgument("BuildModel: a batch of {input, label}, got ", batch.size(),
                                               " tensors"));
    return out;
  }
  std::vector<Variable> kernels;
  if (config.name == "seed") {
    const int32_t width = static_cast<int32_t>(2 * config.n_features);
    Output flat = Reshape(scope, Cast(scope, batch[0], kFloat32), {-1, width});
    Output scaled = Mul(scope, flat, Const(scope, 1.0f / 15.0f));
    out.logits = MlpLogits(scope, scaled, width, config.hidden, 2, &kernels);
    Output onehot = Reshape(scope, Cast(scope, batch[1], kFloat32), {-1, 2});
    Output xent = SoftmaxCrossEntropyWithLogits(scope, out.logits, onehot).loss;
    out.loss = Mean(scope.WithOpName("xent"), xent, {0});
    out.correct = Cast(scope, Equal(scope, ArgMax(scope, out.logits, 1), ArgMax(scope, onehot, 1)), kFloat32);
  } else {
    const Output images = batch[0].dtype() == kUInt8 ? ImageInput(scope, batch[0], config) : batch[0];
    out.logits = config.name == "cnn" ? CnnLogits(scope, images, training, &kernels)
                                      : MlpLogits(scope, images, kImageBytes, config.hidden, kClasses, &kernels);
    // The mean, its gradient and the rows classified correctly, as one op
    // (a GPU runs it as two kernels where the separate ops take nine).
    SoftmaxXentMeanResult x = SparseSoftmaxCrossEntropyMean(scope.WithOpName("xent"), out.logits, batch[1]);
    out.loss = x.loss;
    out.correct = x.correct;
  }
  if (l2 > 0) out.loss = Add(scope.WithOpName("total_loss"), out.loss, train::L2Regularization(scope, kernels, l2));
  return out;
}

}  // namespace tw::cli
