// Safetensors reading (writing: safetensors_write.cc). The header is JSON, parsed with nlohmann-json
// (ordered, so that header order survives), never with exceptions: parse() runs
// with allow_exceptions = false and a failed parse is re-run through a SAX handler
// that only collects the error's message and position. Reading checks the header
// against the file's size before anything is allocated from it.
#include "towerflow/train/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "towerflow/core/file_checks.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/train/atomic_file.h"
#include "towerflow/train/internal/safetensors_checksums.h"
#include "towerflow/train/internal/safetensors_format.h"

namespace tw::train {
namespace {

// Tensor bytes are copied as they lie in memory; safetensors is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");
static_assert(sizeof(bool) == 1, "BOOL elements are one byte");

using Json = nlohmann::ordered_json;
using tw::internal::FileError;
using internal::HexCrc;
using internal::kChecksumPrefix;
using internal::FromSafetensorsName;
using internal::kMetadataKey;
using internal::kPrefixBytes;
using internal::kSnippetChars;
using internal::ParseHexCrc;
using internal::Snippet;

template <typename... Args>
Status Corrupt(const std::string& file, const Args&... args) {
  return errors::DataLoss(file, ": ", args...);
}

// Compact JSON of `value`, stopping once `out` is long enough for Snippet: a
// hostile header may hold a 100 MB array, which dump() would copy whole.
void AppendJson(const Json& value, std::string* out) {
  if (out->size() > kSnippetChars) return;
  if (value.is_structured()) {
    *out += value.is_array() ? '[' : '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out->size() <= kSnippetChars; ++it) {
      if (!first) *out += ',';
      first = false;
      if (value.is_object())
        *out += Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace) + ":";
      AppendJson(*it, out);
    }
    *out += value.is_array() ? ']' : '}';
  } else if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    *out += Json(s.substr(0, kSnippetChars)).dump(-1, ' ', false, Json::error_handler_t::replace);
  } else {
    *out += value.dump();
  }
}
std::string JsonSnippet(const Json& value) {
  std::string out;
  AppendJson(value, &out);
  return Snippet(out);
}

// ---- header validation ------------------------------------------------------

// One tensor as the header declares it; offsets relative to the buffer.
struct Entry {
  std::string name;
  DataType dtype = DataType::kInvalid;
  TensorShape shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// A validated header: entries in buffer order, the metadata, where the buffer is.
struct Layout {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t buffer_start = 0;  // file offset: 8 + N
  uint64_t buffer_size = 0;
};

// The header length N from the first 8 bytes, checked against the cap and the
// `file_size` (the whole file, prefix included).
StatusOr<uint64_t> HeaderLength(std::string_view bytes, uint64_t file_size, const std::string& file) {
  if (file_size < kPrefixBytes) {
    return Corrupt(file, "file has ", file_size, " bytes, fewer than the 8-byte header length");
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), sizeof(n));
  if (n > kSafetensorsMaxHeaderBytes) {
    return Corrupt(file, "header length ", n, " (byte 0) exceeds the limit of ", kSafetensorsMaxHeaderBytes,
                   " bytes");
  }
  if (n > file_size - kPrefixBytes) {
    return Corrupt(file, "header length ", n, " (byte 0) runs past the end of the file: only ",
                   file_size - kPrefixBytes, " bytes follow the length");
  }
  return n;
}

// Collects only the error of a failed parse: its message and position.
class ErrorSax : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    position_ = position;
    message_ = e.what();
    return false;
  }
  size_t position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  size_t position_ = 0;  // characters read, the failing one included
  std::string message_;
};

// DataLoss at the first bracket nested deeper than kMaxHeaderDepth (strings
// skipped). A valid header nests 3 deep; the bound keeps the parser's stacks and
// the recursion of AppendJson small, as serde_json's limit does for the reference.
Status CheckNesting(std::string_view text, const std::string& file) {
  constexpr int kMaxHeaderDepth = 128;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > kMaxHeaderDepth) {
      return Corrupt(file, "header nests deeper than ", kMaxHeaderDepth, " levels at file byte ",
                     kPrefixBytes + i);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::OK();
}

