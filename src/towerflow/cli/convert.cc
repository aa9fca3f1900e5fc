// `towerflow convert`: writes datasets as sharded TFRecord files of
// tf.train.Example (serialized with libprotobuf).
//   fashion-mnist --out DIR [--shards N] [--source DIR]
//       reads the IDX files of Debian's dataset-fashion-mnist package
//       (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-...; plain
//       files without .gz work too) and writes train-00000-of-0000N.tfrecord and
//       test-00000-of-0000N.tfrecord: `image` bytes (784 uint8, row-major 28x28),
//       `label` int64 (0-9). Shards are contiguous runs of the original order.
//   seed-synthetic --out DIR --n-features F --examples N [--shards N] [--seed S]
//       the seed program's schema (SEED.md): `x` bytes of int32 [2, F] and
//       `labels` bytes of int32 [1, 2] one-hot, little-endian. Row entries are
//       uniform in 0..15; labels is [0, 1] when w.row0 > w.row1 for a fixed
//       random w (drawn from the seed), else [1, 0]: a linear rule a small MLP
//       learns, balanced because the two rows are drawn alike.
// Prints a one-line summary. Bad input files give one line on stderr naming the
// file and byte offset (in the uncompressed IDX bytes), exit status 1; bad usage
// exits with 2.
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "example.pb.h"
#include "towerflow/cli/commands.h"
#include "towerflow/core/file_checks.h"
#include "towerflow/cli/flags.h"
#include "towerflow/data/record_writer.h"

namespace tw::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxInputBytes = size_t{1} << 30;
constexpr uint32_t kIdxImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kIdxLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr int64_t kImageSide = 28;

// The whole uncompressed content of a gzip file (zlib reads plain files as they are).
StatusOr<std::string> ReadGzipFile(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return internal::FileError(path, "cannot open for reading", errno);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n <= 0) break;  // the end, or an error gzerror reports
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxInputBytes) {
      gzclose(f);
      return errors::InvalidArgument(path, ": more than ", kMaxInputBytes, " bytes uncompressed; not an IDX file of this dataset");
    }
  }
  int err = Z_OK;
  const char* message = gzerror(f, &err);
  const std::string what = err != Z_OK && message ? message : "";
  // gzclose reports Z_BUF_ERROR when the last read ended inside the stream.
  const int close_err = gzclose(f);
  if (err != Z_OK || close_err != Z_OK) {
    return errors::DataLoss(path, ": corrupt or truncated gzip data at uncompressed offset ", out.size(), ": ",
                            what.empty() ? std::string(zError(close_err)) : what);
  }
  return out;
}

uint32_t BigEndian32(const std::string& b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) << 24 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 8 | static_cast<unsigned char>(b[at + 3]);
}

// An IDX file of unsigned bytes: its dimensions and where its data starts.
struct Idx {
  std::vector<int64_t> dims;
  size_t data_offset = 0;
};

StatusOr<Idx> ParseIdx(const std::string& path, const std::string& bytes, uint32_t magic, int rank) {
  const size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < 4) {
    return errors::DataLoss(path, ": truncated IDX header at offset 0: ", bytes.size(), " bytes");
  }
  if (const uint32_t got = BigEndian32(bytes, 0); got != magic) {
    return errors::InvalidArgument(path, ": magic number ", got, " at offset 0, expected ", magic,
                                   " (an IDX file of unsigned bytes with ", rank, " dimension(s))");
  }
  if (bytes.size() < header) {
    return errors::DataLoss(path, ": truncated IDX header at offset 4: ", bytes.size(), " bytes, need ", header);
  }
  Idx idx;
  idx.data_offset = header;
  uint64_t total = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = BigEndian32(bytes, 4 + 4 * static_cast<size_t>(i));
    idx.dims.push_back(d);
    total *= d;  // at most 2^32 per dim, and checked below before it can wrap
    if (total > kMaxInputBytes) {
      return errors::InvalidArgument(path, ": dimensions at offset 4 declare more than ", kMaxInputBytes, " bytes");
    }
  }
  const uint64_t have = bytes.size() - header;
  if (have < total) {
    return errors::DataLoss(path, ": truncated at offset ", bytes.size(), ": the header declares ", total,
                            " data bytes from offset ", header, ", the file holds ", have);
  }
  if (have > total) {
    return errors::InvalidArgument(path, ": ", have - total, " unexpected bytes at offset ", header + total,
                                   " after the data the header declares");
  }
  return idx;
}

