// Rendezvous: a key -> opaque bytes board with blocking fetch. Relays e.g. NCCL's ncclUniqueId
// from rank 0 to the other ranks through the controller, so collectives span nodes without MPI.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace codl::controller {

class Rendezvous {
 public:
  void Publish(const std::string& key, const std::string& value) {
    {
      std::lock_guard<std::mutex> l(mu_);
      values_[key] = value;
    }
    cv_.notify_all();
  }
  // Waits up to wait_s for the key.
  std::optional<std::string> Fetch(const std::string& key, double wait_s) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::duration<double>(wait_s), [&] { return values_.count(key) > 0; });
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
};

}  // namespace codl::controller
