// rdma: network bandwidth hog over RDMA verbs. RC queue pairs (`connections`), each keeping up
// to `queue_depth` RDMA WRITEs (op=write, with immediate) or SENDs (op=send) of `block` bytes in
// flight from a registered buffer, paced per block by the shared closed-loop controller
// (RunPaced: the same Pacer and RateController as net and every other injector). Unit: payload
// bytes/s of completed work requests, all QPs together: at the sender, blocks the receiver's
// HCA acknowledged; at the receiver, blocks whose receive completion arrived.
//
// A separate injector, not a `transport` option of net, because availability is per injector:
// Unsupported() (what `--list`, the agent's capability report and the controller's placement
// act on) cannot depend on an option, and TCP runs on every host while RDMA needs a device. The
// option tables differ too (device/port/gid_index/queue_depth/op against role/peer/message_size).
//
// ranks=1 (the default, calibration, the smoke run): both ends in this process, QP i of a
// sending side connected to QP i of a receiving side through the device's own port (loopback in
// the HCA, or rxe/siw over the kernel). ranks=2: a pair across agents, wired like net's: rank 0
// opens its QPs and a TCP listener on bind:exchange_port, and publishes
// (HostServices::PublishRendezvous) its token, addresses and connection info (QPNs, PSNs, LID/GID,
// MTU, rkey and address of its buffer; rdma/rdma_wire.h); the agent of rank 1 relays that as --set
// endpoint=<hex>; rank 1 connects to the first address that answers with the token (the same
// handshake as net's, net_socket.h), sends its own connection info, and both move their QPs to
// RTR/RTS. The TCP connection stays open: its close tells each side that the other has gone. Data
// flows towards `receiver` (first = rank 0).
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/protocol.h"
#include "injectors/net/net_endpoint.h"
#include "injectors/net/net_socket.h"
#include "injectors/rdma/rdma_exchange.h"
#include "injectors/rdma/rdma_host.h"
#include "injectors/rdma/rdma_wire.h"
#include "lib/common/units.h"

#ifdef CODL_HAVE_RDMA
#include "injectors/rdma/verbs/rdma_link.h"
#include "injectors/rdma/verbs/verbs_loader.h"
#endif