struct Summary {
  int files = 0;
  int64_t records = 0;
  uint64_t bytes = 0;
};

// Shards of an earlier conversion into another number of files stay where
// they are (they are the user's), but a glob such as <prefix>-* would match
// them beside the new ones: said on stderr.
void WarnOfOtherShards(const std::string& dir, const std::string& prefix, int shards) {
  char mine[32];
  std::snprintf(mine, sizeof(mine), "-of-%05d.tfrecord", shards);
  std::error_code ec;
  std::vector<std::string> others;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t of = name.rfind("-of-");
    if (name.rfind(prefix + "-", 0) == 0 && of != std::string::npos && name.size() > 9 &&
        name.compare(name.size() - 9, 9, ".tfrecord") == 0 && name.compare(of, std::string::npos, mine) != 0) {
      others.push_back(name);
    }
  }
  if (others.empty()) return;
  std::sort(others.begin(), others.end());
  std::fprintf(stderr,
               "towerflow convert: %s also holds %zu %s file(s) of another conversion (%s%s); a glob such as "
               "%s-* matches them beside the %d new ones: remove them\n",
               dir.c_str(), others.size(), prefix.c_str(), others[0].c_str(), others.size() > 1 ? ", ..." : "",
               prefix.c_str(), shards);
}

// Writes examples 0..n-1 (built by `make`) into `shards` files
// <dir>/<prefix>-SSSSS-of-NNNNN.tfrecord, contiguous runs in order.
Status WriteShards(const std::string& dir, const std::string& prefix, int shards, int64_t n,
                   const std::function<void(int64_t, tensorflow::Example*)>& make, Summary* summary) {
  std::string record;
  for (int s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s-%05d-of-%05d.tfrecord", prefix.c_str(), s, shards);
    const std::string path = (fs::path(dir) / name).string();
    TW_ASSIGN_OR_RETURN(auto writer, RecordWriter::Open(path));
    const int64_t begin = n * s / shards, end = n * (s + 1) / shards;
    for (int64_t i = begin; i < end; ++i) {
      tensorflow::Example ex;
      make(i, &ex);
      // Deterministic: map entries sorted by key, so a seed always gives the same bytes.
      record.clear();
      {
        google::protobuf::io::StringOutputStream stream(&record);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        if (!ex.SerializeToCodedStream(&coded)) return errors::Internal("cannot serialize example ", i);
      }
      TW_RETURN_IF_ERROR(writer->WriteRecord(record));
    }
    TW_RETURN_IF_ERROR(writer->Close());
    summary->files += 1;
    summary->records += end - begin;
    summary->bytes += writer->offset();
  }
  WarnOfOtherShards(dir, prefix, shards);
  return Status::OK();
}

tensorflow::Feature* AddFeature(tensorflow::Example* ex, const std::string& key) {
  return &(*ex->mutable_features()->mutable_feature())[key];
}

// <source>/<name>.gz, or <source>/<name> when there is no .gz; *path is the one read.
StatusOr<std::string> ReadIdxFile(const std::string& source, const std::string& name, std::string* path) {
  const fs::path gz = fs::path(source) / (name + ".gz");
  std::error_code ec;
  *path = (fs::exists(gz, ec) ? gz : fs::path(source) / name).string();
  return ReadGzipFile(*path);
}

