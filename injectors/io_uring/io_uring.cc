// io_uring: storage flood. One thread keeps up to queue_depth O_DIRECT reads/writes in flight
// against a private file set, paced by the shared closed-loop controller.
//
// Unit: bytes/s of *completed* I/O (reads + writes); IOPS is reported alongside ("iops").
// Safety: files are created only inside this run's own directory, DIR/codl-inject.<pid>.<start>/,
// where DIR must resolve under a scratch root (scratch.h); a block device is never opened.
// Kernel features are probed and degraded gracefully, fio-style: ring flags
// (SINGLE_ISSUER|DEFER_TASKRUN, SQPOLL), registered buffers and registered files each fall back
// to the plain variant with a note in the summary.
//
// This file: the descriptor and option checks, the ring (creation, the submit/reap loop) and
// the registration (MakeIoUringInjector). Setup (scratch directory, buffers, the file set) is
// in io_uring_setup.cc; the class, shared by both, in io_uring_injector.h.
#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#ifdef CODL_HAVE_URING
#include <liburing.h>
#endif

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/start_wait.h"
#include "injectors/io_uring/io_uring_injector.h"
#include "lib/common/units.h"

namespace codl::injectors::io_uring_internal {
namespace {

constexpr double kMaxBufferBytes = 1024.0 * kMiB;  // queue_depth × block_size cap

}  // namespace

const Descriptor& IoUringInjector::descriptor() const {
  static const Descriptor d{
      "io_uring",
      "storage bandwidth / IOPS",
      "bytes/s",
      "storage flood: O_DIRECT reads/writes through io_uring on a private file set",
      "bytes of completed I/O per second (reads + writes); IOPS reported alongside. "
      "--rate accepts IOPS too (converted with block_size)",
      {
          StringOption("dir", "",
                       "directory for the file set (default: first scratch root); must resolve "
                       "under a scratch root"),
          EnumOption("mode", "randread", {"read", "write", "randread", "randwrite", "rw", "randrw"},
                     "access pattern; rw/randrw mix reads and writes (see rwmix_read)"),
          IntOption("rwmix_read", "50", 0, 100, "percent of reads in rw/randrw", "%"),
          SizeOption("block_size", "1MiB", 512, 64.0 * kMiB, "bytes per I/O"),
          IntOption("queue_depth", "32", 1, 4096, "I/Os kept in flight"),
          IntOption("complete_batch", "0", 0, 4096,
                    "completions to wait for per wake-up when not paced (0 = queue_depth/4); "
                    "fewer wake-ups per I/O, like fio's iodepth_batch_complete_min"),
          IntOption("submit_batch", "1", 0, 4096,
                    "I/Os per submit call: 1 submits each I/O as soon as it is ready, as fio "
                    "does (iodepth_batch_submit=1); 0 = all ready I/Os in one call. Linux holds "
                    "a submission of 3 or more I/Os back (block plug) and passes them on "
                    "together, which made 4 KiB random I/O slower on a virtual disk"),
          IntOption("nr_files", "4", 1, 1024, "files in the set"),
          SizeOption("file_size", "256MiB", 1.0 * kMiB, 16.0 * 1024 * 1024 * kMiB,
                     "size of each file (preallocated, then filled unless prefill=false)"),
          BoolOption("prefill", "true",
                     "write the whole file set before the run, as fio lays out its files; "
                     "false (write modes only) leaves unwritten extents, whose first write "
                     "also converts the extent"),
          BoolOption("direct", "true", "O_DIRECT (bypass the page cache)"),
          BoolOption("registered_buffers", "true",
                     "register I/O buffers with the ring (falls back if refused)"),
          BoolOption("registered_files", "true", "register files with the ring (falls back)"),
          BoolOption("huge_buffers", "true",
                     "back I/O buffers of >= 2 MiB with transparent huge pages, so a large "
                     "block reaches the device as one request (not split at its segment "
                     "limit)"),
          BoolOption("sqpoll", "false", "kernel submission thread (falls back if refused)"),
      },
      Capabilities{.writes_scratch = true},
      // Buffered: O_DIRECT is refused by tmpfs, which may be the only scratch root.
      {{"file_size", "8MiB"}, {"nr_files", "2"}, {"block_size", "64KiB"}, {"direct", "false"}},
  };
  return d;
}

Status IoUringInjector::Unsupported(const HostInfo&) const {
#ifndef CODL_HAVE_URING
  return NotHere("built without liburing (install liburing-dev and rebuild)");
#else
  io_uring ring;
  const int ret = io_uring_queue_init(4, &ring, 0);
  if (ret < 0) {
    return NotHere("io_uring_setup failed: " + Errno(-ret) +
                   " (kernel without io_uring, kernel.io_uring_disabled, or a seccomp filter)");
  }
  io_uring_queue_exit(&ring);
  return Status::Ok();
#endif
}

Result<double> IoUringInjector::ToInjectorUnit(const Rate& rate, const OptionValues& o) const {
  if (rate.unit == RateUnit::kOpsPerSecond)
    return rate.value * static_cast<double>(o.Size("block_size"));
  return rate.value;
}

Status IoUringInjector::CheckOptions(const OptionValues& o) const {
  const uint64_t bs = o.Size("block_size");
  if (o.Size("file_size") < bs) {
    return InvalidArgument("option 'file_size' (" + o.Text("file_size") +
                           ") must be at least 'block_size' (" + o.Text("block_size") + ")");
  }
  if (o.Bool("direct") && bs % 512 != 0) {
    return InvalidArgument("option 'block_size': " + o.Text("block_size") +
                           " must be a multiple of 512 with direct=true (O_DIRECT)");
  }
  if (!o.Bool("prefill") && ModeReads(o.String("mode"))) {
    return InvalidArgument(
        "option 'prefill': false is only for write and randwrite (reading an unwritten "
        "extent returns zeros without touching the device)");
  }
  if (o.Int("submit_batch") > o.Int("queue_depth")) {
    return InvalidArgument("option 'submit_batch' (" + o.Text("submit_batch") +
                           ") must not exceed 'queue_depth' (" + o.Text("queue_depth") + ")");
  }
  if (o.Int("complete_batch") > o.Int("queue_depth")) {
    return InvalidArgument("option 'complete_batch' (" + o.Text("complete_batch") +
                           ") must not exceed 'queue_depth' (" + o.Text("queue_depth") + ")");
  }
  const double buffers = static_cast<double>(bs) * static_cast<double>(o.Int("queue_depth"));
  if (buffers > kMaxBufferBytes) {
    return InvalidArgument("options 'queue_depth' x 'block_size' = " + o.Text("queue_depth") +
                           " x " + o.Text("block_size") + " needs " + FormatSize(buffers) +
                           " of I/O buffers; at most 1GiB");
  }
  return Status::Ok();
}

#ifdef CODL_HAVE_URING
struct IoUringInjector::Ring {
  io_uring ring{};
  bool ready = false, fixed_bufs = false, fixed_files = false;
  bool disabled =
      false;  // IORING_SETUP_R_DISABLED: enabled (IORING_REGISTER_ENABLE_RINGS) before use
  ~Ring() {
    if (ready) io_uring_queue_exit(&ring);
  }
};
#else
struct IoUringInjector::Ring {};
#endif

IoUringInjector::~IoUringInjector() {
  prepared_.reset();  // the ring before the files it registered
  for (int fd : fds_) close(fd);
  run_dir_.Remove();
}

// A synchronized start: the ring is made now, not after the common start. SINGLE_ISSUER ties
// a ring to the thread that creates it, and Run()'s worker is another thread: the ring is
// created disabled and the worker enables it (which makes it the issuer). A kernel that refuses
// disabled rings (before 5.10) gets its ring in Run() as before.
Status IoUringInjector::PrepareStart() {
#ifdef CODL_HAVE_URING
  auto ring = std::make_unique<Ring>();
  if (CreateRing(ring.get(), /*disabled=*/true).ok()) prepared_ = std::move(ring);
#endif
  return Status::Ok();
}

Result<RunSummary> IoUringInjector::Run(const Target& target, const StopToken& stop,
                                        Reporter& reporter) {
#ifndef CODL_HAVE_URING
  return Err("io_uring: built without liburing");
#else
  first_submit_ns_ = 0;
  first_complete_ns_ = 0;
  submit_calls_ = submitted_ios_ = 0;
  PacedRunSpec spec;
  spec.workers = 1;  // one ring, one submitter: io_uring needs no more for a storage flood
  spec.ops_name = "iops";
  auto summary =
      RunPaced(spec, target, stop, reporter, [this](WorkerContext& ctx) { return Loop(ctx); });
  if (summary.ok()) {
    summary->notes = notes_;
    if (submit_calls_ > 0) {
      char per_call[32];
      std::snprintf(per_call, sizeof per_call, "%.1f",
                    static_cast<double>(submitted_ios_) / static_cast<double>(submit_calls_));
      summary->notes.push_back("submitted " + std::to_string(submitted_ios_) + " I/Os in " +
                               std::to_string(submit_calls_) + " calls (" + per_call +
                               " per call, submit_batch " + std::to_string(submit_batch_) + ")");
    }
  }
  return summary;
#endif
}

#ifdef CODL_HAVE_URING
namespace {

// Only the ring loop needs these.
bool ModeWrites(const std::string& m) { return m != "read" && m != "randread"; }
bool ModeRandom(const std::string& m) { return m.rfind("rand", 0) == 0; }

// Creates the ring with the best flags this kernel accepts (fio-style probing).
int SetupRing(io_uring* ring, unsigned entries, bool sqpoll, unsigned extra_flags,
              std::string* note) {
  struct Attempt {
    unsigned flags;
    const char* what;
  };
  std::vector<Attempt> attempts;
  if (sqpoll) {
    attempts.push_back({IORING_SETUP_SQPOLL | IORING_SETUP_SINGLE_ISSUER, "sqpoll"});
    attempts.push_back({IORING_SETUP_SQPOLL, "sqpoll"});
  }
  attempts.push_back({IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, ""});
  attempts.push_back({IORING_SETUP_COOP_TASKRUN, ""});
  attempts.push_back({0, ""});
  int ret = -EINVAL;
  for (const auto& a : attempts) {
    io_uring_params p{};
    p.flags = a.flags | extra_flags;
    if (a.flags & IORING_SETUP_SQPOLL) p.sq_thread_idle = 1000;
    ret = io_uring_queue_init_params(entries, ring, &p);
    if (ret == 0) {
      if (sqpoll && !(a.flags & IORING_SETUP_SQPOLL))
        *note = "sqpoll refused by the kernel; running without";
      return 0;
    }
  }
  return ret;
}

}  // namespace

// One worker's ring, its slots (one block-sized buffer each) and where the next I/O goes.
class IoUringInjector::RingLoop {
 public:
  RingLoop(IoUringInjector& inj, WorkerContext& ctx)
      : inj_(inj),
        ctx_(ctx),
        qd_(static_cast<unsigned>(inj.queue_depth_)),
        blocks_(inj.file_size_ / inj.block_size_),
        random_(ModeRandom(inj.mode_)),
        reads_(ModeReads(inj.mode_)),
        writes_(ModeWrites(inj.mode_)),
        rng_{0x2545f4914f6cdd1dULL ^ static_cast<uint64_t>(getpid())},
        cursor_(inj.fds_.size(), 0) {
    for (unsigned i = qd_; i-- > 0;) free_slots_.push_back(i);
  }

