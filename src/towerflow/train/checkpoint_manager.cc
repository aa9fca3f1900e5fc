// CheckpointManager: naming, the index file, retention and fallback restore.
// Filesystem calls use std::error_code overloads: nothing here throws.
#include "towerflow/train/checkpoint_manager.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "towerflow/core/logging.h"
#include "towerflow/train/atomic_file.h"
#include "towerflow/data/record_writer.h"
#include "towerflow/train/safetensors.h"

namespace tw::train {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIndexName = "checkpoint";
constexpr std::string_view kIndexFirstLine = "# towerflow checkpoint index: kept checkpoints, oldest first";
constexpr std::string_view kSuffix = ".safetensors";
constexpr std::string_view kTmpMarker = ".tmp-";

// A non-negative decimal without sign or leading zero, fitting int64.
std::optional<int64_t> ParseCanonicalInt(std::string_view digits) {
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0')) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size() || value < 0) return std::nullopt;
  return value;
}

// Whether process `pid` may still be writing: it exists (or we may not signal it).
bool ProcessAlive(int64_t pid) {
  if (pid <= 0 || pid != static_cast<pid_t>(pid)) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// The names of the directory's entries; empty when it cannot be listed.
std::vector<std::string> ListDirectory(const std::string& directory) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  return names;
}

std::string JoinStatuses(const std::vector<Status>& statuses) {
  std::string out;
  for (const Status& s : statuses) out += (out.empty() ? "" : "; ") + s.ToString();
  return out;
}

// The value of an integer scalar tensor; nullopt for any other tensor.
std::optional<int64_t> IntegerScalar(const Tensor& t) {
  if (t.NumElements() != 1 || t.shape().rank() != 0) return std::nullopt;
  if (t.dtype() == kInt64) return t.scalar<int64_t>();
  if (t.dtype() == kInt32) return t.scalar<int32_t>();
  return std::nullopt;
}

// The flat index of the first NaN or Inf of a floating-point tensor; -1 when
// there is none (or the tensor is not floating-point).
int64_t FirstNonFinite(const Tensor& t) {
  auto scan = [&](const auto* v) -> int64_t {
    for (int64_t i = 0; i < t.NumElements(); ++i) {
      if (!std::isfinite(v[i])) return i;
    }
    return -1;
  };
  if (t.dtype() == kFloat32) return scan(static_cast<const float*>(t.raw_data()));
  if (t.dtype() == kFloat64) return scan(static_cast<const double*>(t.raw_data()));
  return -1;
}

}  // namespace

Status CheckGlobalStep(const std::string& path, const SafetensorsFile& file, std::optional<int64_t> step_from_name) {
  // Each source and what it says; they must all say the same.
  std::vector<std::pair<std::string, int64_t>> said;
  if (step_from_name) said.emplace_back("its file name", *step_from_name);
  if (auto it = file.metadata.find("global_step"); it != file.metadata.end()) {
    std::optional<int64_t> v = ParseCanonicalInt(it->second);
    if (!v) return errors::DataLoss(path, ": metadata global_step '", it->second, "' is not a non-negative integer");
    said.emplace_back("metadata global_step", *v);
  }
  if (const Tensor* t = file.Find("global_step")) {
    std::optional<int64_t> v = IntegerScalar(*t);
    if (!v) {
      return errors::DataLoss(path, ": tensor 'global_step' is ", DataTypeName(t->dtype()), t->shape().ToString(),
                              ", not an integer scalar");
    }
    said.emplace_back("tensor global_step", *v);
  }
  for (const auto& [source, step] : said) {
    if (step == said.front().second) continue;
    std::string all;
    for (const auto& [s, v] : said) all += StrCat(all.empty() ? "" : ", ", s, " says ", v);
    return errors::DataLoss(path, ": the global step disagrees: ", all);
  }
  return Status::OK();
}

Status CheckFinite(const std::string& path, const SafetensorsFile& file) {
  for (const auto& [name, t] : file.tensors) {
    if (const int64_t i = FirstNonFinite(t); i >= 0) {
      return errors::FailedPrecondition(path, ": tensor '", name, "' holds NaN or Inf (first at flat index ", i,
                                        "): the weights of a training that diverged");
    }
  }
  return Status::OK();
}

