// CopySplit: cuda_memcpy direction=bidir runs H2D and D2H lanes against one pacer, so without a
// rule the direction the hardware serves faster took whatever share it could (at --max and at
// every level), and "bidir at X bytes/s" meant a different load each run. A lane may issue a
// copy only while its direction's issued bytes are at or below its share of all issued bytes;
// the split then stays within a copy or so per lane of `h2d_share`. Thread-safe (one thread per
// lane), host-only, unit-tested.
#pragma once

#include <atomic>
#include <cstdint>

namespace codl::injectors::gpu {

class CopySplit {
 public:
  explicit CopySplit(double h2d_share) : h2d_share_(h2d_share) {}

  // Whether a lane of this direction may issue its next copy now.
  bool MayIssue(bool h2d) const {
    const double h2d_bytes = static_cast<double>(h2d_.load(std::memory_order_relaxed));
    const double d2h_bytes = static_cast<double>(d2h_.load(std::memory_order_relaxed));
    const double total = h2d_bytes + d2h_bytes;
    return h2d ? h2d_bytes <= h2d_share_ * total : d2h_bytes <= (1 - h2d_share_) * total;
  }
  void Issued(bool h2d, uint64_t bytes) {
    (h2d ? h2d_ : d2h_).fetch_add(bytes, std::memory_order_relaxed);
  }
  uint64_t h2d_bytes() const { return h2d_.load(std::memory_order_relaxed); }
  uint64_t d2h_bytes() const { return d2h_.load(std::memory_order_relaxed); }

 private:
  double h2d_share_;
  std::atomic<uint64_t> h2d_{0};
  std::atomic<uint64_t> d2h_{0};
};

}  // namespace codl::injectors::gpu
