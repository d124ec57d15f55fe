// nccl: background collectives that load NVLink / the network, measured in nccl-tests' bus
// bandwidth (gpu_host.h: BusBwFactor) so a level means the same thing at any rank count.
//
// Ranks meet WITHOUT MPI. Rank 0 (ranks > 1, no unique_id given) calls ncclGetUniqueId and
// publishes it (HostServices::PublishRendezvous: a rendezvous_publish record of 128 bytes),
// which the agent relays through the controller; every other rank is started with
// --set unique_id=<256 hex chars>. Then all call ncclCommInitRankConfig in non-blocking mode, so
// Setup can time out (init_timeout) or be stopped instead of hanging on a rank that never comes.
//
// Stopping several ranks: every rank must issue the same sequence of collectives or the last
// ones never complete. So ranks > 1 vote: after every `vote_every` collectives each rank casts
// a 1-byte allreduce(max) of "I want to stop"; the result of vote k is read after segment k+1
// has been issued, and if anyone voted to stop, all ranks end right there. Every rank thus
// issues exactly the same collectives, the pipeline never drains for a vote, and a stop takes
// at most 2 × vote_every collectives. A peer that died is detected (no agreement within the
// stop grace, nccl_host.h: NcclStopGraceS, which allows for the peers' pacing and duty cycle)
// and the communicator is aborted rather than hanging. The same grace bounds the drain of the
// last agreed collectives: a fixed 2 s there aborted healthy communicators whenever a peer was
// in a long off-window.
//
// Duty cycle: windows are phased on Unix time (duty_window.h), so all ranks are on or off
// together, and only collectives expected to end inside the window are issued.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/protocol.h"
#include "injectors/gpu/duty_window.h"
#include "injectors/gpu/gpu_host.h"
#include "injectors/gpu/gpu_probe.h"
#include "injectors/gpu/nccl_host.h"
#include "lib/common/units.h"

#if defined(CODL_HAVE_CUDA) && defined(CODL_HAVE_NCCL)
#define CODL_NCCL_ENABLED 1
#include <nccl.h>
#include <sys/stat.h>

#include "injectors/gpu/cuda_common.h"
#include "lib/gpu/nccl_loader.h"
static_assert(sizeof(ncclUniqueId) == codl::injectors::gpu::kNcclUniqueIdBytes);
#endif

namespace codl::injectors {
namespace {

using gpu::NcclOp;
#ifdef CODL_NCCL_ENABLED
using gpu_loaders::Nccl;
#endif

class NcclInjector final : public Injector {
 public:
  ~NcclInjector() override { Release(); }

  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "nccl",
        "NVLink / network bandwidth",
        "busbw bytes/s",
        "background NCCL collectives (allreduce, allgather, reducescatter, alltoall, broadcast)",
        "bus bytes/s as nccl-tests reports them: busbw = algbw x factor, factors " +
            gpu::BusBwFactorHelp() + "; algbw = size / time (telemetry 'algbw')",
        {
            EnumOption("op", "allreduce", gpu::NcclOpNames(), "collective (float32, sum)"),
            SizeOption("size", "64MiB", 4, 16.0 * (1ull << 30),
                       "bytes per collective, nccl-tests' size (allgather: total output; "
                       "reducescatter: total input; alltoall: per-rank send buffer)"),
            IntOption("ranks", "1", 1, 65536, "ranks in the communicator (1: local, no peers)"),
            IntOption("rank", "0", 0, 65535, "this process's rank, 0 .. ranks-1"),
            StringOption("rendezvous_key", "",
                         "name under which rank 0 publishes the id (rendezvous_publish line)"),
            StringOption("unique_id", "",
                         "rank 0's ncclUniqueId as 256 hex characters (required for rank > 0)"),
            IntOption("device", "-1", -1, 1023, "CUDA device; -1 = rank mod visible devices"),
            DoubleOption("duty", "1", 0.01, 1, "fraction of each period in which to issue"),
            DurationOption("period", "100ms", 0.001, 10, "duty-cycle period"),
            IntOption("depth", "2", 1, 8,
                      "collectives in flight, at least (more while they are short)"),
            IntOption("vote_every", "4", 1, 1024,
                      "collectives between stop votes (ranks > 1; same on every rank)"),
            DurationOption("init_timeout", "120s", 1, 3600,
                           "how long to wait for all ranks to join"),
            IntOption("min_ctas", "0", 0, 64,
                      "ncclConfig_t minCTAs: fewest thread blocks (SMs) per collective; 0 = "
                      "NCCL's default"),
            IntOption("max_ctas", "0", 0, 64,
                      "ncclConfig_t maxCTAs: most thread blocks (SMs) per collective, so the "
                      "interconnect antagonist leaves the SMs to the victim; 0 = NCCL's default"),
        },
        Capabilities{.collective = true, .rendezvous_option = "unique_id", .needs_gpu = true},
        {{"size", "1MiB"}},  // ranks=1: a local communicator, no peers
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override {
#ifdef CODL_NCCL_ENABLED
    CODL_RETURN_IF_ERROR(gpu::CudaUsable());
    return NotHereIf(Nccl().error);
#else
    const Status cuda = gpu::CudaUsable();
    return NotHere(cuda.message() == "built without CUDA" ? cuda.message() : "built without NCCL");
#endif
  }