  // The ring PrepareStart() made (enabled here, on the submitting thread), else a new one.
  Status Init() {
    if (inj_.prepared_) {
      ring_ = std::move(inj_.prepared_);
      // The raw call: liburing 2.3 declares io_uring_enable_rings() but does not export it.
      if (syscall(__NR_io_uring_register, ring_->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS,
                  nullptr, 0) != 0) {
        return Err("io_uring: enabling the prepared ring failed: " + Errno(errno));
      }
      return Status::Ok();
    }
    ring_ = std::make_unique<Ring>();
    return inj_.CreateRing(ring_.get(), /*disabled=*/false);
  }

  // Issues and reaps until a stop or an I/O error.
  void Run() {
    while (error_.empty() && !ctx_.stop.stop_requested()) {
      const double wait = IssueReady();
      if (inflight_ == 0) {  // paced out with nothing in flight: sleep until the next slot
        ctx_.stop.SleepFor(std::min(wait, 0.005));
        continue;
      }
      if (!SubmitAndWait(wait)) break;
      Reap();
    }
  }

  uint64_t submit_calls() const { return submit_calls_; }
  uint64_t submitted_ios() const { return submitted_ios_; }

  // Buffers must not be reused or freed while the kernel still owns them.
  Status Drain() {
    for (int i = 0; inflight_ > 0 && i < 500; ++i) {
      __kernel_timespec ts{0, 10'000'000};
      io_uring_cqe* cqe = nullptr;
      io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, 1, &ts, nullptr);
      Reap();
    }
    if (!error_.empty()) return Err(error_);
    return Status::Ok();
  }

