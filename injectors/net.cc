// net: network bandwidth hog over TCP. role=send streams `connections` TCP connections to a
// peer; role=receive accepts them and drains. Unit: bytes/s of payload handed to the kernel
// (send: accepted by send(); TCP flow control makes that track what the peer drains) or read
// from it (receive). Paced per message by the shared closed-loop controller.
//
// peer=loopback (the default) starts an in-process sink on 127.0.0.1, which exercises the
// host's TCP stack and is what the tests use. Across nodes, run role=receive on the peer
// (bind=<its address>, port=P) and role=send with peer=<host>:P here. The receiver binds only
// the address given (default 127.0.0.1), never all interfaces unless bind=0.0.0.0 is asked for.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "injectors/injector.h"
#include "injectors/paced_run.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

std::string Errno() { return std::strerror(errno); }

// "host:port" → sockaddr; false when unparsable or unresolvable.
bool Resolve(const std::string& hostport, sockaddr_storage* addr, socklen_t* len) {
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = hostport.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), hostport.substr(colon + 1).c_str(), &hints, &res) != 0) {
    return false;
  }
  std::memcpy(addr, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

// Waits up to 50 ms for `events` on fd; true when ready. Keeps every blocking call stoppable.
bool WaitFd(int fd, short events) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, 50) > 0;
}

// A listening socket plus drain threads for what connects: the loopback peer of role=send.
class LoopbackSink {
 public:
  ~LoopbackSink() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    if (fd_ >= 0) close(fd_);
  }
  Status Start(int connections) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        listen(fd_, connections) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return Err("net: loopback sink: " + Errno());
    }
    port_ = ntohs(a.sin_port);
    for (int i = 0; i < connections; ++i) threads_.emplace_back([this] { Drain(); });
    return Status::Ok();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Drain() {
    int c = -1;
    while (!stop_ && c < 0) {
      if (WaitFd(fd_, POLLIN)) c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    }
    std::vector<char> buf(256 * 1024);
    while (!stop_ && c >= 0) {
      if (!WaitFd(c, POLLIN)) continue;
      if (recv(c, buf.data(), buf.size(), 0) <= 0) break;
    }
    if (c >= 0) close(c);
  }
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