  Status CheckOptions(const OptionValues& o) const override {
    const int64_t ranks = o.Int("ranks"), rank = o.Int("rank");
    if (rank >= ranks) {
      return InvalidArgument("option 'rank': " + std::to_string(rank) +
                             " must be less than ranks (" + std::to_string(ranks) + ")");
    }
    const std::string& id = o.String("unique_id");
    if (!id.empty()) {
      auto bytes = protocol::RendezvousFetch::DecodeValue(id, gpu::kNcclUniqueIdBytes);
      if (!bytes.ok()) return InvalidArgument("option 'unique_id': " + bytes.error());
    }
    const std::string of = " of " + std::to_string(ranks);
    if (ranks > 1 && rank > 0 && id.empty()) {
      return InvalidArgument(
          "nccl: rank " + std::to_string(rank) + of +
          " needs unique_id: the value_hex of rank 0's rendezvous_publish line (the agent "
          "relays it as --set unique_id=<hex>)");
    }
    if (ranks > 1 && rank == 0 && id.empty() && o.String("rendezvous_key").empty()) {
      return InvalidArgument(
          "nccl: rank 0" + of +
          " publishes the ncclUniqueId for the other ranks: set rendezvous_key (the name the "
          "agent relays it under) or pass unique_id");
    }
    if (Status c = gpu::CheckNcclCtas(o.Int("min_ctas"), o.Int("max_ctas")); !c.ok()) return c;
    auto op = gpu::ParseNcclOp(o.String("op"));
    if (!op.ok()) return InvalidArgument(op.error());
    auto shape = gpu::NcclShapeFor(*op, o.Size("size"), static_cast<int>(ranks), sizeof(float));
    return shape.ok() ? Status::Ok() : InvalidArgument(shape.error());
  }

  using Injector::ToInjectorUnit;  // keep the (rate, options) overload visible
  Result<double> ToInjectorUnit(const Rate& rate) const override {
    if (rate.unit == RateUnit::kBytesPerSecond) return rate.value;  // bus bytes/s
    return Err("injector 'nccl' measures busbw bytes/s; an IOPS rate does not apply");
  }

