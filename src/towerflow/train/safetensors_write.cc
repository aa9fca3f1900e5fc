// Safetensors writing (safetensors.h; reading: safetensors.cc): the header as
// the reference writes it, checked first so that nothing is written that a
// reader would refuse, then the file written whole and renamed.
#include "towerflow/train/safetensors.h"

#include <nlohmann/json.hpp>
#include <set>

#include "towerflow/train/atomic_file.h"
#include "towerflow/train/internal/safetensors_checksums.h"
#include "towerflow/train/internal/safetensors_format.h"

namespace tw::train {
namespace {

using Json = nlohmann::ordered_json;
using internal::kChecksumPrefix;
using internal::kMetadataKey;
using internal::kPrefixBytes;
using internal::SafetensorsName;
using internal::Snippet;

// Whether nlohmann's parser, and so our reader, accepts `s` in a JSON string:
// its serializer's UTF-8 decoder is the same, and with invalid bytes the
// "ignore" output (bytes dropped) differs from the "replace" one (U+FFFD).
bool IsValidUtf8(std::string_view s) {
  const Json j = std::string(s);
  return j.dump(-1, ' ', false, Json::error_handler_t::ignore) ==
         j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status CheckWritable(const std::vector<std::pair<std::string, Tensor>>& tensors,
                     const std::map<std::string, std::string>& metadata, const std::string& path,
                     const SafetensorsWriteOptions& options) {
  std::set<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    const std::string where = StrCat(path, ": tensor '", Snippet(name), "'");
    if (!IsValidUtf8(name)) return errors::InvalidArgument(where, ": the name is not valid UTF-8");
    if (name == kMetadataKey) return errors::InvalidArgument(where, ": the name is reserved for metadata");
    if (!seen.insert(name).second) return errors::InvalidArgument(where, ": the name appears twice");
    if (!t.IsInitialized()) return errors::InvalidArgument(where, ": the tensor is uninitialized");
    if (!SafetensorsName(t.dtype())) {
      return errors::InvalidArgument(where, ": safetensors has no dtype for ", DataTypeName(t.dtype()),
                                     " tensors");
    }
  }
  for (const auto& [key, value] : metadata) {
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return errors::InvalidArgument(path, ": metadata '", Snippet(key), "' is not valid UTF-8");
    }
    if (options.checksums && std::string_view(key).starts_with(kChecksumPrefix)) {
      return errors::InvalidArgument(path, ": metadata '", Snippet(key), "' is reserved for the checksums");
    }
  }
  return Status::OK();
}

// The header JSON as the reference writes it (compact; "__metadata__" first;
// dtype, shape, data_offsets), padded with spaces to a multiple of 8.
std::string BuildHeader(const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [key, value] : metadata) m[key] = value;
    header[kMetadataKey] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    Json shape = Json::array();
    for (int64_t d : t.shape().dims()) shape.push_back(static_cast<uint64_t>(d));
    const uint64_t end = offset + t.TotalBytes();
    header[name] = Json{{"dtype", *SafetensorsName(t.dtype())},
                        {"shape", std::move(shape)},
                        {"data_offsets", Json::array({offset, end})}};
    offset = end;
  }
  // Every string was checked to be UTF-8, so the handler never fires; it is
  // there because the default one throws.
  std::string text = header.dump(-1, ' ', false, Json::error_handler_t::replace);
  text.append((kPrefixBytes - text.size() % kPrefixBytes) % kPrefixBytes, ' ');
  return text;
}

}  // namespace

Status WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata, const SafetensorsWriteOptions& options) {
  TW_RETURN_IF_ERROR(CheckWritable(tensors, metadata, path, options));
  const std::string header =
      BuildHeader(tensors, options.checksums ? internal::WithChecksums(tensors, metadata) : metadata);
  const uint64_t n = header.size();
  if (n > kSafetensorsMaxHeaderBytes) {
    // Nothing is written: a file every reader refuses is no checkpoint.
    return errors::InvalidArgument("safetensors ", path, ": the header would be ", n, " bytes, over the ",
                                   kSafetensorsMaxHeaderBytes, " that readers accept (metadata too large?)");
  }
  char prefix[kPrefixBytes];
  std::memcpy(prefix, &n, sizeof(n));
  std::vector<std::string_view> pieces = {std::string_view(prefix, kPrefixBytes), header};
  for (const auto& [name, t] : tensors) {
    if (t.TotalBytes() > 0) pieces.emplace_back(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
  return WriteFileAtomically(path, pieces);
}

}  // namespace tw::train
