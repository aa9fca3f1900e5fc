// Parsing serialized tf.train.Example records into tensors: TF's parse_example
// and parse_single_example, with the semantics and error texts of TF's fast
// parser (tensorflow/core/util/example_proto_fast_parsing.cc).
//
// The parser walks the protobuf wire format of the bytes it is given (no copy of
// the input, no protobuf message objects, no global state) and writes the
// configured features straight into the output tensors. It accepts exactly the
// bytes libprotobuf's tensorflow::Example::ParseFromArray accepts, and reads them
// the same way: concatenated Examples merge, a later map entry for a key replaces
// an earlier one, packed and unpacked lists are both read, unknown fields are
// skipped. Features not in the config are checked for well-formedness but not
// decoded.
//
// Where TF's own hand-written fast parser departs from libprotobuf, towerflow
// follows libprotobuf (as does TF's slow path, which decodes the message). TF's
// fast parser rejects unknown fields inside Features, BytesList and map entries,
// and entries lacking a key or a value; towerflow skips and defaults them. TF's
// reads only the first list field of a Feature and the first packed run of a
// float list; towerflow merges them as protobuf does (a later kind replaces an
// earlier one, runs of the same kind add up). TF's does not look at unconfigured
// features or check that keys are UTF-8; towerflow rejects malformed bytes
// anywhere in the record, and keys that are not UTF-8 (proto3 strings), as
// libprotobuf does. Records written by TF or libprotobuf contain none of these.
//
// Errors are InvalidArgument Statuses, never crashes, whatever the bytes:
//   Could not parse example input, value: '<first 40 bytes, C-escaped>'
//       (preceded by "Name: <name>, " when the example has a name)
//   Name: <unknown>, Feature: <key> (data type: int64) is required but could not be found.
//       The record has: image, label.     (its keys: DescribeRecordKeys)
//   Name: <unknown>, Key: <key>, Index: <i>.  Number of int64 values != expected.
//       Values size: 3 but output shape: [2]        (one line in the message)
//   Name: <unknown>, Feature: <key>.  Data types don't match. Data type: float Expected type: int64
// (<unknown> is the example's name when one is given; <i> is the example's
// index in the batch, 0 for a single example; "bytes" and
// "float" replace "int64" for those lists.) Output tensors are allocated only
// after the checks that bound their size by the bytes present, so hostile bytes
// cannot make the parser allocate more than the config and input imply.
//
// ExampleParser is immutable after Create and thread-safe: many threads may parse
// with one parser at once. The free functions validate and index the config on
// every call; a loop should hold an ExampleParser instead.
#ifndef TOWERFLOW_DATA_EXAMPLE_PARSER_H_
#define TOWERFLOW_DATA_EXAMPLE_PARSER_H_

#include <string_view>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/threadpool.h"
#include "towerflow/data/example_config.h"
#include "towerflow/data/internal/example_wire.h"

namespace tw {

class ExampleParser {
 public:
  // InvalidArgument with ParseConfig::Validate's message for a bad config.
  static StatusOr<ExampleParser> Create(ParseConfig config);

  const ParseConfig& config() const { return config_; }

  // One Example. out->dense[i] has shape config.dense[i].shape; out->sparse[i]
  // indices [n, 1], values [n], dense_shape [1]. Errors name the example
  // `name` (TF's parse_example `names`: the reader's "<file>:<offset>" key),
  // "<unknown>" when empty. On error *out is unspecified.
  Status ParseSingle(std::string_view serialized, ParseResult* out, std::string_view name = {}) const;

  // A batch of Examples, parallel over examples on `pool` when given (inline
  // otherwise). out->dense[i] has shape [batch] + config.dense[i].shape;
  // out->sparse[i] indices [n, 2] = (example, position), values [n], dense_shape
  // [batch, longest list]. An empty batch gives empty outputs. When several
  // examples are bad the error is that of the first one. InvalidArgument also when
  // [batch] + shape overflows int64; ResourceExhausted when an output does not
  // fit in memory. Errors name example e as (*names)[e] when `names` is given
  // (InvalidArgument when it does not hold one name per example), else
  // "<unknown>". On error *out is unspecified.
  Status ParseBatch(const std::vector<std::string_view>& serialized, ParseResult* out,
                    ThreadPool* pool = nullptr, const std::vector<std::string_view>* names = nullptr) const;

 private:
  ExampleParser(ParseConfig config, example_wire::KeyIndex index)
      : config_(std::move(config)), index_(std::move(index)) {}

  ParseConfig config_;
  example_wire::KeyIndex index_;  // dense keys are slots 0..D-1, then sparse keys
};

// What a missing required feature's error adds: " The record has: a, b." (the
// record's feature keys, sorted, C-escaped, at most 20 named), or " The record
// has no features.", so that a record of another schema says which it is.
std::string DescribeRecordKeys(std::vector<std::string> keys);

// ExampleParser::Create(config) then ParseSingle / ParseBatch.
Status ParseSingleExample(std::string_view serialized, const ParseConfig& config, ParseResult* out);
Status ParseExampleBatch(const std::vector<std::string_view>& serialized, const ParseConfig& config,
                         ParseResult* out, ThreadPool* pool = nullptr);

}  // namespace tw

#endif  // TOWERFLOW_DATA_EXAMPLE_PARSER_H_
