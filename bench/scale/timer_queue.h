// TimerQueue: one thread runs every timed action of codl-load-agents (delayed replies,
// heartbeat sends) in time order, instead of a thread or timer per agent.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "lib/rpc/rpc_util.h"

namespace codl::bench {

inline int64_t NowNs() { return codl::rpc::UnixNanosNow(); }

// One thread runs every timed action (delayed replies, heartbeat sends) in time order.
class TimerQueue {
 public:
  TimerQueue() : thread_([this] { Loop(); }) {}
  ~TimerQueue() { Stop(); }
  void Post(int64_t at_ns, std::function<void()> fn) {
    bool earliest;
    {
      std::lock_guard<std::mutex> l(mu_);
      earliest = q_.empty() || at_ns < q_.top().at;
      q_.push(Item{at_ns, seq_++, std::move(fn)});
    }
    // Only a new earliest item changes when the thread must wake: 10,000 agents post 10,000
    // heartbeats a second, and waking the thread for each cost a futex round trip per post.
    if (earliest) cv_.notify_one();
  }
  // The same, rounded up to the next millisecond (never early, at most 1 ms late): the periodic
  // sends of many agents then share wake-ups (10,000 agents at 1 Hz: <= 1,000 wake-ups a
  // second instead of 10,000), as each real agent's timer has its own slack.
  void PostCoalesced(int64_t at_ns, std::function<void()> fn) {
    constexpr int64_t kGrainNs = 1'000'000;
    Post((at_ns + kGrainNs - 1) / kGrainNs * kGrainNs, std::move(fn));
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Item {
    int64_t at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (q_.empty()) {
        cv_.wait(l);
        continue;
      }
      const int64_t now = NowNs();
      int64_t wait = q_.top().at - now;
      if (wait > 0) {
        cv_.wait_for(l, std::chrono::nanoseconds(wait));
        continue;
      }
      // Everything due now runs with the same fired-at time: N emulated agents would each wake
      // in parallel on their own host, not one after another on this one thread.
      std::vector<std::function<void()>> due;
      while (!q_.empty() && q_.top().at <= now) {
        // top() is const; moving out of it is safe because pop() follows at once.
        due.push_back(std::move(const_cast<Item&>(q_.top()).fn));
        q_.pop();
      }
      l.unlock();
      fired_ns_ = now;
      for (auto& fn : due) fn();
      l.lock();
    }
  }

 public:
  // When the timer woke for the callback now running (only valid inside a callback).
  static int64_t FiredNs() { return fired_ns_; }

 private:
  static thread_local int64_t fired_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q_;
  uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

inline thread_local int64_t TimerQueue::fired_ns_ = 0;

}  // namespace codl::bench