// Parses the header text (at file byte 8) into a JSON object, rejecting repeated
// top-level names, which the DOM would silently merge.
StatusOr<Json> ParseHeaderJson(std::string_view text, const std::string& file) {
  if (text.empty() || text.front() != '{') {
    return Corrupt(file, "header (byte 8) does not start with '{'");
  }
  TW_RETURN_IF_ERROR(CheckNesting(text, file));
  std::set<std::string> names;
  std::string repeated;
  auto track_names = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::key && depth == 1 && repeated.empty() &&
        !names.insert(parsed.get_ref<const std::string&>()).second) {
      repeated = parsed.get_ref<const std::string&>();
    }
    return true;
  };
  Json header = Json::parse(text.begin(), text.end(), track_names, /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    ErrorSax sax;
    (void)Json::sax_parse(text.begin(), text.end(), &sax);
    const uint64_t at = kPrefixBytes + (sax.position() > 0 ? sax.position() - 1 : 0);
    return Corrupt(file, "header is not valid JSON (file byte ", at, "): ", Snippet(sax.message()));
  }
  if (!repeated.empty()) return Corrupt(file, "header names '", repeated, "' twice");
  return header;
}

StatusOr<std::map<std::string, std::string>> ParseMetadata(const Json& value, const std::string& file) {
  std::map<std::string, std::string> metadata;
  if (value.is_null()) return metadata;  // the reference reads null as "no metadata"
  if (!value.is_object()) return Corrupt(file, "\"__metadata__\" is not an object: ", JsonSnippet(value));
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string()) {
      return Corrupt(file, "\"__metadata__\" value of '", key, "' is not a string: ", JsonSnippet(v));
    }
    metadata[key] = v.get<std::string>();
  }
  return metadata;
}

// `shape` as dims, with the element count checked for int64 overflow.
StatusOr<TensorShape> ParseShape(const Json* shape, const std::string& where) {
  if (shape == nullptr || !shape->is_array()) {
    return Corrupt(where, "\"shape\" is missing or not a list: ", shape ? JsonSnippet(*shape) : "absent");
  }
  std::vector<int64_t> dims;
  int64_t elements = 1;
  bool overflow = false;
  for (const Json& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return Corrupt(where, "\"shape\" is not a list of non-negative integers: ", JsonSnippet(*shape));
    }
    dims.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    overflow = overflow || __builtin_mul_overflow(elements, dims.back(), &elements);
  }
  // The running product must fit even when a later dimension is 0, as in the
  // reference (and TensorShape): such a shape is rejected, not counted as empty.
  if (overflow)
    return Corrupt(where, "shape ", JsonSnippet(*shape), " has more elements than fit in 64 bits");
  return TensorShape(std::move(dims));
}

Status ParseOffsets(const Json* offsets, const std::string& where, uint64_t* begin, uint64_t* end) {
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return Corrupt(where, "\"data_offsets\" is not a list of two non-negative integers: ",
                   offsets ? JsonSnippet(*offsets) : "absent");
  }
  *begin = (*offsets)[0].get<uint64_t>();
  *end = (*offsets)[1].get<uint64_t>();
  if (*begin > *end) return Corrupt(where, "data_offsets [", *begin, ", ", *end, "] begin after end");
  return Status::OK();
}

const Json* Field(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

StatusOr<Entry> ParseEntry(const std::string& name, const Json& value, const Layout& layout,
                           const std::string& file) {
  const std::string where = StrCat(file, ": tensor '", name, "'");
  if (!value.is_object()) return Corrupt(where, "header entry is not an object: ", JsonSnippet(value));
  Entry entry;
  entry.name = name;
  const Json* dtype = Field(value, "dtype");
  if (dtype == nullptr || !dtype->is_string()) {
    return Corrupt(where, "\"dtype\" is missing or not a string: ", dtype ? JsonSnippet(*dtype) : "absent");
  }
  std::optional<DataType> dt = FromSafetensorsName(dtype->get_ref<const std::string&>());
  if (!dt)
    return Corrupt(where, "unknown dtype ", JsonSnippet(*dtype),
                   " (towerflow reads F32 F64 I32 I64 U8 BOOL)");
  entry.dtype = *dt;
  TW_ASSIGN_OR_RETURN(entry.shape, ParseShape(Field(value, "shape"), where));
  TW_RETURN_IF_ERROR(ParseOffsets(Field(value, "data_offsets"), where, &entry.begin, &entry.end));
  if (entry.end > layout.buffer_size) {
    return Corrupt(where, "data_offsets [", entry.begin, ", ", entry.end, "] end past the ",
                   layout.buffer_size, "-byte buffer (the file ends at byte ",
                   layout.buffer_start + layout.buffer_size, ")");
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(entry.shape.num_elements()), DataTypeSize(entry.dtype),
                             &bytes) ||
      bytes != entry.end - entry.begin) {
    return Corrupt(where, "data_offsets [", entry.begin, ", ", entry.end, "] (file byte ",
                   layout.buffer_start + entry.begin, ") hold ", entry.end - entry.begin, " bytes, but ",
                   dtype->get_ref<const std::string&>(), " ", entry.shape.ToString(), " needs ",
                   entry.shape.num_elements(), " * ", DataTypeSize(entry.dtype));
  }
  return entry;
}

