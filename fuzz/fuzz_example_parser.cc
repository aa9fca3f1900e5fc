// fuzz_example_parser: differential. The input's first 3 bytes choose a parse
// config, the rest is a serialized tf.train.Example; towerflow's fast parser
// (ExampleParser::ParseSingle) and libprotobuf (tensorflow::Example::ParseFromArray,
// then TF's parse_example rules: ReferenceParse in data/example_test_oracle.h)
// must agree exactly as in data/example_parser_differential_test.cc:
//   - the same status code;
//   - when libprotobuf rejects the bytes, the fast parser's message starts with
//     "Could not parse example input, value: '" (the oracle does not rebuild
//     TF's escaped excerpt of the bytes); for any other error, the same message;
//   - when both accept, the same dense and sparse tensors, floats bit for bit.
// There is no documented difference to allow for: example_parser.h promises to
// accept exactly what libprotobuf accepts (where TF's own fast parser is
// stricter, towerflow follows libprotobuf). On top, a batch of the input twice
// must fail with the single parse's status, or give [2] + shape outputs.
//
// Config bytes, two bits per key for keys "a", "b", "c", "d":
//   byte 0  role: 0 absent, 1 VarLenFeature, 2 FixedLenFeature, 3 FixedLen with a default
//   byte 1  dtype: 0 and 3 int64, 1 float, 2 string
//   byte 2  FixedLen shape: 0 [], 1 [2], 2 [0], 3 [1, 3]
#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "towerflow/data/example_parser.h"
#include "towerflow/data/example_test_oracle.h"

namespace tw {
namespace {

using example_test::kParseErrorPrefix;
using example_test::SameTensor;

[[noreturn]] void Fail(std::string_view bytes, const std::string& what) {
  std::fprintf(stderr, "fuzz_example_parser: %s\nbytes: %s\n", what.c_str(), example_test::Hex(bytes).c_str());
  std::abort();
}

Tensor DefaultValue(DataType dtype, const TensorShape& shape) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    if (dtype == kInt64) t.data<int64_t>()[i] = 7 + i;
    if (dtype == kFloat32) t.data<float>()[i] = 0.25f * static_cast<float>(i);
    if (dtype == kString) t.data<std::string>()[i] = "dflt" + std::to_string(i);
  }
  return t;
}

ParseConfig ConfigFrom(const uint8_t* head) {
  static const char* kKeys[] = {"a", "b", "c", "d"};
  static const DataType kTypes[] = {kInt64, kFloat32, kString, kInt64};
  ParseConfig config;
  for (int k = 0; k < 4; ++k) {
    const int role = (head[0] >> (2 * k)) & 3;
    const DataType dtype = kTypes[(head[1] >> (2 * k)) & 3];
    const int shape_code = (head[2] >> (2 * k)) & 3;
    const TensorShape shape = shape_code == 0   ? TensorShape{}
                              : shape_code == 1 ? TensorShape{2}
                              : shape_code == 2 ? TensorShape{0}
                                                : TensorShape{1, 3};
    if (role == 1) config.sparse.push_back(VarLenFeature{kKeys[k], dtype});
    if (role == 2) config.dense.push_back(FixedLenFeature{kKeys[k], dtype, shape, std::nullopt});
    if (role == 3) config.dense.push_back(FixedLenFeature{kKeys[k], dtype, shape, DefaultValue(dtype, shape)});
  }
  return config;
}

void CheckSame(std::string_view bytes, const char* what, const Tensor& got, const Tensor& want) {
  const ::testing::AssertionResult same = SameTensor(got, want);
  if (!same) Fail(bytes, std::string(what) + " differs: " + same.message());
}

}  // namespace
}  // namespace tw

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // libprotobuf logs every invalid UTF-8 key it meets.
  static google::protobuf::LogSilencer* silence = new google::protobuf::LogSilencer;
  (void)silence;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw;
  if (size < 3) return 0;
  const ParseConfig config = ConfigFrom(data);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 3), size - 3);
  StatusOr<ExampleParser> parser = ExampleParser::Create(config);
  if (!parser.ok()) Fail(bytes, "config rejected: " + parser.status().ToString());

  ParseResult want, got;
  const Status want_status = example_test::ReferenceParse(bytes, config, &want);
  const Status got_status = parser->ParseSingle(bytes, &got);
  if (got_status.code() != want_status.code()) {
    Fail(bytes, "fast parser: " + got_status.ToString() + "; libprotobuf: " + want_status.ToString());
  }
  if (!want_status.ok()) {
    if (want_status.message() == kParseErrorPrefix) {
      if (got_status.message().rfind(kParseErrorPrefix, 0) != 0) {
        Fail(bytes, "libprotobuf rejects the bytes; the fast parser says " + got_status.ToString());
      }
    } else if (got_status.message() != want_status.message()) {
      Fail(bytes, "fast parser: " + got_status.ToString() + "; libprotobuf: " + want_status.ToString());
    }
  } else {
    if (got.dense.size() != want.dense.size() || got.sparse.size() != want.sparse.size()) {
      Fail(bytes, "output counts differ");
    }
    for (size_t i = 0; i < want.dense.size(); ++i) CheckSame(bytes, "dense", got.dense[i], want.dense[i]);
    for (size_t i = 0; i < want.sparse.size(); ++i) {
      CheckSame(bytes, "sparse indices", got.sparse[i].indices, want.sparse[i].indices);
      CheckSame(bytes, "sparse values", got.sparse[i].values, want.sparse[i].values);
      CheckSame(bytes, "sparse dense_shape", got.sparse[i].dense_shape, want.sparse[i].dense_shape);
    }
  }

  // The same record twice as a batch: the first bad example's error, which is the
  // single parse's (Index 0), or outputs stacked on a new leading dimension.
  ParseResult batch;
  const Status batch_status = parser->ParseBatch({bytes, bytes}, &batch);
  if (batch_status != got_status) {
    Fail(bytes, "batch: " + batch_status.ToString() + "; single: " + got_status.ToString());
  }
  if (batch_status.ok()) {
    for (size_t i = 0; i < config.dense.size(); ++i) {
      std::vector<int64_t> dims = {2};
      for (int64_t d : config.dense[i].shape.dims()) dims.push_back(d);
      if (batch.dense[i].shape() != TensorShape(dims)) Fail(bytes, "batch dense shape " + batch.dense[i].shape().ToString());
    }
    for (size_t i = 0; i < config.sparse.size(); ++i) {
      const int64_t n = got.sparse[i].values.NumElements();
      if (batch.sparse[i].values.NumElements() != 2 * n ||
          batch.sparse[i].dense_shape.ToVector<int64_t>() != std::vector<int64_t>{2, n}) {
        Fail(bytes, "batch sparse outputs for " + config.sparse[i].key);
      }
    }
  }
  return 0;
}
