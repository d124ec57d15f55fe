// net: network bandwidth hog over TCP. role=send streams `connections` TCP connections to a
// peer; role=receive accepts them and drains. Unit: bytes/s of payload handed to the kernel
// (send: accepted by send(); TCP flow control makes that track what the peer drains) or read
// from it (receive). Paced per message by the shared closed-loop controller.
//
// peer=loopback (the default) starts an in-process sink on 127.0.0.1, which exercises the
// host's TCP stack and is what the tests use. Across nodes, run role=receive on the peer
// (bind=<its address>, port=P) and role=send with peer=<host>:P here. The receiver binds only
// the address given (default 127.0.0.1), never all interfaces unless bind=0.0.0.0 is asked for.
//
// A pair across agents (ranks=2, filled in by the controller for an antagonist placed on two
// nodes: `nodes: {hosts: [a, b]}`) uses the collective contract of injector.h like nccl: rank 0
// (the first node in the controller's order: agent ids sorted) listens on bind (port 0 = any)
// and publishes (HostServices::PublishRendezvous) the addresses it can be reached at and a
// random token (net_endpoint.h); the agent of rank 1 fetches that through the controller and starts
// it with --set endpoint=<hex>, and rank 1 connects to the first address that answers with the
// token. The data then flows towards the node `receiver` names (first = rank 0, the default).
// role and peer do not apply to a pair.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/protocol.h"
#include "injectors/net/net_endpoint.h"
#include "injectors/net/net_rdma.h"
#include "injectors/net/net_socket.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