 private:
  char* Buffer(unsigned slot) const { return inj_.buffers_.get() + slot * inj_.block_size_; }

  // Queues as much as the pacer allows and the queue has room for; returns the pacer's wait
  // (0 when it was the queue that filled).
  double IssueReady() {
    double wait = 0;
    while (!free_slots_.empty()) {
      wait = ctx_.pacer.TryAcquire(static_cast<double>(inj_.block_size_));
      if (wait > 0) break;
      if (!Prep(free_slots_.back())) break;
      free_slots_.pop_back();
      ++inflight_;
      if (inj_.submit_batch_ > 0 && io_uring_sq_ready(&ring_->ring) >= inj_.submit_batch_) {
        CountSubmit();
        if (!SubmitOk(io_uring_submit(&ring_->ring))) break;
      }
    }
    return wait;
  }

  // The file and offset of the next I/O: random blocks, or each file read in turn.
  std::pair<size_t, uint64_t> NextTarget() {
    const size_t files = inj_.fds_.size();
    if (random_) {
      const size_t file = rng_.Next() % files;
      return {file, (rng_.Next() % blocks_) * inj_.block_size_};
    }
    const size_t file = next_file_++ % files;
    const uint64_t offset = cursor_[file];
    cursor_[file] = offset + 2 * inj_.block_size_ > inj_.file_size_ ? 0 : offset + inj_.block_size_;
    return {file, offset};
  }