Status ConvertSplit(const std::string& source, const std::string& split, const std::string& out, int shards,
                    Summary* summary) {
  const std::string images_name = split + "-images-idx3-ubyte", labels_name = split + "-labels-idx1-ubyte";
  std::string images_path, labels_path;
  TW_ASSIGN_OR_RETURN(std::string images, ReadIdxFile(source, images_name, &images_path));
  TW_ASSIGN_OR_RETURN(std::string labels, ReadIdxFile(source, labels_name, &labels_path));
  TW_ASSIGN_OR_RETURN(Idx image_idx, ParseIdx(images_path, images, kIdxImagesMagic, 3));
  TW_ASSIGN_OR_RETURN(Idx label_idx, ParseIdx(labels_path, labels, kIdxLabelsMagic, 1));
  if (image_idx.dims[1] != kImageSide || image_idx.dims[2] != kImageSide) {
    return errors::InvalidArgument(images_path, ": images are ", image_idx.dims[1], "x", image_idx.dims[2],
                                   " (dimensions at offset 8), expected 28x28");
  }
  const int64_t n = image_idx.dims[0];
  if (label_idx.dims[0] != n) {
    return errors::InvalidArgument(images_path, " holds ", n, " images but ", labels_path, " holds ",
                                   label_idx.dims[0], " labels (counts at offset 4)");
  }
  for (int64_t i = 0; i < n; ++i) {
    const auto label = static_cast<unsigned char>(labels[label_idx.data_offset + static_cast<size_t>(i)]);
    if (label > 9) {
      return errors::InvalidArgument(labels_path, ": label ", static_cast<int>(label), " at offset ",
                                     label_idx.data_offset + static_cast<size_t>(i),
                                     " is not a Fashion-MNIST class (0-9)");
    }
  }
  if (shards > n) {
    return errors::InvalidArgument("--shards ", shards, " is more than the ", n, " examples of ", split);
  }
  constexpr int64_t kPixels = kImageSide * kImageSide;
  return WriteShards(out, split == "t10k" ? "test" : split, shards, n,
                     [&](int64_t i, tensorflow::Example* ex) {
                       AddFeature(ex, "image")->mutable_bytes_list()->add_value(
                           images.substr(image_idx.data_offset + static_cast<size_t>(i * kPixels), kPixels));
                       AddFeature(ex, "label")->mutable_int64_list()->add_value(
                           static_cast<unsigned char>(labels[label_idx.data_offset + static_cast<size_t>(i)]));
                     },
                     summary);
}

Status MakeOutDir(const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return errors::FailedPrecondition(out, ": cannot create the output directory: ", ec.message());
  return Status::OK();
}

// Bad usage, before anything is written: --out names something that is not a
// directory, or --source is not a directory.
int CheckDirectories(const std::string& out, const std::string* source) {
  std::error_code ec;
  if (fs::exists(out, ec) && !fs::is_directory(out, ec)) {
    std::fprintf(stderr, "towerflow convert: --out %s is %s, not a directory\n", out.c_str(),
                 DescribeFileKind(out).c_str());
    return 2;
  }
  if (source != nullptr && !fs::is_directory(*source, ec)) {
    std::fprintf(stderr, "towerflow convert: --source %s is %s, not a directory of Fashion-MNIST's IDX files\n",
                 source->c_str(), fs::exists(*source, ec) ? DescribeFileKind(*source).c_str() : "missing");
    return 2;
  }
  if (source != nullptr) {
    for (const char* split : {"train", "t10k"}) {
      for (const char* kind : {"-images-idx3-ubyte", "-labels-idx1-ubyte"}) {
        const fs::path plain = fs::path(*source) / (std::string(split) + kind);
        if (!fs::exists(plain, ec) && !fs::exists(plain.string() + ".gz", ec)) {
          std::fprintf(stderr, "towerflow convert: --source %s has no %s(.gz)\n", source->c_str(),
                       plain.filename().c_str());
          return 2;
        }
      }
    }
  }
  return 0;
}

int FashionMnist(const std::string& source, const std::string& out, int shards) {
  if (int rc = CheckDirectories(out, &source); rc != 0) return rc;
  if (Status s = MakeOutDir(out); !s.ok()) return Fail(s);
  Summary summary;
  for (const char* split : {"train", "t10k"}) {
    if (Status s = ConvertSplit(source, split, out, shards, &summary); !s.ok()) return Fail(s);
  }
  std::printf("fashion-mnist: wrote %d files, %lld records, %llu bytes to %s\n", summary.files,
              static_cast<long long>(summary.records), static_cast<unsigned long long>(summary.bytes), out.c_str());
  return 0;
}

// SplitMix64: a fixed generator, so a seed gives the same files everywhere.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