// Sorts the entries into buffer order and checks that they tile the buffer.
Status CheckCoverage(Layout& layout, const std::string& file) {
  // By (begin, end): empty tensors at an offset come before the one that starts
  // there; ties keep header order.
  std::stable_sort(layout.entries.begin(), layout.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : layout.entries) {
    if (e.begin > covered) {
      return Corrupt(file, "tensors leave a hole of ", e.begin - covered, " bytes at file byte ",
                     layout.buffer_start + covered, " before tensor '", e.name, "'");
    }
    if (e.begin < covered) {
      return Corrupt(file, "tensor '", e.name, "' (data_offsets [", e.begin, ", ", e.end,
                     "]) overlaps tensor '", previous->name, "' (data_offsets [", previous->begin, ", ",
                     previous->end, "]) at file byte ", layout.buffer_start + e.begin);
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != layout.buffer_size) {
    return Corrupt(file, "the buffer has ", layout.buffer_size, " bytes but the tensors cover ", covered,
                   ": ", layout.buffer_size - covered, " bytes from file byte ",
                   layout.buffer_start + covered, " belong to no tensor");
  }
  return Status::OK();
}

// Validates `header_text`, the header of a file of `file_size` bytes (checked by
// HeaderLength), against that file.
StatusOr<Layout> ParseLayout(std::string_view header_text, uint64_t file_size, const std::string& file) {
  Layout layout;
  layout.buffer_start = kPrefixBytes + header_text.size();
  layout.buffer_size = file_size - layout.buffer_start;
  TW_ASSIGN_OR_RETURN(Json header, ParseHeaderJson(header_text, file));
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      TW_ASSIGN_OR_RETURN(layout.metadata, ParseMetadata(value, file));
      continue;
    }
    TW_ASSIGN_OR_RETURN(Entry entry, ParseEntry(key, value, layout, file));
    layout.entries.push_back(std::move(entry));
  }
  TW_RETURN_IF_ERROR(CheckCoverage(layout, file));
  return layout;
}

// BOOL bytes must be 0 or 1: anything else is not a valid C++ bool.
Status CheckBools(const Entry& entry, const Tensor& t, const Layout& layout, const std::string& file) {
  if (entry.dtype != kBool) return Status::OK();
  const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
  for (uint64_t i = 0; i < entry.end - entry.begin; ++i) {
    if (bytes[i] > 1) {
      return Corrupt(file, "tensor '", entry.name, "': BOOL byte ", static_cast<int>(bytes[i]),
                     " at file byte ", layout.buffer_start + entry.begin + i, " is neither 0 nor 1");
    }
  }
  return Status::OK();
}

// The checksums the metadata declares, by tensor name; DataLoss for one that
// is malformed or names no tensor.
StatusOr<std::map<std::string, uint32_t>> DeclaredChecksums(const Layout& layout, const std::string& file) {
  std::map<std::string, uint32_t> crcs;
  for (const auto& [key, value] : layout.metadata) {
    if (!std::string_view(key).starts_with(kChecksumPrefix)) continue;
    const std::string name = key.substr(kChecksumPrefix.size());
    std::optional<uint32_t> crc = ParseHexCrc(value);
    if (!crc) return Corrupt(file, "metadata '", Snippet(key), "' is not 8 lowercase hex digits: '", Snippet(value), "'");
    const bool known = std::any_of(layout.entries.begin(), layout.entries.end(),
                                   [&](const Entry& e) { return e.name == name; });
    if (!known) return Corrupt(file, "metadata '", Snippet(key), "' is the checksum of a tensor the file does not hold");
    crcs[name] = *crc;
  }
  return crcs;
}