namespace codl::injectors {
namespace {

std::string Resource() {
#ifdef CODL_HAVE_RDMA
  const rdma::Availability& a = rdma::HostAvailability();
  if (a.reason.empty())
    return "network bandwidth (RDMA verbs: " + rdma::DescribePorts(a.ports) + ")";
#endif
  return "network bandwidth (RDMA verbs)";
}

Result<rdma::Endpoint> EndpointOption(const OptionValues& o) {
  const std::string& hex = o.String("endpoint");
  auto bytes = protocol::RendezvousFetch::DecodeValue(hex);
  if (!bytes.ok()) return InvalidArgument("option 'endpoint': " + bytes.error());
  auto e = rdma::DecodeEndpoint(*bytes);
  if (!e.ok()) return InvalidArgument("option 'endpoint': " + e.error());
  return e;
}

class RdmaInjector final : public Injector {
 public:
  ~RdmaInjector() override { Release(); }

  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "rdma",
        Resource(),
        "bytes/s",
        "network hog over RDMA verbs: RC queue pairs streaming WRITEs or SENDs, in-host "
        "loopback or a pair across agents",
        "payload bytes per second of completed work requests, all QPs together: at the sender "
        "blocks the receiver's HCA acknowledged, at the receiver blocks whose receive "
        "completion arrived",
        {
            EnumOption("op", "write", {"write", "send"},
                       "write = RDMA WRITE with immediate into the receiver's registered buffer "
                       "(the immediate gives the receiver a completion to count); send = SEND "
                       "into posted receives"),
            SizeOption("block", "64KiB", 64, 64.0 * kMiB, "bytes per work request"),
            IntOption("queue_depth", "16", 1, 1024, "work requests in flight per QP (sender)"),
            IntOption("connections", "1", 1, 64, "RC queue pairs (one worker thread each)"),
            StringOption("device", "",
                         "RDMA device (ibv_devices / /sys/class/infiniband); \"\" = the first "
                         "with an active port"),
            IntOption("port", "0", 0, 255, "device port (1-based); 0 = its first active port"),
            IntOption("gid_index", "-1", -1, 255,
                      "GID table index; -1 = RoCE v2 (IPv4-mapped first) on Ethernet ports, "
                      "none (by LID) on InfiniBand"),
            IntOption("ranks", "1", 1, 65536,
                      "1 = loopback through this host's device; 2 = a pair across agents (the "
                      "controller sets this for an antagonist on two nodes)"),
            IntOption("rank", "0", 0, 65535, "ranks=2: 0 publishes its endpoint, 1 fetches it"),
            StringOption("rendezvous_key", "",
                         "ranks=2: name under which rank 0 publishes its endpoint"),
            EnumOption("receiver", "first", {"first", "second"},
                       "ranks=2: which node receives, in the controller's node order (agents "
                       "sorted by id); the other sends"),
            StringOption("endpoint", "",
                         "ranks=2, rank 1: value_hex of rank 0's rendezvous_publish line (the "
                         "agent fills it in)"),
            StringOption("bind", "127.0.0.1",
                         "ranks=2, rank 0: address of the TCP listener rank 1 sends its "
                         "connection info to (0.0.0.0 = all interfaces, each published)"),
            IntOption("exchange_port", "0", 0, 65535,
                      "ranks=2, rank 0: TCP port of that listener (0 = any)"),
            DurationOption("connect_timeout", "120s", 1, 3600,
                           "ranks=2: how long rank 0 waits for rank 1 to connect"),
        },
        Capabilities{.collective = true, .rendezvous_option = "endpoint"},
        {{"block", "64KiB"}},
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override {
#ifdef CODL_HAVE_RDMA
    if (const std::string& why = rdma::HostAvailability().reason; !why.empty()) return NotHere(why);
    return NotHereIf(rdma_loaders::Verbs().error);
#else
    return NotHere("built without RDMA support (install libibverbs-dev and rebuild)");
#endif
  }

  Status CheckOptions(const OptionValues& o) const override {
    if (Status s = CheckPairRanks("rdma", "an rdma antagonist", o); !s.ok()) return s;
    const int64_t ranks = o.Int("ranks");
    if (ranks == 1) return Status::Ok();
    if (o.Int("rank") == 0) {
      if (!o.String("rendezvous_key").empty()) return Status::Ok();
      return InvalidArgument(
          "rdma: rank 0 of 2 publishes its endpoint for rank 1: set rendezvous_key (the agent "
          "relays it; the controller sets it for an antagonist on two nodes)");
    }
    if (o.String("endpoint").empty()) {
      return InvalidArgument(
          "rdma: rank 1 of 2 needs endpoint: the value_hex of rank 0's rendezvous_publish "
          "line (the agent fetches it through the controller)");
    }
    auto e = EndpointOption(o);
    if (!e.ok()) return InvalidArgument(e.error());
    if (static_cast<int64_t>(e->info.qps.size()) != o.Int("connections")) {
      return InvalidArgument(
          "option 'endpoint': rank 0 opened " + std::to_string(e->info.qps.size()) +
          " queue pairs, option 'connections' is " + std::to_string(o.Int("connections")) +
          ": give both ranks the same options");
    }
    return Status::Ok();
  }