  Status Setup(const OptionValues& o, const HostInfo& host, HostServices& services,
               const StopToken& stop) override {
#ifdef CODL_NCCL_ENABLED
    if (!Nccl().error.empty()) return Err("nccl: " + Nccl().error);
    op_ = *gpu::ParseNcclOp(o.String("op"));
    ranks_ = static_cast<int>(o.Int("ranks"));
    rank_ = static_cast<int>(o.Int("rank"));
    key_ = o.String("rendezvous_key");
    duty_ = o.Double("duty");
    period_s_ = o.Duration("period");
    depth_ = static_cast<int>(o.Int("depth"));
    vote_every_ = static_cast<int>(o.Int("vote_every"));
    shape_ = *gpu::NcclShapeFor(op_, o.Size("size"), ranks_, sizeof(float));
    bus_units_ = static_cast<uint64_t>(
        static_cast<double>(shape_.alg_bytes) * gpu::BusBwFactor(op_, ranks_) + 0.5);

    gpu::MarkCudaUsedHere();
    int count = 0;
    CODL_CUDA_RETURN(cudaGetDeviceCount(&count));
    const int64_t want = o.Int("device");
    device_ = want < 0 ? rank_ % count : static_cast<int>(want);
    if (device_ >= count) {
      return Err("option 'device': " + std::to_string(device_) + " but only " +
                 std::to_string(count) + " CUDA device(s) are visible");
    }
    CODL_CUDA_RETURN(cudaSetDevice(device_));
    // A victim may hold most of the HBM: fail here with the numbers, not in NCCL's init.
    size_t free_before = 0, total = 0;
    CODL_CUDA_RETURN(cudaMemGetInfo(&free_before, &total));
    const uint64_t buffers = (shape_.send_count + shape_.recv_count) * sizeof(float);
    if (Status m = gpu::CheckNcclMemory(free_before, buffers, device_); !m.ok()) return m;
    CODL_CUDA_RETURN(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CODL_CUDA_RETURN(cudaEventCreateWithFlags(&vote_event_, cudaEventDisableTiming));
    CODL_CUDA_RETURN(cudaMalloc(&send_, shape_.send_count * sizeof(float)));
    CODL_CUDA_RETURN(cudaMalloc(&recv_, shape_.recv_count * sizeof(float)));
    CODL_CUDA_RETURN(cudaMemset(send_, 0, shape_.send_count * sizeof(float)));  // sums stay 0
    CODL_CUDA_RETURN(cudaMemset(recv_, 0, shape_.recv_count * sizeof(float)));
    CODL_CUDA_RETURN(cudaMalloc(&vote_dev_, 2));
    CODL_CUDA_RETURN(cudaHostAlloc(&vote_host_, 1, cudaHostAllocDefault));

    RouteNcclDebug(host, services);
    ncclUniqueId id;
    const std::string& hex = o.String("unique_id");
    if (!hex.empty()) {
      auto bytes = protocol::RendezvousFetch::DecodeValue(hex, sizeof id);
      if (!bytes.ok()) return InvalidArgument("option 'unique_id': " + bytes.error());
      std::memcpy(&id, bytes->data(), sizeof id);
    } else {
      if (ncclResult_t r = Nccl().GetUniqueId(&id); r != ncclSuccess)
        return NcclErr("ncclGetUniqueId", r);
      if (ranks_ > 1) {  // rank 0: the agent relays this to the other ranks
        Status s = services.PublishRendezvous(
            std::string_view(reinterpret_cast<const char*>(&id), sizeof id));
        if (!s.ok()) return s;
      }
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so the wait for peers below can time out and be stopped
    if (o.Int("min_ctas") > 0) config.minCTAs = static_cast<int>(o.Int("min_ctas"));
    if (o.Int("max_ctas") > 0) config.maxCTAs = static_cast<int>(o.Int("max_ctas"));
    size_t free_buffers = 0;
    CODL_CUDA_RETURN(cudaMemGetInfo(&free_buffers, &total));
    const ncclResult_t r = Nccl().CommInitRankConfig(&comm_, ranks_, id, rank_, &config);
    const double timeout = o.Duration("init_timeout");
    if (Status s = Await(r, "ncclCommInitRankConfig", MonotonicSeconds() + timeout, stop, 0);
        !s.ok()) {
      if (s.code() != StatusCode::kDeadlineExceeded) return s;
      return Err(gpu::NcclInitTimeoutMessage(rank_, ranks_, FormatDuration(timeout), key_));
    }
    size_t free_after = 0;
    CODL_CUDA_RETURN(cudaMemGetInfo(&free_after, &total));
    memory_note_ = "device " + std::to_string(device_) +
                   " memory free: " + FormatSize(static_cast<double>(free_before)) +
                   " before setup, " + FormatSize(static_cast<double>(free_buffers)) +
                   " with the buffers, " + FormatSize(static_cast<double>(free_after)) +
                   " after ncclCommInitRank (" +
                   FormatSize(static_cast<double>(free_buffers) - static_cast<double>(free_after)) +
                   " for the communicator)";
    return Status::Ok();
#else
    return Err("nccl: " + Unsupported(HostInfo{}).message());
#endif
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
#ifdef CODL_NCCL_ENABLED
    if (comm_ == nullptr) {
      return Err(aborted_.empty()
                     ? "nccl: Run before Setup"
                     : "nccl: the communicator was aborted earlier (" + aborted_ + ")");
    }
    PacedRunSpec spec;
    spec.workers = 1;  // one communicator, one stream: NCCL serializes on it anyway
    spec.ops_name = "algbw";
    // The collectives in flight plus the one completing (rate_controller.h).
    spec.controller.min_deficit_units = static_cast<double>(bus_units_) * (depth_ + 1);
    auto summary =
        RunPaced(spec, target, stop, reporter, [this](WorkerContext& ctx) { return Loop(ctx); });
    if (summary.ok() && !memory_note_.empty()) summary->notes.push_back(memory_note_);
    return summary;
#else
    return Err("nccl: " + Unsupported(HostInfo{}).message());
#endif
  }

 private:
#ifdef CODL_NCCL_ENABLED
  Status NcclErr(const std::string& what, ncclResult_t r) const {
    std::string detail = Nccl().GetLastError(comm_);  // comm_ may be null: the global error
    return Err("nccl: " + what + ": " + Nccl().GetErrorString(r) +
               (detail.empty() ? "" : " (" + detail + ")"));
  }

  void Abort(const std::string& why) {
    if (comm_ != nullptr) Nccl().CommAbort(comm_);
    comm_ = nullptr;
    aborted_ = why;
  }

  // NCCL_DEBUG output must not reach stdout (the agent's JSON lines) nor truncate a stderr
  // redirected to a file (nccl_host.h: NcclDebugFile). An explicit NCCL_DEBUG_FILE wins.
  static void RouteNcclDebug(const HostInfo& host, HostServices& services) {
    if (std::getenv("NCCL_DEBUG") == nullptr || std::getenv("NCCL_DEBUG_FILE") != nullptr) return;
    struct stat st {};
    const bool regular = fstat(2, &st) == 0 && S_ISREG(st.st_mode);
    const std::string dir = host.scratch_roots.empty() ? "" : host.scratch_roots.front();
    const std::string file = gpu::NcclDebugFile(regular, dir);
    setenv("NCCL_DEBUG_FILE", file.c_str(), 0);
    if (regular) services.Note("NCCL_DEBUG output goes to " + file);
  }

  // Non-blocking NCCL: a call may return ncclInProgress; poll until it settles. After a stop,
  // peers get `stop_grace_s` to make progress before the communicator is aborted.
  Status Await(ncclResult_t r, const std::string& what, double deadline, const StopToken& stop,
               double stop_grace_s) {
    if (r != ncclSuccess && r != ncclInProgress) {
      Status s = NcclErr(what, r);
      Abort(what + " failed");
      return s;
    }
    double stop_seen = -1;
    while (comm_ != nullptr) {
      ncclResult_t state = ncclSuccess;
      Nccl().CommGetAsyncError(comm_, &state);
      if (state == ncclSuccess) return Status::Ok();
      if (state != ncclInProgress) {
        Status s = NcclErr(what, state);
        Abort(what + " failed");
        return s;
      }
      const double now = MonotonicSeconds();
      if (stop.stop_requested() && stop_seen < 0) stop_seen = now;
      if (now > deadline || (stop_seen >= 0 && now - stop_seen >= stop_grace_s)) {
        const bool timed_out = now > deadline;
        Abort(what + (timed_out ? " timed out" : " interrupted by a stop"));
        if (timed_out) return DeadlineExceeded("nccl: " + what + " timed out");
        return Cancelled("nccl: " + what + " stopped while waiting for peers");
      }
      gpu::PollSleep(1e-3, StopToken());
    }
    return Err("nccl: communicator aborted");
  }

  Status Issue(const StopToken& stop, double grace_s) {
    const double deadline = MonotonicSeconds() + 3600;  // first call may connect to peers
    const size_t chunk = shape_.chunk_count;
    ncclResult_t r = ncclSuccess;
    switch (op_) {
      case NcclOp::kAllReduce:
        r = Nccl().AllReduce(send_, recv_, shape_.send_count, ncclFloat, ncclSum, comm_, stream_);
        break;
      case NcclOp::kAllGather:
        r = Nccl().AllGather(send_, recv_, shape_.send_count, ncclFloat, comm_, stream_);
        break;
      case NcclOp::kReduceScatter:
        r = Nccl().ReduceScatter(send_, recv_, shape_.recv_count, ncclFloat, ncclSum, comm_,
                                 stream_);
        break;
      case NcclOp::kBroadcast:
        r = Nccl().Broadcast(send_, recv_, shape_.send_count, ncclFloat, 0, comm_, stream_);
        break;
      case NcclOp::kAllToAll: {  // grouped point-to-point, as nccl-tests' alltoall does
        Nccl().GroupStart();
        for (int peer = 0; peer < ranks_ && r == ncclSuccess; ++peer) {
          r = Nccl().Send(send_ + peer * chunk, chunk, ncclFloat, peer, comm_, stream_);
          if (r == ncclSuccess)
            r = Nccl().Recv(recv_ + peer * chunk, chunk, ncclFloat, peer, comm_, stream_);
        }
        const ncclResult_t end = Nccl().GroupEnd();
        if (r == ncclSuccess) r = end;
        break;
      }
    }
    return Await(r, gpu::NcclOpName(op_), deadline, stop, grace_s);
  }

  // Casts this rank's stop vote (1 = stop) as the next operation on the stream.
  Status CastVote(bool want_stop, const StopToken& stop, double grace_s) {
    CODL_CUDA_RETURN(cudaMemsetAsync(vote_dev_, want_stop ? 1 : 0, 1, stream_));
    ncclResult_t r =
        Nccl().AllReduce(vote_dev_, vote_dev_ + 1, 1, ncclUint8, ncclMax, comm_, stream_);
    if (Status s = Await(r, "stop vote", MonotonicSeconds() + 3600, stop, grace_s); !s.ok())
      return s;
    CODL_CUDA_RETURN(
        cudaMemcpyAsync(vote_host_, vote_dev_ + 1, 1, cudaMemcpyDeviceToHost, stream_));
    CODL_CUDA_RETURN(cudaEventRecord(vote_event_, stream_));
    return Status::Ok();
  }

  // What one worker loop (Loop) carries between its steps.
  struct LoopState {
    gpu::InFlightWindow window;
    int depth = 2;  // collectives to keep in flight now
    int max_depth = 2;
    double op_s = 0;  // smoothed GPU time per collective
    double pace_units = 0;
    double next_health = 0;
    double stop_seen = -1;  // when this rank first saw its stop request
    double grace = gpu::kNcclStopFloorS;
    int in_segment = 0;  // collectives issued since the last vote
    bool vote_pending = false;
  };
  enum class Step{kIssue, kWait, kEnd};

  Status Loop(WorkerContext& ctx) {
    CODL_CUDA_RETURN(cudaSetDevice(device_));
    LoopState st;
    if (Status s = InitLoop(&st); !s.ok()) return s;
    gpu::DutyWindow duty(gpu::DutyCycle(duty_, period_s_), *::codl::SystemClock::Get());
    st.pace_units = static_cast<double>(bus_units_) * duty.duty().pacing_scale();
    while (true) {
      if (Status s = HarvestDone(ctx, &st); !s.ok()) return s;
      if (st.window.empty()) duty.Idle();
      const double now = MonotonicSeconds();
      if (Status s = CheckHealth(now, &st); !s.ok()) return s;
      if (Status w = gpu::CheckDutyWindow(duty.duty(), st.op_s); !w.ok())
        return std::move(w).WithContext("nccl");
      const bool stopping = ctx.stop.stop_requested();
      if (!stopping) st.grace = StopGrace(ctx, st);
      if (stopping && st.stop_seen < 0) st.stop_seen = now;
      auto step = ranks_ == 1 ? Result<Step>(stopping ? Step::kEnd : Step::kIssue)
                              : VoteStep(now, stopping, ctx, &st);
      if (!step.ok()) return step.status();
      if (*step == Step::kEnd) break;
      if (*step == Step::kWait) continue;
      if (st.window.size() >= st.depth) {
        gpu::PollSleep(gpu::kPollS, StopToken());
        continue;
      }
      // A stopping rank runs unpaced to the agreed end of the segment.
      if (!stopping && WaitForPace(duty, ctx, st)) continue;
      if (Status s = IssueCounted(ctx, &st); !s.ok()) return s;
      duty.Issued(st.op_s);
    }
    return DrainLast(ctx, &st);
  }

  // As in RunPacedStream: a deeper queue while collectives are shorter than the polling
  // (1-rank or NVLink allreduces of a few MiB take tens of µs).
  Status InitLoop(LoopState* st) {
    st->max_depth = std::max(depth_, gpu::kMaxAutoDepth);
    st->depth = depth_;
    st->next_health = MonotonicSeconds() + 0.1;
    return st->window.Init(st->max_depth, /*timing=*/true);
  }

  // Credits completed collectives and retunes the queue depth from their GPU time.
  Status HarvestDone(WorkerContext& ctx, LoopState* st) {
    double busy = 0;
    auto h = st->window.Harvest(&ctx, &busy);
    if (!h.ok()) return h.status();
    if (*h > 0 && busy > 0) {
      st->op_s = st->op_s == 0 ? busy / *h : 0.8 * st->op_s + 0.2 * busy / *h;
      st->depth = static_cast<int>(std::clamp(std::ceil(gpu::kQueuedWorkS / st->op_s) + 1,
                                              static_cast<double>(depth_),
                                              static_cast<double>(st->max_depth)));
    }
    return Status::Ok();
  }

  // A peer's failure surfaces as the communicator's asynchronous error, not as an error return.
  Status CheckHealth(double now, LoopState* st) {
    if (now < st->next_health) return Status::Ok();
    st->next_health = now + 0.1;
    ncclResult_t state = ncclSuccess;
    Nccl().CommGetAsyncError(comm_, &state);
    if (state == ncclSuccess || state == ncclInProgress) return Status::Ok();
    Status s = NcclErr("asynchronous error", state);
    Abort("asynchronous error");
    return s;
  }

  // Peers keep their own pace until they see the vote; frozen at the stop (the pacer's rate
  // may be zeroed then) and used for every wait from there to the end of the drain.
  double StopGrace(WorkerContext& ctx, const LoopState& st) const {
    const double rate = ctx.pacer.rate();
    const double paced_s = rate > 0 && std::isfinite(rate) ? st.pace_units / rate : 0;
    return gpu::NcclStopGraceS(vote_every_, std::max(paced_s, st.op_s),
                               gpu::DutyCycle(duty_, period_s_));
  }

  // Ranks > 1: every vote_every collectives, read the previous vote (ending if anyone voted to
  // stop) and cast this rank's next one.
  Result<Step> VoteStep(double now, bool stopping, WorkerContext& ctx, LoopState* st) {
    if (st->stop_seen >= 0 && now - st->stop_seen > st->grace) {
      Abort("peers did not agree to stop");
      return Err("nccl: the other ranks did not reach the stop vote within " +
                 FormatDuration(st->grace) +
                 " of the stop (a rank died, or ranks run different phases); communicator "
                 "aborted");
    }
    if (st->in_segment < vote_every_) return Step::kIssue;
    if (st->vote_pending) {  // vote k is read once segment k+1 has been issued
      const cudaError_t q = cudaEventQuery(vote_event_);
      if (q == cudaErrorNotReady) {
        gpu::PollSleep(gpu::kPollS, StopToken());
        return Step::kWait;
      }
      if (q != cudaSuccess) return Err(gpu::CudaErrorText("stop vote", q));
      st->vote_pending = false;
      if (*vote_host_ != 0) return Step::kEnd;  // someone voted to stop: everyone ends here
    }
    if (Status s = CastVote(stopping, ctx.stop, st->grace); !s.ok()) return s;
    st->vote_pending = true;
    st->in_segment = 0;
    return Step::kWait;
  }

  // True (after a short sleep) when the next collective does not fit in the duty window or the
  // pacer grants nothing yet.
  bool WaitForPace(const gpu::DutyWindow& duty, WorkerContext& ctx, const LoopState& st) {
    double wait = duty.WaitFor(st.op_s);
    if (wait == 0) wait = ctx.pacer.TryAcquire(st.pace_units);
    if (wait <= 0) return false;
    gpu::PollSleep(st.window.empty() ? std::min(wait, 0.005) : std::min(wait, gpu::kPollS),
                   StopToken());
    return true;
  }

  Status IssueCounted(WorkerContext& ctx, LoopState* st) {
    if (Status s = st->window.Begin(stream_); !s.ok()) return s;
    if (Status s = Issue(ctx.stop, st->grace); !s.ok()) return s;
    if (Status s = st->window.End(stream_, bus_units_, shape_.alg_bytes); !s.ok()) return s;
    ++st->in_segment;
    return Status::Ok();
  }

  // Lets the agreed collectives finish so the next phase starts on a quiet communicator. Peers
  // still issue their part of them at their own pace and duty cycle: wait the stop grace.
  Status DrainLast(WorkerContext& ctx, LoopState* st) {
    const double deadline = MonotonicSeconds() + st->grace;
    while (!st->window.empty()) {
      if (Status s = HarvestDone(ctx, st); !s.ok()) return s;
      if (MonotonicSeconds() > deadline) {
        Abort("last collectives did not complete");
        return Err("nccl: the last collectives did not complete within " +
                   FormatDuration(st->grace) + " of the stop; communicator aborted");
      }
      gpu::PollSleep(gpu::kPollS, StopToken());
    }
    return Status::Ok();
  }

  void Release() {
    if (stream_ == nullptr && comm_ == nullptr) return;
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      // Finalize flushes NCCL's proxy work (network sends) that peers may still be waiting on;
      // abort only if it cannot finish.
      const double deadline = MonotonicSeconds() + 10;
      while (cudaStreamQuery(stream_) == cudaErrorNotReady && MonotonicSeconds() < deadline) {
        gpu::PollSleep(1e-3, StopToken());
      }
      if (Await(Nccl().CommFinalize(comm_), "ncclCommFinalize", deadline, StopToken(),
                gpu::kNcclStopCapS)
              .ok()) {
        Nccl().CommDestroy(comm_);
      } else if (comm_ != nullptr) {
        Nccl().CommAbort(comm_);
      }
      comm_ = nullptr;
    }
    for (void* p :
         {static_cast<void*>(send_), static_cast<void*>(recv_), static_cast<void*>(vote_dev_)}) {
      if (p != nullptr) cudaFree(p);
    }
    if (vote_host_ != nullptr) cudaFreeHost(vote_host_);
    if (vote_event_ != nullptr) cudaEventDestroy(vote_event_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  NcclOp op_ = NcclOp::kAllReduce;
  gpu::NcclShape shape_;
  uint64_t bus_units_ = 0;  // bus bytes credited per completed collective
  int ranks_ = 1, rank_ = 0, device_ = 0, depth_ = 2, vote_every_ = 4;
  double duty_ = 1, period_s_ = 0.1;
  std::string key_, aborted_, memory_note_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t vote_event_ = nullptr;
  float* send_ = nullptr;
  float* recv_ = nullptr;
  uint8_t* vote_dev_ = nullptr;   // [0] my vote, [1] the reduced vote
  uint8_t* vote_host_ = nullptr;  // pinned copy of the reduced vote
#else
  void Release() {}
#endif
};

}  // namespace

std::unique_ptr<Injector> MakeNcclInjector() { return std::make_unique<NcclInjector>(); }

}  // namespace codl::injectors
