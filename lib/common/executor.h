// Executor: a small fixed thread pool. gRPC callback reactions post their blocking work here
// and return at once, as the callback API requires.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace codl {

class Executor {
 public:
  explicit Executor(int threads) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this] { Loop(); });
    }
  }
  ~Executor() { Shutdown(); }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void Post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) return;
      tasks_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

  // Runs what is queued, then joins the workers.
  void Shutdown() {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_ && workers_.empty()) return;
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) {
      if (t.joinable()) t.join();
    }
    workers_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        fn = std::move(tasks_.front());
        tasks_.pop_front();
      }
      fn();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

}  // namespace codl
