// pagecache: memory-capacity antagonist. Holds a target amount of anonymous memory
// (kind=anon) or of page cache of its own file (kind=file), so a victim's dataset no longer
// stays cached and its allocations meet a fuller node.
//
// Unit: bytes held, measured as resident (mincore), not merely allocated: pages the kernel
// reclaimed or swapped out do not count. A level is a fraction of MemAvailable at the start
// (what --calibrate measures). The per-interval `achieved` is the mean resident bytes.
//
// Safety: it never pushes the node towards OOM. Every 50 ms it reads MemAvailable and PSI
// (/proc/pressure/memory, where the kernel has it) and releases memory while MemAvailable is
// below `floor` or PSI "some avg10" above `psi_limit`; it grows at most `step` per 50 ms and
// only into MemAvailable − floor. Each back-off is flagged in the interval JSON
// ("backed_off":1) and counted in the summary. kind=file writes only in its run directory under
// a scratch root (scratch.h), removed on exit (or by --cleanup-stale after a SIGKILL).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/rate_controller.h"
#include "injectors/core/scratch.h"
#include "injectors/core/start_wait.h"
#include "injectors/pagecache/pagecache_memory.h"
#include "lib/common/read_file.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

MemInfo ReadMemInfo() { return ParseMemInfo(ReadFileText("/proc/meminfo").value_or("")); }
double ReadPsi() { return ParsePsiSomeAvg10(ReadFileText("/proc/pressure/memory").value_or("")); }

uint64_t PageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

// Resident bytes of [p, p + bytes) (page aligned), by mincore.
uint64_t ResidentBytes(void* p, uint64_t bytes) {
  const uint64_t page = PageSize();
  std::vector<unsigned char> vec((bytes + page - 1) / page);
  if (vec.empty() || mincore(p, bytes, vec.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n * page;
}

// What is held: anonymous chunks or one file's page cache.
class Holding {
 public:
  virtual ~Holding() = default;
  // Grows by up to `bytes` in pieces, stopping early once `clock` passes `deadline`, so a
  // slow disk or a loaded box never stalls the control loop (reports, stop) for long.
  Status Grow(uint64_t bytes, const Clock& clock, double deadline) {
    for (uint64_t done = 0; done < bytes && clock.Now() < deadline;) {
      const uint64_t piece = std::min<uint64_t>(kPiece, bytes - done);
      if (Status s = GrowPiece(piece); !s.ok()) return s;
      done += piece;
    }
    return Status::Ok();
  }
  virtual void Release(uint64_t bytes) = 0;
  virtual uint64_t Resident() = 0;
  virtual void Refresh() {}  // bring back what the kernel reclaimed
  uint64_t held() const { return held_; }
  void ReleaseAll() { Release(held_); }

 protected:
  static constexpr uint64_t kPiece = 4 * kMiB;  // page multiple
  virtual Status GrowPiece(uint64_t bytes) = 0;
  uint64_t held_ = 0;
};

class AnonHolding final : public Holding {
 public:
  ~AnonHolding() override { ReleaseAll(); }
  void Release(uint64_t bytes) override {
    while (bytes > 0 && !chunks_.empty()) {
      auto& [p, size] = chunks_.back();
      const uint64_t cut = std::min(bytes, size);
      munmap(p + (size - cut), cut);  // the tail: sizes are page multiples
      size -= cut;
      held_ -= cut;
      bytes -= cut;
      if (size == 0) chunks_.pop_back();
    }
  }
  uint64_t Resident() override {
    uint64_t n = 0;
    for (auto& [p, size] : chunks_) n += ResidentBytes(p, size);
    return n;
  }

 private:
  Status GrowPiece(uint64_t bytes) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return Err(std::string("mmap: ") + std::strerror(errno));
    // A distinct word per page: the zero page and KSM cannot share what we hold.
    const uint64_t page = PageSize();
    for (uint64_t off = 0; off < bytes; off += page) {
      *reinterpret_cast<uint64_t*>(static_cast<char*>(p) + off) = off ^ 0x5a5a5a5a5a5a5a5aULL;
    }
    chunks_.push_back({static_cast<char*>(p), bytes});
    held_ += bytes;
    return Status::Ok();
  }

  std::vector<std::pair<char*, uint64_t>> chunks_;
};

class FileHolding final : public Holding {
 public:
  FileHolding(RunDir dir, int fd) : dir_(std::move(dir)), fd_(fd), fill_(kMiB) {
    uint64_t s = 0x9e3779b97f4a7c15ULL;  // incompressible: compressing filesystems cannot cheat
    for (size_t i = 0; i + 8 <= fill_.size(); i += 8) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      std::memcpy(fill_.data() + i, &s, 8);
    }
  }
  ~FileHolding() override {
    close(fd_);
    dir_.Remove();
  }
  Status GrowPiece(uint64_t bytes) override {
    for (uint64_t done = 0; done < bytes;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(fill_.size(), bytes - done));
      const ssize_t w = pwrite(fd_, fill_.data(), n, static_cast<off_t>(held_ + done));
      if (w <= 0) {
        if (ftruncate(fd_, static_cast<off_t>(held_)) != 0) {
        }  // drop the partial growth
        return Err("write " + dir_.path() + "/held: " + std::strerror(w < 0 ? errno : ENOSPC));
      }
      done += static_cast<uint64_t>(w);
    }
    held_ += bytes;
    return Status::Ok();
  }
  void Release(uint64_t bytes) override {
    held_ -= std::min(bytes, held_);
    if (ftruncate(fd_, static_cast<off_t>(held_)) != 0) {
    }  // truncation frees the pages
  }
  uint64_t Resident() override {
    if (held_ == 0) return 0;
    void* p = mmap(nullptr, held_, PROT_READ, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return 0;
    const uint64_t n = ResidentBytes(p, held_);
    munmap(p, held_);
    return n;
  }
  void Refresh() override { posix_fadvise(fd_, 0, static_cast<off_t>(held_), POSIX_FADV_WILLNEED); }

 private:
  RunDir dir_;
  int fd_;
  std::vector<char> fill_;
};

