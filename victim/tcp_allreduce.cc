// The ring allreduce over TCP. Setup (before the first step):
//   1. every rank listens on an ephemeral "ring" port;
//   2. ranks > 0 dial rank 0 at MASTER_ADDR:MASTER_PORT (retrying until the connect timeout)
//      and say hello: rank, world size, gradient floats, ring port. Rank 0 checks that they
//      agree, then sends everyone the table of ring addresses (each rank's address as rank 0
//      saw it; rank 0's is MASTER_ADDR);
//   3. each rank dials its right neighbour's ring port and accepts its left neighbour.
// A step: N-1 reduce-scatter exchanges (send one chunk right while receiving the next from the
// left, and add it in), then N-1 all-gather exchanges. Each rank sends and receives
// 2(N-1)/N of the buffer per step, the bandwidth-optimal ring of Gloo and NCCL.
#include "victim/tcp_allreduce.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/common/clock.h"
#include "victim/tcp_allreduce_socket.h"

namespace codl::victim {
namespace {

using tcp::Socket;

constexpr uint32_t kMagic = 0x434f444c;  // "CODL"
constexpr uint32_t kVersion = 1;

// Every setup message is a run of big-endian uint32s (plus the table's host strings).
struct Hello {
  uint32_t magic = kMagic, version = kVersion, rank = 0, world = 0, floats_hi = 0, floats_lo = 0,
           ring_port = 0;
};

Status SendWords(const Socket& s, std::vector<uint32_t> words, double deadline) {
  for (auto& w : words) w = htonl(w);
  return tcp::SendAll(s, words.data(), words.size() * sizeof(uint32_t), deadline);
}

Result<std::vector<uint32_t>> RecvWords(const Socket& s, size_t n, double deadline) {
  std::vector<uint32_t> words(n);
  if (Status st = tcp::RecvAll(s, words.data(), n * sizeof(uint32_t), deadline); !st.ok())
    return st;
  for (auto& w : words) w = ntohl(w);
  return words;
}

Status SendHello(const Socket& s, const Hello& h, double deadline) {
  return SendWords(s, {h.magic, h.version, h.rank, h.world, h.floats_hi, h.floats_lo, h.ring_port},
                   deadline);
}

Result<Hello> RecvHello(const Socket& s, double deadline) {
  auto w = RecvWords(s, 7, deadline);
  if (!w.ok()) return w.status();
  Hello h{(*w)[0], (*w)[1], (*w)[2], (*w)[3], (*w)[4], (*w)[5], (*w)[6]};
  if (h.magic != kMagic || h.version != kVersion) {
    return Err("not a codl-victim --comm tcp peer of this version (another service on the port?)");
  }
  return h;
}

struct Peer {
  std::string host;
  int port = 0;
};

class TcpCommunicator : public Communicator {
 public:
  TcpCommunicator(const TcpCommConfig& c, Device* device, size_t floats)
      : c_(c), device_(device), floats_(floats), scratch_(floats / c.world_size + 1) {}

  // Steps 1-3 of the file comment.
  Status Connect() {
    const double deadline = SteadySeconds() + c_.connect_timeout_s;
    auto ring = tcp::Listen(0);
    if (!ring.ok()) return ring.status().WithContext("rank " + std::to_string(c_.rank));
    auto peers = c_.rank == 0 ? GatherAsMaster(tcp::LocalPort(*ring), deadline)
                              : JoinMaster(tcp::LocalPort(*ring), deadline);
    if (!peers.ok()) return peers.status();
    return ConnectRing(*ring, *peers, deadline);
  }

  std::string Name() const override {
    return "tcp ring reduce-scatter+all-gather, rank " + std::to_string(c_.rank) + " of " +
           std::to_string(c_.world_size) + " (master " +
           tcp::HostPort(MasterShown(), c_.master_port) + ")";
  }

  Status Allreduce(int) override {
    if (Status s = device_->GradientsToHost(); !s.ok()) return s;
    float* g = device_->HostGradients();
    const int n = c_.world_size, r = c_.rank;
    for (int s = 0; s < n - 1; ++s) {  // reduce-scatter: chunk (r-s) goes right
      const int out = Mod(r - s), in = Mod(r - s - 1);
      if (Status st = Exchange(g, out, scratch_.data(), in); !st.ok()) return st;
      auto [lo, hi] = Chunk(in);
      for (size_t i = lo; i < hi; ++i) g[i] += scratch_[i - lo];
    }
    {  // this rank now holds the whole sum of chunk r+1: average it
      auto [lo, hi] = Chunk(Mod(r + 1));
      const float scale = 1.0f / static_cast<float>(n);
      for (size_t i = lo; i < hi; ++i) g[i] *= scale;
    }
    for (int s = 0; s < n - 1; ++s) {  // all-gather: the finished chunks travel round
      const int out = Mod(r + 1 - s), in = Mod(r - s);
      if (Status st = Exchange(g, out, g + Chunk(in).first, in); !st.ok()) return st;
    }
    return device_->GradientsFromHost();
  }