void PutLittleEndian32(int32_t v, std::string* out) {
  const auto u = static_cast<uint32_t>(v);
  for (int b = 0; b < 4; ++b) out->push_back(static_cast<char>((u >> (8 * b)) & 0xff));
}

int SeedSynthetic(const std::string& out, int64_t n_features, int64_t examples, int shards, uint64_t seed) {
  if (shards > examples) {
    std::fprintf(stderr, "towerflow convert: --shards %d is more than --examples %lld\n", shards,
                 static_cast<long long>(examples));
    return 2;
  }
  if (int rc = CheckDirectories(out, nullptr); rc != 0) return rc;
  if (Status s = MakeOutDir(out); !s.ok()) return Fail(s);
  SplitMix64 rng{seed};
  std::vector<double> w(static_cast<size_t>(n_features));
  for (double& v : w) v = static_cast<double>(rng.Next() >> 11) * 0x1.0p-52 - 1.0;  // uniform in [-1, 1)
  int64_t positive = 0;
  std::vector<int32_t> rows(static_cast<size_t>(2 * n_features));
  Summary summary;
  // Examples are drawn in order, so the files do not depend on the shard count.
  Status s = WriteShards(out, "train", shards, examples,
                         [&](int64_t, tensorflow::Example* ex) {
                           double score[2] = {0, 0};
                           for (size_t k = 0; k < rows.size(); ++k) {
                             rows[k] = static_cast<int32_t>(rng.Next() >> 60);  // 0..15
                             score[k / static_cast<size_t>(n_features)] +=
                                 w[k % static_cast<size_t>(n_features)] * rows[k];
                           }
                           const bool row0_wins = score[0] > score[1];
                           positive += row0_wins;
                           std::string x, labels;
                           for (int32_t v : rows) PutLittleEndian32(v, &x);
                           PutLittleEndian32(row0_wins ? 0 : 1, &labels);
                           PutLittleEndian32(row0_wins ? 1 : 0, &labels);
                           AddFeature(ex, "x")->mutable_bytes_list()->add_value(x);
                           AddFeature(ex, "labels")->mutable_bytes_list()->add_value(labels);
                         },
                         &summary);
  if (!s.ok()) return Fail(s);
  std::printf("seed-synthetic: wrote %d files, %lld records (%lld labelled [0,1]), %llu bytes to %s\n",
              summary.files, static_cast<long long>(summary.records), static_cast<long long>(positive),
              static_cast<unsigned long long>(summary.bytes), out.c_str());
  return 0;
}

}  // namespace

int RunConvert(int argc, char** argv) {
  CLI::App app{"Write datasets as sharded TFRecord files of tf.train.Example", "towerflow convert"};
  app.require_subcommand(1, 1);
  std::string out, source = "/usr/share/datasets/fashion-mnist";
  int shards = 1;
  int64_t n_features = 0, examples = 0;
  uint64_t seed = 1;
  CLI::App* fashion = app.add_subcommand("fashion-mnist", "Fashion-MNIST IDX files -> train-*/test-* shards");
  fashion->add_option("--out", out, "output directory")->required()->check(NonEmptyText());
  fashion->add_option("--shards", shards, "files per split")->check(CLI::Range(1, 99999));
  fashion->add_option("--source", source, "directory of the *-idx?-ubyte.gz files")->check(NonEmptyText());
  CLI::App* synthetic = app.add_subcommand("seed-synthetic", "the seed program's x/labels schema, learnable");
  synthetic->add_option("--out", out, "output directory")->required()->check(NonEmptyText());
  synthetic->add_option("--n-features", n_features, "F: x is int32 [2, F]")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  synthetic->add_option("--examples", examples, "number of records")->required()->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  synthetic->add_option("--shards", shards, "number of files")->check(CLI::Range(1, 99999));
  synthetic->add_option("--seed", seed, "seed of the weights and the rows")->check(IntegerIn(0, INT64_MAX));
  OneLineErrors(app, "convert");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (fashion->parsed()) return FashionMnist(source, out, shards);
  return SeedSynthetic(out, n_features, examples, shards, seed);
}

}  // namespace tw::cli