class PagecacheInjector final : public Injector {
 public:
  const Descriptor& descriptor() const override {
    static const Descriptor d = [] {
      const MemInfo m = ReadMemInfo();
      const uint64_t floor = DefaultFloor(m.total);
      return Descriptor{
          "pagecache",
          "memory capacity / page cache",
          "bytes",
          "memory-capacity hog: holds anonymous memory or page cache, backing off above a "
          "MemAvailable floor and under memory pressure (PSI)",
          "bytes held resident (mincore); a level is a fraction of MemAvailable at the start",
          {
              EnumOption("kind", "anon", {"anon", "file"},
                         "anon = anonymous memory; file = page cache of a file in the run "
                         "directory under a scratch root"),
              SizeOption("floor", std::to_string(floor / kMiB) + "MiB", 64.0 * kMiB,
                         16.0 * 1024 * 1024 * kMiB,
                         "keep MemAvailable at or above this; release memory below it "
                         "(default: max(10% of MemTotal, 1GiB))"),
              DoubleOption("psi_limit", "10", 0, 100,
                           "release one step per second while PSI memory 'some avg10' exceeds "
                           "this (0 = ignore PSI)",
                           "%"),
              SizeOption("limit", "0", 0, 16.0 * 1024 * 1024 * kMiB,
                         "never hold more than this, whatever the target (0 = no cap)"),
              SizeOption("step", "64MiB", 1.0 * kMiB, 1024.0 * kMiB,
                         "most grown per 50 ms control step (and released per PSI back-off)"),
              StringOption("dir", "",
                           "kind=file: directory of the run directory (default: first "
                           "scratch root); must resolve under a scratch root"),
          },
          Capabilities{.writes_scratch = true},
          {{"limit", "32MiB"}, {"step", "8MiB"}},
      };
    }();
    return d;
  }

