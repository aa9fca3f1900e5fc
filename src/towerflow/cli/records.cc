// `towerflow records`: inspect TFRecord files.
//   count FILES...             the total number of records (every CRC checked)
//   verify FILES...            checks every CRC of every file; one line per bad file
//   show FILE [--limit N]      one JSON object per record: its tf.train.Example's
//                              features by name, bytes as base64
// Each takes --compression auto|none|gzip|zlib (auto: detected per file from its
// first bytes and name, read through the one open of the file: pipes, FIFOs
// and /dev/stdin are read as streams).
// A file that cannot be read gives one line on stderr, "<file>: <Code>: <what>"
// with the record number and byte offset for corrupt data, and exit status 1;
// bad usage exits with 2.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "example.pb.h"
#include "towerflow/cli/commands.h"
#include "towerflow/cli/flags.h"
#include "towerflow/cli/json.h"
#include "towerflow/data/record_reader.h"

namespace tw::cli {
namespace {

// How to open a file for --compression `flag`: "auto" detects from the bytes
// the reader reads first, on its one open of the file (a pipe or FIFO reads
// as a stream).
StatusOr<RecordReaderOptions> ReaderOptions(const std::string& flag) {
  RecordReaderOptions options;
  options.inflate_ahead = true;
  if (flag == "auto") {
    options.detect_compression = true;
  } else {
    TW_ASSIGN_OR_RETURN(options.compression, ParseCompression(flag == "none" ? "" : flag));
  }
  return options;
}

// "<file>: <Code>: <message>" (the reader's messages already start with the
// file name), plus where reading stopped when the data itself is bad.
std::string ErrorLine(const std::string& path, const Status& s, int64_t records, uint64_t offset) {
  std::string message = s.message();
  const std::string prefix = path + ": ";
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  std::string line = StrCat(path, ": ", CodeName(s.code()), ": ", message);
  if (s.code() == Code::kDataLoss || s.code() == Code::kInvalidArgument) {
    line += StrCat(" (record ", records, ", offset ", offset, ")");
  }
  return line;
}

void PrintError(const std::string& line) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Reads every record of `path`. OK, or *error_line set and the error returned.
Status VerifyOne(const std::string& path, const std::string& compression_flag, RecordFileStats* stats,
                 std::string* error_line) {
  auto options = ReaderOptions(compression_flag);
  if (!options.ok()) {
    *error_line = ErrorLine(path, options.status(), 0, 0);
    return options.status();
  }
  Status s = VerifyFile(path, *options, stats);
  if (!s.ok()) *error_line = ErrorLine(path, s, stats->records, stats->stream_bytes);
  return s;
}

int Count(const std::vector<std::string>& files, const std::string& compression) {
  int64_t total = 0;
  for (const std::string& path : files) {
    RecordFileStats stats;
    std::string line;
    if (!VerifyOne(path, compression, &stats, &line).ok()) {
      PrintError(line);
      return 1;
    }
    total += stats.records;
  }
  std::printf("%lld\n", static_cast<long long>(total));
  return 0;
}

int Verify(const std::vector<std::string>& files, const std::string& compression) {
  int bad = 0;
  int64_t records = 0;
  for (const std::string& path : files) {
    RecordFileStats stats;
    std::string line;
    if (!VerifyOne(path, compression, &stats, &line).ok()) {
      PrintError(line);
      ++bad;
      continue;
    }
    records += stats.records;
    std::printf("%s: OK, %lld records, %llu data bytes\n", path.c_str(), static_cast<long long>(stats.records),
                static_cast<unsigned long long>(stats.data_bytes));
  }
  std::printf("%zu file(s) checked, %d bad, %lld records in good files\n", files.size(), bad,
              static_cast<long long>(records));
  return bad == 0 ? 0 : 1;
}

void AppendFloat(float v, std::string* out) {
  if (std::isnan(v)) {
    *out += "\"NaN\"";
  } else if (std::isinf(v)) {
    *out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest form that reads back
    out->append(buf, end);
  }
}

// {"key": {"int64_list": [..]}, ...} with keys sorted.
std::string ExampleJson(const tensorflow::Example& ex) {
  std::vector<const std::string*> keys;
  for (const auto& [key, feature] : ex.features().feature()) keys.push_back(&key);
  std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  std::string out = "{";
  for (size_t i = 0; i < keys.size(); ++i) {
    const tensorflow::Feature& f = ex.features().feature().at(*keys[i]);
    if (i) out += ", ";
    AppendJsonString(*keys[i], &out);
    out += ": ";
    switch (f.kind_case()) {
      case tensorflow::Feature::kBytesList:
        out += "{\"bytes_list\": [";
        for (int k = 0; k < f.bytes_list().value_size(); ++k) {
          if (k) out += ", ";
          out += '"' + Base64(f.bytes_list().value(k)) + '"';
        }
        break;
      case tensorflow::Feature::kFloatList:
        out += "{\"float_list\": [";
        for (int k = 0; k < f.float_list().value_size(); ++k) {
          if (k) out += ", ";
          AppendFloat(f.float_list().value(k), &out);
        }
        break;
      case tensorflow::Feature::kInt64List:
        out += "{\"int64_list\": [";
        for (int k = 0; k < f.int64_list().value_size(); ++k) {
          if (k) out += ", ";
          out += std::to_string(f.int64_list().value(k));
        }
        break;
      default:
        out += "null";
        continue;
    }
    out += "]}";
  }
  return out + "}";
}

int Show(const std::string& path, const std::string& compression_flag, int64_t limit) {
  auto options = ReaderOptions(compression_flag);
  if (!options.ok()) {
    PrintError(ErrorLine(path, options.status(), 0, 0));
    return 1;
  }
  options->inflate_ahead = false;  // records are printed as they are read
  auto reader = RecordReader::Open(path, *options);
  if (!reader.ok()) {
    PrintError(ErrorLine(path, reader.status(), 0, 0));
    return 1;
  }
  std::string_view record;
  tensorflow::Example ex;
  for (int64_t n = 0; limit < 0 || n < limit; ++n) {
    const uint64_t offset = (*reader)->offset();
    Status s = (*reader)->ReadRecordView(&record);
    if (errors::IsOutOfRange(s)) break;
    if (!s.ok()) {
      PrintError(ErrorLine(path, s, n, offset));
      return 1;
    }
    if (record.size() > INT32_MAX || !ex.ParseFromArray(record.data(), static_cast<int>(record.size()))) {
      PrintError(ErrorLine(path, errors::InvalidArgument("the record (", record.size(),
                                                         " bytes) is not a serialized tf.train.Example"),
                           n, offset));
      return 1;
    }
    std::printf("%s\n", ExampleJson(ex).c_str());
  }
  return 0;
}

}  // namespace

int RunRecords(int argc, char** argv) {
  CLI::App app{"Inspect TFRecord files", "towerflow records"};
  app.require_subcommand(1, 1);
  std::string compression = "auto";
  std::vector<std::string> files;
  std::string file;
  int64_t limit = -1;
  auto add_compression = [&](CLI::App* cmd) {
    cmd->add_option("--compression", compression, "auto (detect per file), none, gzip or zlib")
        ->check(CLI::IsMember({"auto", "none", "gzip", "zlib"}));
  };
  CLI::App* count = app.add_subcommand("count", "print the total number of records (checking every CRC)");
  count->add_option("files", files, "TFRecord files")->required();
  add_compression(count);
  CLI::App* verify = app.add_subcommand("verify", "check every CRC; one line on stderr per bad file");
  verify->add_option("files", files, "TFRecord files")->required();
  add_compression(verify);
  CLI::App* show = app.add_subcommand("show", "print each record's tf.train.Example as one JSON object");
  show->add_option("file", file, "a TFRecord file")->required();
  show->add_option("--limit", limit, "print at most N records")->check(IntegerIn(0, INT64_MAX));
  add_compression(show);
  OneLineErrors(app, "records");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (count->parsed()) return Count(files, compression);
  if (verify->parsed()) return Verify(files, compression);
  return Show(file, compression, limit);
}

}  // namespace tw::cli