CheckpointManager::CheckpointManager(std::string directory, int max_to_keep, std::string prefix)
    : directory_(std::move(directory)), max_to_keep_(max_to_keep), prefix_(std::move(prefix)) {}

std::string CheckpointManager::CheckpointPath(int64_t step) const {
  return (fs::path(directory_) / StrCat(prefix_, "-", step, kSuffix)).string();
}

std::string CheckpointManager::IndexPath() const { return (fs::path(directory_) / kIndexName).string(); }

std::optional<int64_t> CheckpointManager::StepOf(std::string_view file_name) const {
  const std::string head = prefix_ + "-";
  if (file_name.size() < head.size() + kSuffix.size() || !file_name.starts_with(head) ||
      !file_name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  file_name.remove_prefix(head.size());
  file_name.remove_suffix(kSuffix.size());
  return ParseCanonicalInt(file_name);
}

std::optional<std::vector<std::string>> CheckpointManager::ReadIndex() const {
  std::ifstream in(IndexPath(), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // Written whole by rename, so a missing final newline or an odd line means
  // someone else wrote it: fall back to the directory rather than guess.
  if (in.bad() || text.empty() || text.back() != '\n') return std::nullopt;
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != kIndexFirstLine) return std::nullopt;
  std::vector<std::string> names;
  while (std::getline(lines, line)) {
    if (!StepOf(line) || std::find(names.begin(), names.end(), line) != names.end()) return std::nullopt;
    names.push_back(line);
  }
  return names;
}

std::vector<std::string> CheckpointManager::ScanDirectory() const {
  std::vector<std::pair<int64_t, std::string>> found;
  for (std::string& name : ListDirectory(directory_)) {
    if (auto step = StepOf(name)) found.emplace_back(*step, std::move(name));
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> names;
  for (auto& [step, name] : found) names.push_back(std::move(name));
  return names;
}

std::vector<std::string> CheckpointManager::CheckpointNames() const {
  std::optional<std::vector<std::string>> index = ReadIndex();
  return index ? std::move(*index) : ScanDirectory();
}

std::vector<std::string> CheckpointManager::Checkpoints() const {
  std::vector<std::string> paths;
  for (const std::string& name : CheckpointNames()) paths.push_back((fs::path(directory_) / name).string());
  return paths;
}

std::optional<int64_t> CheckpointManager::LatestStep() const {
  const std::vector<std::string> names = CheckpointNames();
  return names.empty() ? std::nullopt : StepOf(names.back());
}

Status CheckpointManager::WriteIndex(const std::vector<std::string>& names) const {
  std::string text = StrCat(kIndexFirstLine, "\n");
  for (const std::string& name : names) text += name + "\n";
  return WriteFileAtomically(IndexPath(), {text});
}

void CheckpointManager::RemoveStaleTemporaries() const {
  for (const std::string& name : ListDirectory(directory_)) {
    const size_t marker = name.rfind(kTmpMarker);
    if (marker == std::string::npos) continue;
    const std::string_view target = std::string_view(name).substr(0, marker);
    std::optional<int64_t> pid = ParseCanonicalInt(std::string_view(name).substr(marker + kTmpMarker.size()));
    if (!pid || (target != kIndexName && !StepOf(target))) continue;  // not ours
    if (*pid == static_cast<int64_t>(::getpid()) || ProcessAlive(*pid)) continue;
    const std::string path = (fs::path(directory_) / name).string();
    if (::unlink(path.c_str()) == 0) {
      TW_LOG(INFO) << "CheckpointManager: removed " << path << ", left by a writer that is gone";
    }
  }
}

StatusOr<std::string> CheckpointManager::Save(Session& session, const Saver& saver, int64_t step,
                                              std::map<std::string, std::string> metadata) const {
  if (step < 0) return errors::InvalidArgument("CheckpointManager: step ", step, " is negative");
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (ec) return tw::internal::FileError(directory_, "cannot create directory", ec.value());
  RemoveStaleTemporaries();
  const std::string path = CheckpointPath(step);
  auto tensors = saver.Fetch(session);
  if (!tensors.ok()) return tensors.status().WithContext(StrCat("Saver: saving ", path));
  metadata["global_step"] = std::to_string(step);
  metadata.erase(kNonFiniteMetadataKey);
  for (const auto& [name, t] : *tensors) {
    if (name == "global_step") {
      std::optional<int64_t> held = IntegerScalar(t);
      if (held && *held != step) {
        return errors::InvalidArgument("CheckpointManager: saving ", path, " as step ", step,
                                       " but variable 'global_step' holds ", *held,
                                       ": a checkpoint must say one step (nothing written)");
      }
    }
    if (!metadata.count(kNonFiniteMetadataKey) && FirstNonFinite(t) >= 0) metadata[kNonFiniteMetadataKey] = name;
  }
  const bool finite = !metadata.count(kNonFiniteMetadataKey);
  TW_RETURN_IF_ERROR(Saver::Write(path, *tensors, metadata));

  std::vector<std::string> names = CheckpointNames();
  const std::string name = fs::path(path).filename().string();
  std::erase(names, name);
  names.push_back(name);
  const size_t keep =
      max_to_keep_ > 0 ? std::min(names.size(), static_cast<size_t>(max_to_keep_)) : names.size();
  std::vector<std::string> dropped(names.begin(), names.end() - static_cast<ptrdiff_t>(keep));
  names.erase(names.begin(), names.end() - static_cast<ptrdiff_t>(keep));
  if (!finite && !dropped.empty() &&
      std::none_of(names.begin(), names.end(), [&](const std::string& n) { return KnownFinite(n); })) {
    // Every kept checkpoint holds NaN or Inf: keep the newest finite one too,
    // the one a --resume falls back to.
    for (auto it = dropped.rbegin(); it != dropped.rend(); ++it) {
      if (!KnownFinite(*it)) continue;
      TW_LOG(WARNING) << "CheckpointManager: keeping " << *it << " beyond the " << max_to_keep_
                      << " newest: it is the newest finite checkpoint and " << name << " holds NaN or Inf";
      names.insert(names.begin(), *it);
      dropped.erase(std::next(it).base());
      break;
    }
  }
  TW_RETURN_IF_ERROR(WriteIndex(names));
  // Only now that the index no longer names them.
  for (const std::string& old : dropped) {
    const std::string old_path = (fs::path(directory_) / old).string();
    if (::unlink(old_path.c_str()) != 0 && errno != ENOENT) {
      TW_LOG(WARNING) << "CheckpointManager: cannot delete old checkpoint "
                      << tw::internal::FileError(old_path, "unlink", errno).ToString();
    }
  }
  return path;
}

bool CheckpointManager::KnownFinite(const std::string& name) const {
  auto metadata = ReadSafetensorsMetadata((fs::path(directory_) / name).string());
  return metadata.ok() && !metadata->count(kNonFiniteMetadataKey);
}

StatusOr<LatestCheckpoint> CheckpointManager::ReadLatest() const {
  const std::vector<std::string> names = CheckpointNames();
  if (names.empty()) {
    return errors::NotFound("CheckpointManager: no checkpoint in ", directory_, " (no index ", IndexPath(),
                            " and no ", prefix_, "-<step>", kSuffix, " file)");
  }
  LatestCheckpoint latest;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    const std::string path = (fs::path(directory_) / *it).string();
    auto file = ReadSafetensors(path);
    Status valid = file.status();
    if (valid.ok()) valid = CheckGlobalStep(path, *file, StepOf(*it));
    if (valid.ok()) valid = CheckFinite(path, *file);
    if (!valid.ok()) {
      TW_LOG(WARNING) << "CheckpointManager: skipping checkpoint: " << valid.ToString();
      latest.rejected.push_back(valid);
      continue;
    }
    latest.path = path;
    latest.step = *StepOf(*it);
    latest.file = std::move(*file);
    return latest;
  }
  return errors::NotFound("CheckpointManager: no valid checkpoint in ", directory_, ": ", latest.rejected.size(),
                          " rejected: ", JoinStatuses(latest.rejected));
}

StatusOr<RestoreResult> CheckpointManager::RestoreLatest(Session& session, const Saver& saver) const {
  TW_ASSIGN_OR_RETURN(LatestCheckpoint latest, ReadLatest());
  TW_RETURN_IF_ERROR(saver.RestoreFrom(session, latest.file, latest.path));
  RestoreResult result;
  result.path = std::move(latest.path);
  result.step = latest.step;
  result.rejected = std::move(latest.rejected);
  return result;
}

}  // namespace tw::train