  Status Unsupported(const HostInfo&) const override {
    if (ReadMemInfo().ok) return Status::Ok();
    return NotHere("/proc/meminfo has no MemTotal/MemAvailable (Linux 3.14+)");
  }

  // A size given as a rate ("512MiB/s") is read as bytes; "--rate 512MiB" is a bare number.
  using Injector::ToInjectorUnit;
  Result<double> ToInjectorUnit(const Rate& rate) const override {
    if (rate.unit == RateUnit::kBytesPerSecond) return rate.value;
    return Err(
        "injector 'pagecache' holds bytes; a rate in IOPS does not apply (give bytes, "
        "e.g. --rate 512Mi)");
  }

  Status Setup(const OptionValues& o, const HostInfo& host, HostServices&,
               const StopToken&) override {
    kind_ = o.String("kind");
    policy_.floor = o.Size("floor");
    policy_.psi_limit = o.Double("psi_limit");
    policy_.step = o.Size("step");
    policy_.granule = PageSize();
    limit_ = o.Size("limit");
    if (kind_ == "file") {
      auto dir = ResolveScratchDir(o.String("dir"), host.scratch_roots);
      if (!dir.ok()) return dir.status().WithContext("option 'dir'");
      dir_ = *dir;
    }
    return Status::Ok();
  }

  Result<RunSummary> Calibrate(double duration_s, const StopToken& stop,
                               Reporter& reporter) override;
  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override;

 private:
  Result<std::unique_ptr<Holding>> MakeHolding() const;

  std::string kind_ = "anon", dir_;
  MemoryPolicy policy_;
  uint64_t limit_ = 0;
};

Result<std::unique_ptr<Holding>> PagecacheInjector::MakeHolding() const {
  if (kind_ == "anon") return std::unique_ptr<Holding>(std::make_unique<AnonHolding>());
  auto run_dir = RunDir::Create(dir_);
  if (!run_dir.ok()) return run_dir.status().WithContext("pagecache");
  // openat on our own fresh run dir, O_EXCL|O_NOFOLLOW: never an existing file or a symlink.
  const int fd =
      openat(run_dir->fd(), "held", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Err("pagecache: cannot create " + run_dir->path() + "/held: " + std::strerror(errno));
  }
  return std::unique_ptr<Holding>(std::make_unique<FileHolding>(std::move(*run_dir), fd));
}

// The peak a level refers to: MemAvailable when calibration starts. Reported every 200 ms for
// the duration so the user sees how much it moves.
Result<RunSummary> PagecacheInjector::Calibrate(double duration_s, const StopToken& stop,
                                                Reporter& reporter) {
  SteadyClock clock;
  const double t0 = clock.Now();
  const MemInfo start = ReadMemInfo();
  const StopToken until = stop.WithDeadline(duration_s);
  double last = 0;
  while (!until.SleepFor(0.2)) {
    Sample s;
    s.t_s = clock.Now() - t0;
    s.interval_s = s.t_s - last;
    last = s.t_s;
    s.achieved = static_cast<double>(ReadMemInfo().available);
    reporter.Report(s);
  }
  RunSummary summary;
  summary.achieved_rate = static_cast<double>(start.available);
  summary.seconds = clock.Now() - t0;
  summary.notes.push_back("peak = MemAvailable at the start (" +
                          FormatSize(static_cast<double>(start.available)) + " of " +
                          FormatSize(static_cast<double>(start.total)) +
                          " MemTotal); a level is a fraction of it");
  return summary;
}

