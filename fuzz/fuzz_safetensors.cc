// fuzz_safetensors: the checkpoint loader (train/safetensors.h) on arbitrary
// bytes. ParseSafetensors must accept or answer DataLoss naming the file, never
// crash, hang or allocate beyond the input; what it accepts must be
// self-consistent (its tensors fit in the input, each name finds its tensor)
// and parsing the same bytes again gives the same tensors bit for bit and the
// same metadata. (Writing back goes through fsync, too slow to fuzz; the unit
// tests and the safetensors interop test cover the writer.)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "towerflow/train/safetensors.h"

namespace tw {
namespace {

[[noreturn]] void FuzzFail(const std::string& what) {
  std::fprintf(stderr, "fuzz_safetensors: %s\n", what.c_str());
  std::abort();
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const size_t bytes = a.TotalBytes();
  return bytes == b.TotalBytes() && (bytes == 0 || std::memcmp(a.raw_data(), b.raw_data(), bytes) == 0);
}

// What an accepted file must satisfy: its tensors fit in the input, every
// name finds its own tensor, and parsing again gives the same file.
void CheckAccepted(const train::SafetensorsFile& file, std::string_view bytes) {
  size_t total = 0;
  for (const auto& [name, t] : file.tensors) {
    total += t.TotalBytes();
    const Tensor* found = file.Find(name);
    if (found == nullptr || !SameTensor(*found, t)) FuzzFail("Find('" + name + "') is not the tensor");
  }
  if (total > bytes.size()) FuzzFail("accepted tensors larger than the input");
  auto again = train::ParseSafetensors(bytes, "fuzz.safetensors");
  if (!again.ok() || again->tensors.size() != file.tensors.size() || again->metadata != file.metadata) {
    FuzzFail("parsing the same bytes twice disagrees");
  }
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    if (again->tensors[i].first != file.tensors[i].first ||
        !SameTensor(again->tensors[i].second, file.tensors[i].second)) {
      FuzzFail("parsing the same bytes twice gives another tensor " + file.tensors[i].first);
    }
  }
}

}  // namespace
}  // namespace tw

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto file = tw::train::ParseSafetensors(bytes, "fuzz.safetensors");
  if (!file.ok()) {
    if (file.status().code() != tw::Code::kDataLoss) tw::FuzzFail("not DataLoss: " + file.status().ToString());
    if (file.status().message().find("fuzz.safetensors") == std::string::npos) {
      tw::FuzzFail("the error does not name the file: " + file.status().ToString());
    }
    return 0;
  }
  tw::CheckAccepted(*file, bytes);
  return 0;
}
