// CheckpointManager: naming, the index file, retention and fallback restore.
// Filesystem calls use std::error_code overloads: nothing here throws.
#include "towerflow/train/checkpoint_manager.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace

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
  metadata["global_step"] = std::to_string(step);
  const std::string path = CheckpointPath(step);
  TW_RETURN_IF_ERROR(saver.Save(session, path, metadata));

  std::vector<std::string> names = CheckpointNames();
  const std::string name = fs::path(path).filename().string();
  std::erase(names, name);
  names.push_back(name);
  const size_t keep =
      max_to_keep_ > 0 ? std::min(names.size(), static_cast<size_t>(max_to_keep_)) : names.size();
  const std::vector<std::string> dropped(names.begin(), names.end() - static_cast<ptrdiff_t>(keep));
  names.erase(names.begin(), names.end() - static_cast<ptrdiff_t>(keep));
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

StatusOr<RestoreResult> CheckpointManager::RestoreLatest(Session& session, const Saver& saver) const {
  const std::vector<std::string> names = CheckpointNames();
  if (names.empty()) {
    return errors::NotFound("CheckpointManager: no checkpoint in ", directory_, " (no index ", IndexPath(),
                            " and no ", prefix_, "-<step>", kSuffix, " file)");
  }
  RestoreResult result;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    const std::string path = (fs::path(directory_) / *it).string();
    auto file = ReadSafetensors(path);
    if (!file.ok()) {
      TW_LOG(WARNING) << "CheckpointManager: skipping unreadable checkpoint: " << file.status().ToString();
      result.rejected.push_back(file.status());
      continue;
    }
    TW_RETURN_IF_ERROR(saver.RestoreFrom(session, *file, path));
    result.path = path;
    result.step = *StepOf(*it);
    return result;
  }
  return errors::NotFound("CheckpointManager: no readable checkpoint in ", directory_, ": ",
                          result.rejected.size(), " rejected: ", JoinStatuses(result.rejected));
}

}  // namespace tw::train