Result<RunSummary> PagecacheInjector::Run(const Target& target, const StopToken& stop,
                                          Reporter& reporter) {
  auto holding = MakeHolding();
  if (!holding.ok()) return holding.status();
  if (!AwaitStart(target.start, stop)) return RunSummary{};  // stopped before the start
  Holding& h = **holding;
  uint64_t desired = target.is_max() ? std::numeric_limits<uint64_t>::max()
                                     : static_cast<uint64_t>(std::max(0.0, target.rate));
  if (limit_ > 0) desired = std::min(desired, limit_);

  SteadyClock clock;
  const double t0 = clock.Now(), control_s = 0.05, report_s = 0.2;
  std::vector<IntervalPoint> points{{0, 0, 0}};
  double integral = 0, last_t = 0, last_report = 0, psi_release_t = -10;
  uint64_t resident = 0, min_available = std::numeric_limits<uint64_t>::max();
  int backoffs = 0;
  bool interval_backed = false, was_backed = false;
  std::string reasons, grow_error;
  for (double next = control_s;; next += control_s) {
    const MemInfo m = ReadMemInfo();
    const double psi = ReadPsi();
    min_available = std::min(min_available, m.available);
    MemoryState st{h.held(), desired, m.available, psi, clock.Now() - t0 - psi_release_t < 1.0};
    const MemoryDecision d = DecideMemoryStep(st, policy_);
    if (d.delta < 0) h.Release(static_cast<uint64_t>(-d.delta));
    if (d.delta < 0 && d.reason == "psi") psi_release_t = clock.Now() - t0;
    if (d.delta > 0 && grow_error.empty()) {
      // At most 30 ms of growing per 50 ms step; the rest waits for the next step.
      if (Status s = h.Grow(static_cast<uint64_t>(d.delta), clock, clock.Now() + 0.03); !s.ok()) {
        grow_error = s.error();
      }
    }
    if (d.backed_off && !was_backed) ++backoffs;
    if (d.backed_off && reasons.find(d.reason) == std::string::npos) {
      reasons += (reasons.empty() ? "" : ", ") + d.reason;
    }
    was_backed = d.backed_off;
    interval_backed = interval_backed || d.backed_off;

    const double now = clock.Now() - t0;
    if (resident < h.held()) h.Refresh();
    resident = h.Resident();
    integral += static_cast<double>(resident) * (now - last_t);  // resident since the last step
    last_t = now;
    const bool stopping = stop.stop_requested();
    if (now - last_report >= report_s - 1e-3 || stopping) {
      const double dt = now - last_report;
      Sample s;
      s.t_s = now;
      s.interval_s = dt;
      s.achieved = dt > 0 ? (integral - points.back().units) / dt : 0;
      s.target = target.is_max() ? 0 : target.rate;
      s.saturated = !target.is_max() && s.achieved < 0.97 * target.rate;
      s.extra["mem_available"] = static_cast<double>(m.available);
      s.extra["backed_off"] = interval_backed ? 1 : 0;
      if (psi >= 0) s.extra["psi_some_avg10"] = psi;
      reporter.Report(s);
      points.push_back({now, integral, 0});
      last_report = now;
      interval_backed = false;
    }
    if (stopping || !clock.SleepUntil(t0 + next, stop)) {
      if (!stopping) continue;  // report the final partial interval, then leave
      break;
    }
  }
  h.ReleaseAll();

  RunSummary summary;
  Summarize(points, report_s, "", &summary);
  summary.saturated = !target.is_max() && summary.achieved_rate < 0.97 * target.rate;
  summary.extra["backoffs"] = backoffs;
  summary.extra["min_mem_available"] = static_cast<double>(min_available);
  summary.notes.push_back(
      "kind " + kind_ + ", floor " + FormatSize(static_cast<double>(policy_.floor)) +
      (limit_ > 0 ? ", limit " + FormatSize(static_cast<double>(limit_)) : std::string()));
  if (backoffs > 0) {
    summary.notes.push_back(
        "backed off " + std::to_string(backoffs) + " time(s) (" + reasons +
        "): released memory to keep MemAvailable above the floor" +
        (reasons.find("psi") != std::string::npos ? " and PSI below psi_limit" : ""));
  }
  if (!target.is_max() && limit_ > 0 && target.rate > static_cast<double>(limit_)) {
    summary.notes.push_back("target above the limit option: held at most the limit");
  }
  if (!grow_error.empty()) summary.notes.push_back("stopped growing: " + grow_error);
  return summary;
}

}  // namespace

std::unique_ptr<Injector> MakePagecacheInjector() { return std::make_unique<PagecacheInjector>(); }

}  // namespace codl::injectors