  // Makes the next write's data differ from every earlier one (a new word every 4 KiB, as fio's
  // scramble_buffers): a deduplicating device must store each write, not count references.
  void Scramble(char* buf, unsigned len) {
    for (unsigned off = 0; off + 8 <= len; off += kUniqueStrideBytes) {
      const uint64_t v = rng_.Next();
      std::memcpy(buf + off, &v, sizeof v);
    }
  }

  bool Prep(unsigned slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
    if (sqe == nullptr) return false;  // SQ full (cannot happen with entries >= qd; be safe)
    const auto [file, offset] = NextTarget();
    const bool is_read =
        reads_ && (!writes_ || static_cast<int>(rng_.Next() % 100) < inj_.rwmix_read_);
    char* buf = Buffer(slot);
    const int fd = ring_->fixed_files ? static_cast<int>(file) : inj_.fds_[file];
    const unsigned len = static_cast<unsigned>(inj_.block_size_);
    if (!is_read) Scramble(buf, len);
    if (ring_->fixed_bufs) {
      if (is_read) io_uring_prep_read_fixed(sqe, fd, buf, len, offset, static_cast<int>(slot));
      else io_uring_prep_write_fixed(sqe, fd, buf, len, offset, static_cast<int>(slot));
    } else {
      if (is_read) io_uring_prep_read(sqe, fd, buf, len, offset);
      else io_uring_prep_write(sqe, fd, buf, len, offset);
    }
    if (ring_->fixed_files) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, slot);
    return true;
  }

  // Paced (wait > 0): wait for one completion, never past the next pacing slot, so pacing stays
  // accurate. Unpaced: wait for a batch (queue_depth/4 by default): on small I/O the cost is
  // the wake-up per completion, and batching them measured +10-20% IOPS on 4 KiB randread
  // while keeping the device queue at least 3/4 full. 20 ms cap: a stop is seen quickly.
  // False (with error_ set) when the submit itself failed.
  bool SubmitAndWait(double wait) {
    const unsigned want = wait > 0 ? 1 : std::min(inflight_, inj_.complete_batch_);
    const double limit = wait > 0 ? std::min(wait, 0.005) : 0.02;
    __kernel_timespec ts{0, static_cast<long long>(limit * 1e9)};
    io_uring_cqe* cqe = nullptr;
    if (io_uring_sq_ready(&ring_->ring) > 0) CountSubmit();
    const int ret = io_uring_submit_and_wait_timeout(&ring_->ring, &cqe, want, &ts, nullptr);
    return ret == -ETIME || SubmitOk(ret);
  }

  // False (with error_ set) when a submit call failed; a signal or a full ring
  // (-EAGAIN, -EBUSY: retried on the next call) is not a failure.
  bool SubmitOk(int ret) {
    if (ret >= 0 || ret == -EINTR || ret == -EAGAIN || ret == -EBUSY) return true;
    error_ = "io_uring: submit failed: " + Errno(-ret);
    return false;
  }

  // Before a call that submits what the SQ holds: the first one stamps the start, and every
  // one is counted (I/Os per submit call, in the summary's notes).
  void CountSubmit() {
    StampOnce(inj_.first_submit_ns_);
    ++submit_calls_;
    submitted_ios_ += io_uring_sq_ready(&ring_->ring);
  }

  // Credits every completed I/O and frees its slot; the first failure becomes error_.
  void Reap() {
    unsigned head, seen = 0;
    uint64_t bytes = 0, ops = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_->ring, head, cqe) {
      ++seen;
      const int res = cqe->res;
      if (res < 0 && error_.empty()) {
        error_ = (res == -EINVAL && inj_.direct_ && completed_ops_ == 0)
                     ? DirectRefused(inj_.dir_, "first I/O")
                     : "io_uring: I/O failed: " + Errno(-res);
      } else if (res >= 0) {
        bytes += static_cast<uint64_t>(res);
        ++ops;
      }
      free_slots_.push_back(static_cast<unsigned>(io_uring_cqe_get_data64(cqe)));
    }
    io_uring_cq_advance(&ring_->ring, seen);
    inflight_ -= seen;
    completed_ops_ += ops;
    if (ops) StampOnce(inj_.first_complete_ns_);
    if (bytes) ctx_.Done(bytes, ops);
  }

  IoUringInjector& inj_;
  WorkerContext& ctx_;
  const unsigned qd_;
  const uint64_t blocks_;
  const bool random_, reads_, writes_;
  std::unique_ptr<Ring> ring_;
  Rng rng_;
  std::vector<uint64_t> cursor_;  // sequential modes: next offset per file
  size_t next_file_ = 0;
  std::vector<unsigned> free_slots_;
  unsigned inflight_ = 0;
  uint64_t completed_ops_ = 0;
  uint64_t submit_calls_ = 0, submitted_ios_ = 0;
  std::string error_;
};

