// FanOut: n calls issued at once, their results collected by index. For callback APIs (one
// thread issues every call; the replies arrive on others), so that the mutex, condition variable
// and pending count of "wait for every reply" are written once.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace codl {

// Calls issue(i, done) for i in [0, n), then waits until every `done` has run, and returns the
// results in call order. `done(result)` may run on any thread, before issue returns or after; a
// second run of the same `done` is ignored. Not cancellable: every call must end by itself (a
// deadline), or FanOut waits forever.
template <class R, class Issue>
std::vector<R> FanOut(size_t n, Issue&& issue) {
  struct State {
    std::mutex mu;
    std::condition_variable all_done;
    size_t pending = 0;
    std::vector<std::optional<R>> results;
  };
  // Shared with every `done`: one that runs twice, late, still finds it alive.
  auto st = std::make_shared<State>();
  st->pending = n;
  st->results.resize(n);
  for (size_t i = 0; i < n; ++i) {
    std::function<void(R)> done = [st, i](R result) {
      std::lock_guard<std::mutex> l(st->mu);
      if (st->results[i]) return;
      st->results[i].emplace(std::move(result));
      if (--st->pending == 0) st->all_done.notify_all();  // under the lock: the waiter reads next
    };
    issue(i, std::move(done));
  }
  std::unique_lock<std::mutex> l(st->mu);
  st->all_done.wait(l, [&] { return st->pending == 0; });
  std::vector<R> out;
  out.reserve(n);
  for (auto& r : st->results) out.push_back(std::move(*r));
  return out;
}

}  // namespace codl