std::string Errno() { return std::strerror(errno); }

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
        "network bandwidth (TCP; " + RdmaStatus() + ")",
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
            IntOption("ranks", "1", 1, 65536,
                      "2 = a pair across agents: rank 0 receives, rank 1 sends to it (the "
                      "controller sets this for an antagonist on two nodes)"),
            IntOption("rank", "0", 0, 65535, "ranks=2: 0 = the receiver, 1 = the sender"),
            StringOption("rendezvous_key", "",
                         "ranks=2: name under which rank 0 publishes its endpoint"),
            EnumOption("receiver", "first", {"first", "second"},
                       "ranks=2: which node receives, in the controller's node order (agents "
                       "sorted by id, as `codlctl agents` lists them); the other sends"),
            StringOption("endpoint", "",
                         "ranks=2, rank 1: value_hex of rank 0's rendezvous_publish line (the "
                         "agent fills it in)"),
        },
        Capabilities{.collective = true, .rendezvous_option = "endpoint"},
        {{"connections", "1"}},
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return Status::Ok(); }

  Status CheckOptions(const OptionValues& o) const override {
    if (Status s = CheckPairRanks("net", "a net antagonist", o); !s.ok()) return s;
    const int64_t ranks = o.Int("ranks");
    if (ranks == 2) return CheckPair(o);
    sockaddr_storage a;
    socklen_t len;
    if (o.String("role") == "send" && o.String("peer") != "loopback" &&
        !Resolve(o.String("peer"), &a, &len)) {
      return InvalidArgument("option 'peer': '" + o.String("peer") +
                             "' is not loopback or a resolvable host:port");
    }
    return Status::Ok();
  }

  Status Setup(const OptionValues& o, const HostInfo&, HostServices& services,
               const StopToken& stop) override {
    send_ = o.String("role") == "send";
    listening_ = !send_;
    connections_ = static_cast<int>(o.Int("connections"));
    message_ = o.Size("message_size");
    buffer_.assign(message_, 0x5a);
    if (o.Int("ranks") == 2) return SetupPair(o, services, stop);
    if (send_) return Connect(o.String("peer"), stop);
    if (Status s = Listen(o.String("bind"), static_cast<int>(o.Int("port"))); !s.ok()) return s;
    services.Note(notes_.front());  // whoever starts the sender needs the port now
    return Status::Ok();
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
    PacedRunSpec spec;
    spec.workers = connections_;
    auto worker = [this](WorkerContext& ctx) -> Status {
      std::vector<char> rbuf(send_ ? 0 : message_);
      while (ctx.Acquire(message_)) {
        const int fd = listening_ ? Accepted(ctx.index, ctx.stop) : fds_[ctx.index];
        if (fd < 0) break;
        size_t done = 0;
        while (done < message_ && !ctx.stop.stop_requested()) {
          if (!WaitFd(fd, send_ ? POLLOUT : POLLIN)) continue;
          const ssize_t n = send_ ? send(fd, buffer_.data() + done, message_ - done, MSG_NOSIGNAL)
                                  : recv(fd, rbuf.data(), message_ - done, 0);
          if (n <= 0 && !listening_) return PeerGone(n, ctx.stop);
          if (n <= 0) {  // the peer went away: wait for the next one
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
  Status CheckPair(const OptionValues& o) const {
    if (o.String("peer") != "loopback") {
      return InvalidArgument(
          "option 'peer' does not apply to a pair (ranks=2): rank 1 sends to what rank 0 "
          "publishes");
    }
    if (o.Int("rank") == 0 && o.String("rendezvous_key").empty()) {
      return InvalidArgument(
          "net: rank 0 of 2 publishes its endpoint for rank 1: set rendezvous_key (the agent "
          "relays it; the controller sets it for an antagonist on two nodes)");
    }
    if (o.Int("rank") == 1) {
      const std::string hex = o.String("endpoint");
      if (hex.empty()) {
        return InvalidArgument(
            "net: rank 1 of 2 needs endpoint: the value_hex of rank 0's rendezvous_publish "
            "line (the agent fetches it through the controller)");
      }
      auto bytes = protocol::RendezvousFetch::DecodeValue(hex);
      if (!bytes.ok()) return InvalidArgument("option 'endpoint': " + bytes.error());
      auto e = DecodeNetEndpoint(*bytes);
      if (!e.ok()) return InvalidArgument("option 'endpoint': " + e.error());
    }
    return Status::Ok();
  }

  // ranks=2: rank 0 listens and publishes where; rank 1 connects to what it published.
  Status SetupPair(const OptionValues& o, HostServices& services, const StopToken& stop) {
    pair_ = true;
    // Rank 0 always listens (it is the one that can publish); the data flows towards `receiver`.
    const bool first_receives = o.String("receiver") == "first";
    if (o.Int("rank") == 0) {
      listening_ = true;
      send_ = !first_receives;
      token_ = NewNetToken();
      if (Status s = Listen(o.String("bind"), static_cast<int>(o.Int("port"))); !s.ok()) return s;
      const NetEndpoint e{token_, ReachableAddresses(o.String("bind"), bound_port_)};
      return services.PublishRendezvous(EncodeNetEndpoint(e));
    }
    listening_ = false;
    send_ = first_receives;
    const std::string hex = o.String("endpoint");
    auto bytes = protocol::RendezvousFetch::DecodeValue(hex);
    if (!bytes.ok()) return InvalidArgument("option 'endpoint': " + bytes.error());
    auto e = DecodeNetEndpoint(*bytes);
    if (!e.ok()) return e.status().WithContext("option 'endpoint'");
    std::string tried;
    for (const auto& addr : e->addresses) {
      std::string why;
      const int fd = ConnectVerified(addr, e->token, &why);
      if (fd < 0) {
        tried += (tried.empty() ? "" : "; ") + why;
        continue;
      }
      fds_.push_back(fd);
      peer_ = addr;
      break;
    }
    if (fds_.empty()) return Err("net: no address of rank 0 answered: " + tried);
    while (static_cast<int>(fds_.size()) < connections_) {
      if (stop.stop_requested()) return Err("stopped during setup");
      std::string why;
      const int fd = ConnectVerified(peer_, e->token, &why);
      if (fd < 0) return Err("net: " + why);
      fds_.push_back(fd);
    }
    notes_ = {send_ ? "pair: sending to the receiver at " + peer_
                    : "pair: receiving from the sender at " + peer_};
    return Status::Ok();
  }

  // The connection this side opened broke (n < 0) or was closed (n == 0). In a pair the peer
  // is stopped at the same moment as this rank, by another agent, so a peer that goes away
  // just before our own stop arrives is the normal end of a trial: wait up to 2 s for it.
  // Anything else is a failure.
  Status PeerGone(ssize_t n, const StopToken& stop) {
    const std::string why = n == 0 ? "the peer closed the connection" : Errno();
    for (int i = 0; pair_ && i < 40 && !stop.stop_requested(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pair_ && stop.stop_requested()) return Status::Ok();
    return Err(std::string("net: ") + (send_ ? "send to " : "receive from ") + peer_ + ": " + why);
  }

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
    std::string why;
    listen_fd_ = ListenTcp(bind_addr, port, connections_, &bound_port_, &why);
    if (listen_fd_ < 0) return Err(why);
    notes_ = {"listening on " + bind_addr + ":" + std::to_string(bound_port_)};
    fds_.assign(connections_, -1);
    return Status::Ok();
  }

  // The listening side's connection for worker i, accepting one when it has none (-1 on
  // stop). In a pair, a connection is used only once it presented rank 0's token (within 2 s);
  // rank 0 then writes the token back, which rank 1 checks (ConnectVerified). Anything else
  // that connects is closed without a byte.
  int Accepted(int i, const StopToken& stop) {
    while (fds_[i] < 0 && !stop.stop_requested()) {
      if (!WaitFd(listen_fd_, POLLIN)) continue;
      fds_[i] = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fds_[i] >= 0 && !token_.empty() && !AnswerToken(fds_[i], token_, &stop)) {
        CloseAccepted(i);
      }
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

  bool send_ = true, pair_ = false;
  bool listening_ = false;  // accepts its connections (role=receive, a pair's rank 0)
  int connections_ = 1, listen_fd_ = -1, bound_port_ = 0;
  std::string token_;  // a pair's receiver: written first on every accepted connection
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