Status IoUringInjector::CreateRing(Ring* r, bool disabled) {
  std::string note;
  const unsigned qd = static_cast<unsigned>(queue_depth_);
  if (int ret = SetupRing(&r->ring, qd, sqpoll_, disabled ? IORING_SETUP_R_DISABLED : 0, &note);
      ret < 0) {
    return Err("io_uring: io_uring_setup failed: " + Errno(-ret));
  }
  r->ready = true;
  r->disabled = disabled;
  if (!note.empty()) Note(note);
  if (reg_buffers_) {
    std::vector<iovec> iov(qd);
    for (unsigned i = 0; i < qd; ++i) iov[i] = {buffers_.get() + i * block_size_, block_size_};
    const int ret = io_uring_register_buffers(&r->ring, iov.data(), qd);
    r->fixed_bufs = ret == 0;
    if (!r->fixed_bufs)
      Note("registered buffers refused (" + Errno(-ret) + "); using plain buffers");
  }
  if (reg_files_) {
    const int ret =
        io_uring_register_files(&r->ring, fds_.data(), static_cast<unsigned>(fds_.size()));
    r->fixed_files = ret == 0;
    if (!r->fixed_files) Note("registered files refused (" + Errno(-ret) + "); using plain fds");
  }
  return Status::Ok();
}

Status IoUringInjector::Loop(WorkerContext& ctx) {
  RingLoop loop(*this, ctx);
  if (Status s = loop.Init(); !s.ok()) return s;
  loop.Run();
  Status drained = loop.Drain();
  submit_calls_ = loop.submit_calls();
  submitted_ios_ = loop.submitted_ios();
  return drained;
}
#endif  // CODL_HAVE_URING

}  // namespace codl::injectors::io_uring_internal

namespace codl::injectors {

std::unique_ptr<Injector> MakeIoUringInjector() {
  return std::make_unique<io_uring_internal::IoUringInjector>();
}

}  // namespace codl::injectors
