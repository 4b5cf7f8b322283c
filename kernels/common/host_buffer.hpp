#pragma once
// Host memory for transfers: pageable (ordinary heap, what an application usually has) or pinned
// (page-locked, what the DMA engines read at full speed). With pageable memory the driver copies
// through its own pinned staging buffer, which is what the e2e and transfer benchmarks measure.

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/common/cuda_resources.hpp"

namespace gpubench {

enum class HostMemory { pageable, pinned };

inline const char* host_memory_name(HostMemory kind) {
  return kind == HostMemory::pinned ? "pinned" : "pageable";
}

class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, HostMemory kind) : kind_(kind), bytes_(bytes) {
    if (kind == HostMemory::pinned) {
      pinned_ = PinnedHostBuffer(bytes);
      data_ = pinned_.data();
    } else {
      // make_unique value-initialises: every page is touched now, not inside a timed copy.
      pageable_ = std::make_unique<std::byte[]>(bytes);
      data_ = pageable_.get();
    }
  }
  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }
  HostMemory kind() const { return kind_; }

 private:
  HostMemory kind_;
  std::size_t bytes_;
  void* data_ = nullptr;
  PinnedHostBuffer pinned_;
  std::unique_ptr<std::byte[]> pageable_;
};

}  // namespace gpubench