// The file's tensors: each allocated from the host allocator (its size checked
// against the file already), filled by fill(entry, data) unless empty, checked
// (BOOL bytes, and the checksum when the metadata has one).
template <typename Fill>
StatusOr<SafetensorsFile> Assemble(Layout layout, const std::string& file, Fill fill) {
  TW_ASSIGN_OR_RETURN(auto crcs, DeclaredChecksums(layout, file));
  SafetensorsFile out;
  for (const Entry& e : layout.entries) {
    auto t = Tensor::Allocate(CpuAllocator(), e.dtype, e.shape);
    if (!t.ok()) return t.status().WithContext(StrCat(file, ": tensor '", e.name, "'"));
    if (e.end > e.begin) TW_RETURN_IF_ERROR(fill(e, t->raw_data()));
    TW_RETURN_IF_ERROR(CheckBools(e, *t, layout, file));
    if (auto it = crcs.find(e.name); it != crcs.end()) {
      const uint64_t n = e.end - e.begin;
      const uint32_t actual = internal::TensorCrc(*t);
      if (actual != it->second) {
        return Corrupt(file, "tensor '", e.name, "': the CRC32C of its ", n, " bytes (file bytes ",
                       layout.buffer_start + e.begin, "..", layout.buffer_start + e.end, ") is ", HexCrc(actual),
                       " but the metadata says ", HexCrc(it->second), ": the data is corrupt");
      }
    }
    out.tensors.emplace_back(e.name, std::move(*t));
  }
  out.metadata = std::move(layout.metadata);
  return out;
}

// ---- files -----------------------------------------------------------------

// Reads exactly `n` bytes at `offset`; a file that ends early (it shrank after
// its size was read) is DataLoss.
Status ReadAt(int fd, void* dst, uint64_t n, uint64_t offset, const std::string& path) {
  auto* out = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return FileError(path, StrCat("read at byte ", offset + done), errno);
    }
    if (r == 0) return Corrupt(path, "file ended at byte ", offset + done, " while reading it (it shrank)");
    done += static_cast<uint64_t>(r);
  }
  return Status::OK();
}

// An open file and its size, as read once before anything else.
struct OpenedFile {
  std::unique_ptr<FileDescriptor> fd;
  uint64_t size = 0;
};

StatusOr<OpenedFile> OpenForReading(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  TW_ASSIGN_OR_RETURN(int raw, OpenFile(path, O_RDONLY | O_NONBLOCK, "cannot open for reading"));
  OpenedFile file{std::make_unique<FileDescriptor>(raw), 0};
  struct stat st {};
  if (::fstat(raw, &st) != 0) return FileError(path, "fstat", errno);
  if (!S_ISREG(st.st_mode)) {
    return errors::InvalidArgument(path, " is ", DescribeFileMode(st.st_mode),
                                   ": a safetensors file must be a regular file (its size is read first)");
  }
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

// Reads the prefix and header of an open file and validates them.
StatusOr<Layout> ReadLayout(const OpenedFile& file, const std::string& path) {
  std::array<char, kPrefixBytes> prefix{};
  if (file.size >= kPrefixBytes)
    TW_RETURN_IF_ERROR(ReadAt(file.fd->get(), prefix.data(), kPrefixBytes, 0, path));
  TW_ASSIGN_OR_RETURN(uint64_t n,
                      HeaderLength(std::string_view(prefix.data(), prefix.size()), file.size, path));
  std::string header(n, '\0');  // n <= file.size - 8: justified by the file
  TW_RETURN_IF_ERROR(ReadAt(file.fd->get(), header.data(), n, kPrefixBytes, path));
  return ParseLayout(header, file.size, path);
}

}  // namespace

const Tensor* SafetensorsFile::Find(std::string_view name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return &t;
  }
  return nullptr;
}

StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path) {
  TW_ASSIGN_OR_RETURN(OpenedFile file, OpenForReading(path));
  TW_ASSIGN_OR_RETURN(Layout layout, ReadLayout(file, path));
  const uint64_t start = layout.buffer_start;
  return Assemble(std::move(layout), path, [&](const Entry& e, void* data) {
    return ReadAt(file.fd->get(), data, e.end - e.begin, start + e.begin, path);
  });
}

StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path) {
  TW_ASSIGN_OR_RETURN(OpenedFile file, OpenForReading(path));
  TW_ASSIGN_OR_RETURN(Layout layout, ReadLayout(file, path));
  return std::move(layout.metadata);
}

StatusOr<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& name_for_errors) {
  TW_ASSIGN_OR_RETURN(uint64_t n, HeaderLength(bytes, bytes.size(), name_for_errors));
  TW_ASSIGN_OR_RETURN(Layout layout,
                      ParseLayout(bytes.substr(kPrefixBytes, n), bytes.size(), name_for_errors));
  const char* buffer = bytes.data() + layout.buffer_start;
  return Assemble(std::move(layout), name_for_errors, [&](const Entry& e, void* data) {
    std::memcpy(data, buffer + e.begin, e.end - e.begin);
    return Status::OK();
  });
}

}  // namespace tw::train