  Status Setup(const OptionValues& o, const HostInfo& host, HostServices& services,
               const StopToken& stop) override {
#ifdef CODL_HAVE_RDMA
    if (Status why = Unsupported(host); !why.ok()) return std::move(why).WithContext("rdma");
    shape_.write = o.String("op") == "write";
    shape_.block = o.Size("block");
    shape_.queue_depth = static_cast<int>(o.Int("queue_depth"));
    shape_.connections = static_cast<int>(o.Int("connections"));
    auto port = rdma::ChoosePort(rdma::HostAvailability().ports, o.String("device"),
                                 static_cast<int>(o.Int("port")));
    if (!port.ok()) return port.status();
    auto device =
        rdma::Device::Open(*port, static_cast<int>(o.Int("gid_index")), shape_.connections);
    if (!device.ok()) return device.status();
    device_ = std::move(*device);
    inflight_.assign(shape_.connections, 0);
    if (o.Int("ranks") == 2) return SetupPair(o, services, stop);
    return SetupLoopback();
#else
    return Err("rdma: " + Unsupported(host).message());
#endif
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
#ifdef CODL_HAVE_RDMA
    if (!side_) return Err("rdma: Run before Setup");
    PacedRunSpec spec;
    spec.workers = shape_.connections;
    auto worker = [this](WorkerContext& ctx) -> Status {
      return side_->receiver() ? Receive(ctx) : Send(ctx);
    };
    auto summary = RunPaced(spec, target, stop, reporter, worker);
    if (summary.ok()) summary->notes = notes_;
    return summary;
#else
    return Err("rdma: built without RDMA support");
#endif
  }

 private:
#ifdef CODL_HAVE_RDMA
  // ranks=1: a sending and a receiving side in this process, QP i to QP i.
  Status SetupLoopback() {
    auto sender = rdma::Side::Create(*device_, false, shape_);
    if (!sender.ok()) return sender.status();
    auto receiver = rdma::Side::Create(*device_, true, shape_);
    if (!receiver.ok()) return receiver.status();
    side_ = std::move(*sender);
    loop_ = std::move(*receiver);
    if (Status s = loop_->Connect(side_->Local()); !s.ok()) return s;
    if (Status s = side_->Connect(loop_->Local()); !s.ok()) return s;
    notes_ = {"loopback on " + device_->Describe()};
    return Status::Ok();
  }

  Status SetupPair(const OptionValues& o, HostServices& services, const StopToken& stop) {
    pair_ = true;
    const bool rank0 = o.Int("rank") == 0;
    const bool receives = rank0 == (o.String("receiver") == "first");
    auto side = rdma::Side::Create(*device_, receives, shape_);
    if (!side.ok()) return side.status();
    side_ = std::move(*side);
    Status s = rank0 ? AwaitRank1(o, services, stop) : JoinRank0(o);
    if (!s.ok()) return s;
    notes_ = {"pair: " + std::string(receives ? "receiving from " : "sending to ") + peer_ +
              " over " + device_->Describe()};
    return Status::Ok();
  }

  // Rank 0: publish, then take rank 1's half from the first connection with the token.
  Status AwaitRank1(const OptionValues& o, HostServices& services, const StopToken& stop) {
    int bound = 0;
    std::string why;
    listen_fd_ =
        ListenTcp(o.String("bind"), static_cast<int>(o.Int("exchange_port")), 4, &bound, &why);
    if (listen_fd_ < 0) return Err(why);
    const std::string token = NewNetToken();
    const rdma::Endpoint e{token, ReachableAddresses(o.String("bind"), bound), side_->Local()};
    if (Status s = services.PublishRendezvous(rdma::EncodeEndpoint(e)); !s.ok()) return s;
    auto fd = rdma::AcceptRank1(listen_fd_, token, o.Duration("connect_timeout"), stop,
                                [this](const rdma::ConnInfo& r) { return side_->Connect(r); });
    close(listen_fd_);
    listen_fd_ = -1;
    if (!fd.ok()) return fd.status();
    control_fd_ = *fd;
    peer_ = "rank 1";
    return Status::Ok();
  }

  // Rank 1: reach rank 0 at an address it published, send our half, connect to its half.
  Status JoinRank0(const OptionValues& o) {
    auto e = EndpointOption(o);
    if (!e.ok()) return e.status();
    std::string addr;
    auto fd = rdma::JoinRank0(
        *e, side_->Local(), [this](const rdma::ConnInfo& r) { return side_->Connect(r); }, &addr);
    if (!fd.ok()) return fd.status();
    control_fd_ = *fd;
    peer_ = "rank 0 at " + addr;
    return Status::Ok();
  }