 private:
  int Mod(int k) const { return ((k % c_.world_size) + c_.world_size) % c_.world_size; }
  int Left() const { return Mod(c_.rank - 1); }
  int Right() const { return Mod(c_.rank + 1); }
  std::string MasterShown() const { return c_.master_host.empty() ? "*" : c_.master_host; }

  std::pair<size_t, size_t> Chunk(int c) const {
    const size_t n = static_cast<size_t>(c_.world_size), k = static_cast<size_t>(c);
    return {floats_ * k / n, floats_ * (k + 1) / n};
  }

  Hello MyHello(int ring_port) const {
    Hello h;
    h.rank = static_cast<uint32_t>(c_.rank);
    h.world = static_cast<uint32_t>(c_.world_size);
    h.floats_hi = static_cast<uint32_t>(static_cast<uint64_t>(floats_) >> 32);
    h.floats_lo = static_cast<uint32_t>(floats_);
    h.ring_port = static_cast<uint32_t>(ring_port);
    return h;
  }

  // Why a peer's hello does not fit this run ("" when it does).
  std::string Disagreement(const Hello& h, const std::vector<Peer>& peers) const {
    const uint64_t floats = (static_cast<uint64_t>(h.floats_hi) << 32) | h.floats_lo;
    if (h.world != static_cast<uint32_t>(c_.world_size))
      return "it has world size " + std::to_string(h.world) + ", rank 0 has " +
             std::to_string(c_.world_size);
    if (floats != floats_)
      return "it allreduces " + std::to_string(floats * 4) + " bytes, rank 0 " +
             std::to_string(floats_ * 4) + " (--allreduce-size must match)";
    if (h.rank == 0 || h.rank >= h.world)
      return "its rank " + std::to_string(h.rank) + " is invalid";
    if (!peers[h.rank].host.empty()) return "rank " + std::to_string(h.rank) + " joined twice";
    return "";
  }

  // Rank 0: every other rank's hello, then the table to each.
  Result<std::vector<Peer>> GatherAsMaster(int ring_port, double deadline) {
    auto listener = tcp::Listen(c_.master_port);
    if (!listener.ok()) {
      return Error{"rank 0: " + listener.error() + " (MASTER_PORT)", listener.code()};
    }
    std::vector<Peer> peers(static_cast<size_t>(c_.world_size));
    peers[0] = {"", ring_port};  // the others dial rank 0 at MASTER_ADDR
    std::vector<Socket> joined;
    for (int have = 1; have < c_.world_size; ++have) {
      auto s = tcp::AcceptUntil(*listener, deadline);
      if (!s.ok())
        return Err(Missing(peers, "rank 0 waited on port " + std::to_string(c_.master_port)));
      auto h = RecvHello(*s, deadline);
      const std::string from = tcp::PeerHost(*s);
      if (!h.ok()) return h.status().WithContext("rank 0: a peer at " + from);
      if (std::string why = Disagreement(*h, peers); !why.empty())
        return Err("rank 0: the peer at " + from + " does not fit this run: " + why);
      peers[h->rank] = {from, static_cast<int>(h->ring_port)};
      joined.push_back(std::move(*s));
    }
    for (const Socket& s : joined) {
      if (Status st = SendTable(s, peers, deadline); !st.ok()) return st.WithContext("rank 0");
    }
    return peers;
  }

