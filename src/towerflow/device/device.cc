#include "towerflow/device/device.h"

namespace tw {

std::string LocalDeviceName(const std::string& type, int index) {
  return "/job:localhost/replica:0/task:0/device:" + type + ":" + std::to_string(index);
}

Device::Device(std::string type, int index, Allocator* allocator, int intra_op_threads)
    : type_(std::move(type)), index_(index), name_(LocalDeviceName(type_, index)), allocator_(allocator) {
  // The calling thread takes one shard of every ParallelFor, so a device with k
  // threads needs a pool of k - 1.
  if (intra_op_threads > 1) pool_ = std::make_unique<ThreadPool>(name_.substr(name_.rfind(':') - 3), intra_op_threads - 1);
}

}  // namespace tw