  // Worker i of a sending side: keep queue_depth blocks in flight on QP i as the pacer allows.
  Status Send(WorkerContext& ctx) {
    const int i = ctx.index;
    int& inflight = inflight_[i];
    while (!ctx.stop.stop_requested()) {
      auto done = side_->Reap(i);
      if (!done.ok()) return Broken(done.error(), ctx.stop);
      inflight -= *done;
      ctx.Done(static_cast<uint64_t>(*done) * shape_.block);
      auto drained = Replenish(loop_.get(), i);
      if (!drained.ok()) return drained.status().WithContext("rdma: loopback receiver");
      double wait = 0.05;  // window full: until a completion
      bool posted = false;
      while (inflight < shape_.queue_depth) {
        if (const double w = ctx.pacer.TryAcquire(static_cast<double>(shape_.block)); w > 0) {
          wait = w;
          break;
        }
        if (Status s = side_->Post(i); !s.ok()) return s;
        ++inflight;
        posted = true;
      }
      if (*done > 0 || *drained > 0 || posted) continue;
      if (device_->Wait(i, wait, i == 0 ? control_fd_ : -1) && PeerClosed()) {
        return Broken("the peer closed the connection", ctx.stop);
      }
    }
    return Status::Ok();
  }

  // Worker i of a receiving side (a pair's receiver): count what arrives, repost receives.
  Status Receive(WorkerContext& ctx) {
    const int i = ctx.index;
    while (!ctx.stop.stop_requested()) {
      auto got = Replenish(side_.get(), i);
      if (!got.ok()) return Broken(got.error(), ctx.stop);
      ctx.Done(static_cast<uint64_t>(*got) * shape_.block);
      if (*got > 0) continue;
      if (device_->Wait(i, 0.05, i == 0 ? control_fd_ : -1) && PeerClosed()) {
        return Broken("the peer closed the connection", ctx.stop);
      }
    }
    return Status::Ok();
  }

  // A receiving side's completions on QP i, each receive posted again; 0 without a side.
  Result<int> Replenish(rdma::Side* side, int i) {
    if (side == nullptr) return 0;
    auto n = side->Reap(i);
    if (!n.ok()) return n;
    for (int k = 0; k < *n; ++k) {
      if (Status s = side->Post(i); !s.ok()) return s;
    }
    return n;
  }

  // The pair's TCP connection was closed (or broke): the peer process is gone.
  bool PeerClosed() const {
    char c;
    const ssize_t n = recv(control_fd_, &c, 1, MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

  // A failed completion or a closed control connection. In a pair the peer is stopped at the
  // same moment as this rank, by another agent, so a peer that goes away just before our own
  // stop arrives is the normal end of a trial: wait up to 2 s for it (as net does).
  Status Broken(const std::string& why, const StopToken& stop) {
    for (int i = 0; pair_ && i < 40 && !stop.stop_requested(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pair_ && stop.stop_requested()) return Status::Ok();
    return Err("rdma: " + (pair_ ? peer_ + ": " : "") + why);
  }

  rdma::FloodShape shape_;
  std::unique_ptr<rdma::Device> device_;
  std::unique_ptr<rdma::Side> side_;  // this process's end (loopback: the sender)
  std::unique_ptr<rdma::Side> loop_;  // loopback: the receiving end
  // Per QP, blocks posted and not yet completed. Kept across runs: a run ends with blocks still
  // in flight, whose completions the next run (calibration, then the levels) reaps.
  std::vector<int> inflight_;
#endif

  void Release() {
    if (control_fd_ >= 0) close(control_fd_);
    if (listen_fd_ >= 0) close(listen_fd_);
    control_fd_ = listen_fd_ = -1;
#ifdef CODL_HAVE_RDMA
    loop_.reset();  // QPs, CQs and MRs before the PD, channels and device
    side_.reset();
    device_.reset();
#endif
  }

  [[maybe_unused]] bool pair_ = false;  // read by the verbs code only (CODL_HAVE_RDMA)
  int listen_fd_ = -1, control_fd_ = -1;
  std::string peer_;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Injector> MakeRdmaInjector() { return std::make_unique<RdmaInjector>(); }

}  // namespace codl::injectors
