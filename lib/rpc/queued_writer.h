// QueuedWriteReactor<T>: a server-streaming reactor for the callback API that accepts messages
// from any thread (Push), keeps them in a bounded queue with at most one write in flight, and
// ends the stream when asked (Close) or when the client goes away. Subclasses subscribe in
// their constructor and unsubscribe in OnUnsubscribe(), which runs once, before deletion.
#pragma once

#include <deque>
#include <mutex>

#include <grpcpp/grpcpp.h>

namespace codl::rpc {

template <class T>
class QueuedWriteReactor : public grpc::ServerWriteReactor<T> {
 public:
  explicit QueuedWriteReactor(size_t max_queued = 10000) : max_queued_(max_queued) {}

  // Queues one message (dropped when the reader is this far behind: a stalled client loses
  // messages, never the server). close_after: end the stream once the queue drains.
  void Push(const T& msg, bool close_after = false) {
    std::lock_guard<std::mutex> l(mu_);
    if (finished_) return;
    if (pending_.size() < max_queued_) pending_.push_back(msg);
    close_when_drained_ |= close_after;
    NextLocked();
  }
  void Close(const grpc::Status& status) {
    std::lock_guard<std::mutex> l(mu_);
    FinishLocked(status);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    if (!ok) return FinishLocked(grpc::Status::CANCELLED);
    pending_.pop_front();
    NextLocked();
  }
  void OnCancel() override { Close(grpc::Status::CANCELLED); }
  void OnDone() override {
    OnUnsubscribe();
    delete this;
  }

 protected:
  virtual void OnUnsubscribe() {}

 private:
  void NextLocked() {
    if (writing_ || finished_) return;
    if (pending_.empty()) {
      if (close_when_drained_) FinishLocked(grpc::Status::OK);
      return;
    }
    writing_ = true;
    this->StartWrite(&pending_.front());
  }
  void FinishLocked(const grpc::Status& s) {
    if (finished_) return;
    finished_ = true;
    this->Finish(s);
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::deque<T> pending_;
  bool writing_ = false;
  bool close_when_drained_ = false;
  bool finished_ = false;
};

// A stream refused before it started (bad token, bad request).
template <class T>
grpc::ServerWriteReactor<T>* RefuseStream(const grpc::Status& status) {
  auto* r = new QueuedWriteReactor<T>();
  r->Close(status);
  return r;
}

}  // namespace codl::rpc
