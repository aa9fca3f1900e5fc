// Safetensors files: the checkpoint format (Hugging Face's safetensors, read and
// written exactly as its reference implementation does).
//
// Layout. Do not change: on-disk format (docs/formats.md; huggingface/safetensors):
//   uint64  N                 little-endian header length
//   byte    header[N]         UTF-8 JSON object, padded with spaces to a multiple of 8:
//                             {"__metadata__": {str: str},          (optional)
//                              "<name>": {"dtype": "F32", "shape": [2, 3],
//                                         "data_offsets": [begin, end]}, ...}
//   byte    buffer[...]       the tensors' little-endian row-major bytes; offsets are
//                             relative to the buffer's start, and the tensors cover
//                             it contiguously, with no holes or overlaps.
// dtypes: float32 "F32", float64 "F64", int32 "I32", int64 "I64", uint8 "U8",
// bool "BOOL" (one byte, 0 or 1). String tensors have no safetensors dtype.
//
// Checksums (towerflow's, in the metadata, which other readers pass over):
// "crc32c:<name>" = the CRC32C (Castagnoli, unmasked) of tensor <name>'s bytes
// in the buffer, as 8 lowercase hex digits. Written when asked for
// (SafetensorsWriteOptions::checksums; every checkpoint the Saver writes has
// them); checked on every read of a file that has them.
//
// Reading treats the file as hostile: every number in the header is checked
// against the file before it is used, nothing is allocated beyond what the file's
// size justifies, and every failure is DataLoss naming the file, what is wrong and,
// where it makes sense, the byte offset. The functions are thread-safe (they share
// no state); concurrent writers of one path must be in different processes.
#ifndef TOWERFLOW_TRAIN_SAFETENSORS_H_
#define TOWERFLOW_TRAIN_SAFETENSORS_H_

#pragma GCC visibility push(default)  // public: exported by libtowerflow.so

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "towerflow/core/status.h"
#include "towerflow/core/tensor.h"

namespace tw::train {

// The largest header a reader accepts, as the reference implementation's limit.
inline constexpr uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// The contents of a safetensors file.
struct SafetensorsFile {
  // In file order: by position in the buffer (the order they were written).
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const Tensor* Find(std::string_view name) const;
};

struct SafetensorsWriteOptions {
  // Adds "crc32c:<name>" to the metadata for every tensor (above).
  bool checksums = false;
};

// Writes `tensors`, laid out in the given order, and `metadata` (no
// "__metadata__" entry when empty) to `path`, crash-safely: the bytes go to
// "<path>.tmp-<pid>", which is flushed, fsynced and renamed over `path`, and then
// the directory is fsynced; a crash leaves the old file or the new one, never a
// mix. InvalidArgument naming the tensor for a string or uninitialized tensor, a
// duplicate name, the reserved name "__metadata__", a name or metadata string
// that is not valid UTF-8, or with checksums a metadata key "crc32c:..."; an I/O failure is the errno's code (NotFound for a
// missing directory, ResourceExhausted for a full disk, ...) with a message naming
// the file, the call and the errno text. The temporary file is removed on failure.
Status WriteSafetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                        const std::map<std::string, std::string>& metadata = {},
                        const SafetensorsWriteOptions& options = {});

// Reads and validates the file at `path`. Tensor data is read straight into the
// tensors (the file is never held twice in memory). DataLoss naming the file for
// any malformed content (see ParseSafetensors); I/O failures as WriteSafetensors'.
StatusOr<SafetensorsFile> ReadSafetensors(const std::string& path);

// Only the metadata of the file at `path`: reads the header, validates it as
// ReadSafetensors does (against the file's size), and skips the tensor data.
StatusOr<std::map<std::string, std::string>> ReadSafetensorsMetadata(const std::string& path);

// Parses a whole file held in memory; errors name `name_for_errors`. DataLoss for:
// fewer than 8 bytes; a header length over kSafetensorsMaxHeaderBytes or past the
// end; a header that is not JSON, does not start with '{', nests deeper than 128
// levels (serde_json's limit) or repeats a name; an entry that is not an object,
// an unknown dtype, a shape that is not a list of non-negative integers, an
// element count that overflows, data_offsets that are not two integers with
// begin <= end, an end past the buffer, a byte size other than elements * dtype
// size; tensors that leave holes or overlap, or do not cover the buffer; metadata
// that is not an object of strings; a BOOL byte other than 0 or 1; a checksum
// that is not 8 hex digits, names no tensor, or differs from the CRC32C of the
// tensor's bytes (the message names the tensor, its file bytes and both
// values). The metadata returned keeps the checksum entries. ReadSafetensors
// applies exactly these checks (it shares the header validation and the assembly
// of tensors; only where the bytes come from differs). For fuzzing, too.
StatusOr<SafetensorsFile> ParseSafetensors(std::string_view bytes, const std::string& name_for_errors);

}  // namespace tw::train

#pragma GCC visibility pop

#endif  // TOWERFLOW_TRAIN_SAFETENSORS_H_