  std::string Missing(const std::vector<Peer>& peers, const std::string& what) const {
    std::string missing;
    for (size_t r = 1; r < peers.size(); ++r) {
      if (peers[r].host.empty()) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    return what + " " + std::to_string(c_.connect_timeout_s) + " s; ranks " + missing +
           " never joined";
  }

  static Status SendTable(const Socket& s, const std::vector<Peer>& peers, double deadline) {
    for (const Peer& p : peers) {
      Status st = SendWords(
          s, {static_cast<uint32_t>(p.port), static_cast<uint32_t>(p.host.size())}, deadline);
      if (st.ok()) st = tcp::SendAll(s, p.host.data(), p.host.size(), deadline);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  // Ranks > 0: hello to rank 0, the table back.
  Result<std::vector<Peer>> JoinMaster(int ring_port, double deadline) {
    const std::string me = "rank " + std::to_string(c_.rank) + ": ";
    auto s = tcp::ConnectUntil(c_.master_host, c_.master_port, deadline);
    if (!s.ok()) return s.status().WithContext(me + "rank 0 (MASTER_ADDR:MASTER_PORT)");
    if (Status st = SendHello(*s, MyHello(ring_port), deadline); !st.ok())
      return st.WithContext(me + "hello to rank 0");
    std::vector<Peer> peers(static_cast<size_t>(c_.world_size));
    for (auto& p : peers) {
      auto w = RecvWords(*s, 2, deadline);
      if (!w.ok() || (*w)[1] > 1024)
        return Error{me + "rank 0 refused this rank or went away (see rank 0's error): " +
                         (w.ok() ? "bad table" : w.error()),
                     w.ok() ? StatusCode::kUnknown : w.code()};
      p.port = static_cast<int>((*w)[0]);
      p.host.resize((*w)[1]);
      if (Status st = tcp::RecvAll(*s, p.host.data(), p.host.size(), deadline); !st.ok())
        return st.WithContext("rank " + std::to_string(c_.rank));
    }
    peers[0].host = c_.master_host;
    return peers;
  }

  // Dial the right neighbour, accept the left one (dialling first: a connect completes against
  // the backlog, so no two ranks wait on each other).
  Status ConnectRing(const Socket& ring, const std::vector<Peer>& peers, double deadline) {
    const std::string me = "rank " + std::to_string(c_.rank) + ": ";
    const Peer& right = peers[static_cast<size_t>(Right())];
    auto out = tcp::ConnectUntil(right.host, right.port, deadline);
    if (!out.ok())
      return out.status().WithContext(me + "ring neighbour rank " + std::to_string(Right()));
    if (Status st = SendWords(*out, {kMagic, static_cast<uint32_t>(c_.rank)}, deadline); !st.ok())
      return st.WithContext("rank " + std::to_string(c_.rank));
    auto in = tcp::AcceptUntil(ring, deadline);
    if (!in.ok())
      return in.status().WithContext(me + "rank " + std::to_string(Left()) + " never connected");
    auto who = RecvWords(*in, 2, deadline);
    if (!who.ok() || (*who)[0] != kMagic || (*who)[1] != static_cast<uint32_t>(Left()))
      return Err(me + "the ring connection did not come from rank " + std::to_string(Left()));
    right_ = std::move(*out);
    left_ = std::move(*in);
    return Status::Ok();
  }

  // Sends chunk `out` of `send_base` to the right while receiving chunk `in` into `into`
  // (both directions at once: each rank sends before it receives, so sequential blocking
  // writes would deadlock once a chunk outgrows the socket buffers).
  Status Exchange(const float* send_base, int out, float* into, int in) {
    auto [slo, shi] = Chunk(out);
    auto [rlo, rhi] = Chunk(in);
    const char* sp = reinterpret_cast<const char*>(send_base + slo);
    size_t sleft = (shi - slo) * sizeof(float);
    char* rp = reinterpret_cast<char*>(into);
    size_t rleft = (rhi - rlo) * sizeof(float);
    double progress = SteadySeconds();
    while (sleft > 0 || rleft > 0) {
      pollfd p[2] = {{right_.fd(), static_cast<short>(sleft > 0 ? POLLOUT : 0), 0},
                     {left_.fd(), static_cast<short>(rleft > 0 ? POLLIN : 0), 0}};
      if (poll(p, 2, 1000) < 0 && errno != EINTR)
        return Err(Who() + "poll: " + std::strerror(errno));
      bool moved = false;
      if (sleft > 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
        const ssize_t w = ::send(right_.fd(), sp, sleft, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
          return Err(Who() + "sending to rank " + std::to_string(Right()) + ": " +
                     std::strerror(errno) + " (it failed or was stopped)");
        if (w > 0) {
          sp += w;
          sleft -= static_cast<size_t>(w);
          moved = true;
        }
      }
      if (rleft > 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
        const ssize_t r = ::recv(left_.fd(), rp, rleft, 0);
        if (r == 0)
          return Err(Who() + "rank " + std::to_string(Left()) +
                     " closed the connection (it failed or was stopped)");
        if (r < 0 && errno != EAGAIN && errno != EINTR)
          return Err(Who() + "receiving from rank " + std::to_string(Left()) + ": " +
                     std::strerror(errno));
        if (r > 0) {
          rp += r;
          rleft -= static_cast<size_t>(r);
          moved = true;
        }
      }
      const double now = SteadySeconds();
      if (moved) progress = now;
      else if (now - progress > c_.io_timeout_s)
        return Err(Who() + "the allreduce moved no byte for " + std::to_string(c_.io_timeout_s) +
                   " s (a peer hung)");
    }
    return Status::Ok();
  }

  std::string Who() const { return "tcp allreduce, rank " + std::to_string(c_.rank) + ": "; }

  TcpCommConfig c_;
  Device* device_;
  size_t floats_;
  std::vector<float> scratch_;  // one received chunk (chunks differ by at most one float)
  Socket left_, right_;
};

}  // namespace

Result<std::unique_ptr<Communicator>> MakeTcpCommunicator(const TcpCommConfig& config,
                                                          Device* device, size_t floats) {
  if (config.world_size < 2) return Err("the tcp allreduce needs a world size of at least 2");
  if (config.rank < 0 || config.rank >= config.world_size)
    return Err("rank " + std::to_string(config.rank) + " is outside the world size " +
               std::to_string(config.world_size));
  if (floats < static_cast<size_t>(config.world_size))
    return Err("the gradient buffer is smaller than one float per rank");
  auto comm = std::make_unique<TcpCommunicator>(config, device, floats);
  if (Status s = comm->Connect(); !s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace codl::victim