class NetInjector final : public Injector {
 public:
  ~NetInjector() override { CloseAll(); }

  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "net",
        "network bandwidth (TCP)",
        "bytes/s",
        "network hog: TCP streams to a peer (or an in-process loopback sink), or a receiver",
        "payload bytes per second handed to send() (role=send) or read by recv() "
        "(role=receive), all connections together",
        {
            EnumOption("role", "send", {"send", "receive"},
                       "send streams to `peer`; receive accepts on bind:port and drains"),
            StringOption("peer", "loopback",
                         "role=send: host:port of a receiver, or loopback = an in-process sink "
                         "on 127.0.0.1"),
            StringOption("bind", "127.0.0.1",
                         "role=receive: address to listen on (0.0.0.0 = all interfaces)"),
            IntOption("port", "0", 0, 65535, "role=receive: TCP port (0 = any; printed)"),
            IntOption("connections", "1", 1, 256, "parallel TCP connections (one thread each)"),
            SizeOption("message_size", "128KiB", 1024, 64.0 * kMiB,
                       "bytes per send()/recv() pacing step"),
        },
        Capabilities{},
        {{"connections", "1"}},
    };
    return d;
  }

  std::string Unsupported(const HostInfo&) const override { return ""; }

  std::string CheckOptions(const OptionValues& o) const override {
    sockaddr_storage a;
    socklen_t len;
    if (o.String("role") == "send" && o.String("peer") != "loopback" &&
        !Resolve(o.String("peer"), &a, &len)) {
      return "option 'peer': '" + o.String("peer") + "' is not loopback or a resolvable host:port";
    }
    return "";
  }

  Status Setup(const OptionValues& o, const HostInfo&, const StopToken& stop) override {
    send_ = o.String("role") == "send";
    connections_ = static_cast<int>(o.Int("connections"));
    message_ = o.Size("message_size");
    buffer_.assign(message_, 0x5a);
    if (send_) return Connect(o.String("peer"), stop);
    return Listen(o.String("bind"), static_cast<int>(o.Int("port")));
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
    PacedRunSpec spec;
    spec.workers = connections_;
    auto worker = [this](WorkerContext& ctx) -> Status {
      std::vector<char> rbuf(send_ ? 0 : message_);
      while (ctx.Acquire(message_)) {
        int fd = send_ ? fds_[ctx.index] : Accepted(ctx.index, ctx.stop);
        if (fd < 0) break;
        size_t done = 0;
        while (done < message_ && !ctx.stop.stop_requested()) {
          if (!WaitFd(fd, send_ ? POLLOUT : POLLIN)) continue;
          const ssize_t n = send_ ? send(fd, buffer_.data() + done, message_ - done, MSG_NOSIGNAL)
                                  : recv(fd, rbuf.data(), message_ - done, 0);
          if (n <= 0 && send_) return Err("net: send to " + peer_ + ": " + Errno());
          if (n <= 0) {  // the sender went away: wait for the next one
            CloseAccepted(ctx.index);
            break;
          }
          done += static_cast<size_t>(n);
          ctx.Done(static_cast<uint64_t>(n));
        }
      }
      return Status::Ok();
    };
    auto summary = RunPaced(spec, target, stop, reporter, worker);
    if (summary.ok()) summary->notes = notes_;
    return summary;
  }

 private:
  Status Connect(const std::string& peer, const StopToken& stop) {
    if (peer == "loopback") {
      sink_ = std::make_unique<LoopbackSink>();
      if (Status s = sink_->Start(connections_); !s.ok()) return s;
      peer_ = sink_->address();
      notes_ = {"peer: in-process loopback sink " + peer_};
    } else {
      peer_ = peer;
      notes_ = {"peer: " + peer_};
    }
    sockaddr_storage addr;
    socklen_t len;
    if (!Resolve(peer_, &addr, &len)) return Err("net: cannot resolve " + peer_);
    for (int i = 0; i < connections_; ++i) {
      if (stop.stop_requested()) return Err("stopped during setup");
      const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) return Err("net: socket: " + Errno());
      fds_.push_back(fd);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        return Err("net: connect to " + peer_ + ": " + Errno());
      }
    }
    return Status::Ok();
  }

  Status Listen(const std::string& bind_addr, int port) {
    sockaddr_storage addr;
    socklen_t len;
    if (!Resolve(bind_addr + ":" + std::to_string(port), &addr, &len)) {
      return Err("option 'bind': cannot resolve '" + bind_addr + "'");
    }
    listen_fd_ = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (listen_fd_ < 0 || setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, connections_) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return Err("net: listen on " + bind_addr + ":" + std::to_string(port) + ": " + Errno());
    }
    const int bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    notes_ = {"listening on " + bind_addr + ":" + std::to_string(bound)};
    std::fprintf(stderr, "codl-inject net: listening on %s:%d\n", bind_addr.c_str(), bound);
    fds_.assign(connections_, -1);
    return Status::Ok();
  }

  // role=receive: this worker's connection, accepting one when it has none (-1 on stop).
  int Accepted(int i, const StopToken& stop) {
    while (fds_[i] < 0 && !stop.stop_requested()) {
      if (WaitFd(listen_fd_, POLLIN)) fds_[i] = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    }
    return fds_[i];
  }
  void CloseAccepted(int i) {
    close(fds_[i]);
    fds_[i] = -1;
  }

  void CloseAll() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
    fds_.clear();
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
    sink_.reset();
  }

  bool send_ = true;
  int connections_ = 1, listen_fd_ = -1;
  size_t message_ = 128 * 1024;
  std::string peer_;
  std::vector<int> fds_;
  std::vector<char> buffer_;
  std::unique_ptr<LoopbackSink> sink_;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Injector> MakeNetInjector() { return std::make_unique<NetInjector>(); }

}  // namespace codl::injectors
