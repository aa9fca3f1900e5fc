#include "towerflow/data/internal/read_ahead.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

namespace tw::internal {

ReadAhead::ReadAhead(std::string name, Source source, size_t chunk_bytes, int chunks)
    : name_(std::move(name)), source_(std::move(source)), chunk_bytes_(chunk_bytes), chunks_(chunks) {}

bool ReadAhead::Start() {
  for (Chunk& c : chunks_) {
    c.bytes.reset(new (std::nothrow) uint8_t[chunk_bytes_]);
    if (c.bytes == nullptr) return false;
  }
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error&) {
    return false;  // out of threads
  }
  pthread_setname_np(thread_.native_handle(), name_.substr(0, 15).c_str());  // Linux's limit
  return true;
}

ReadAhead::~ReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  freed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReadAhead::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    freed_.wait(lock, [&] { return stop_ || (!parked_ && ready_ < chunks_.size()); });
    if (stop_) return;
    // The chunk at fill_ is neither ready nor the caller's (it only reads
    // ready chunks), so it is filled without the lock.
    Chunk& c = chunks_[fill_];
    lock.unlock();
    size_t got = 0;
    Status status = source_(c.bytes.get(), chunk_bytes_, &got);
    lock.lock();
    c.size = status.ok() ? got : 0;
    c.taken = 0;
    c.status = std::move(status);
    if (!c.status.ok() || c.size == 0) parked_ = true;
    fill_ = (fill_ + 1) % chunks_.size();
    ++ready_;
    filled_.notify_one();
  }
}

Status ReadAhead::Read(uint8_t* dst, size_t n, size_t* got) {
  *got = 0;
  std::unique_lock<std::mutex> lock(mu_);
  if (ready_ == 0 && parked_) {
    // Everything before the last end or error was taken: ask the source again.
    parked_ = false;
    freed_.notify_one();
  }
  filled_.wait(lock, [&] { return ready_ > 0; });
  // A ready chunk is the caller's until it is released (ready_ drops).
  Chunk& c = chunks_[read_];
  lock.unlock();
  Status status;
  if (c.status.ok()) {
    const size_t take = std::min(n, c.size - c.taken);
    if (take > 0) std::memcpy(dst, c.bytes.get() + c.taken, take);
    c.taken += take;
    *got = take;
  } else {
    status = c.status;
  }
  if (!status.ok() || c.taken == c.size) {
    lock.lock();
    read_ = (read_ + 1) % chunks_.size();
    --ready_;
    freed_.notify_one();
  }
  return status;
}

}  // namespace tw::internal
