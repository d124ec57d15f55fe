// VictimThreads: one thread per running victim, outside the agent's shared handler pool, so a
// few long RunVictim calls (a victim may run for hours) cannot starve StopAll, StopAntagonist or
// Calibrate. The number at once is capped; finished threads are joined on the next launch.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace codl::agent {

class VictimThreads {
 public:
  explicit VictimThreads(size_t max_running) : max_running_(max_running) {}
  ~VictimThreads() { JoinAll(); }

  // False (and `task` not run) when max_running victims are already running or after JoinAll.
  bool Launch(std::function<void()> task) {
    std::lock_guard<std::mutex> l(mu_);
    ReapLocked();
    if (closed_ || threads_.size() >= max_running_) return false;
    auto done = std::make_shared<std::atomic<bool>>(false);
    threads_.push_back(Slot{std::thread([task = std::move(task), done] {
                              task();
                              *done = true;
                            }),
                            done});
    return true;
  }
  void JoinAll() {
    std::list<Slot> all;
    {
      std::lock_guard<std::mutex> l(mu_);
      closed_ = true;
      all.swap(threads_);
    }
    for (auto& s : all) s.thread.join();
  }

 private:
  struct Slot {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void ReapLocked() {
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (*it->done) {
        it->thread.join();
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
  }

  const size_t max_running_;
  std::mutex mu_;
  std::list<Slot> threads_;
  bool closed_ = false;
};

}  // namespace codl::agent
