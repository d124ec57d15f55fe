// IdempotencyCache: remembers the reply to each mutating call by its idempotency key, so that a
// retried call (same key) gets the first call's reply instead of acting twice. Bounded (FIFO).
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <string>

#include <google/protobuf/message.h>

namespace codl::rpc {

class IdempotencyCache {
 public:
  explicit IdempotencyCache(size_t capacity = 4096) : capacity_(capacity) {}

  // True (and `reply` filled) when `key` was answered before.
  bool Lookup(const std::string& key, google::protobuf::Message* reply) {
    if (key.empty()) return false;
    std::lock_guard<std::mutex> l(mu_);
    auto it = replies_.find(key);
    if (it == replies_.end()) return false;
    return reply->ParseFromString(it->second);
  }

  void Store(const std::string& key, const google::protobuf::Message& reply) {
    if (key.empty()) return;
    std::lock_guard<std::mutex> l(mu_);
    if (replies_.emplace(key, reply.SerializeAsString()).second) order_.push_back(key);
    while (order_.size() > capacity_) {
      replies_.erase(order_.front());
      order_.pop_front();
    }
  }

 private:
  size_t capacity_;
  std::mutex mu_;
  std::map<std::string, std::string> replies_;
  std::deque<std::string> order_;
};

}  // namespace codl::rpc
