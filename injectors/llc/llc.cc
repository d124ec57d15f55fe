// llc: last-level-cache thrasher. Threads walk a working set sized from the node's cache
// topology (default 1.5 × the LLC of cpu0, sysfs cache/index*/), touching one cache line per
// step, so every step evicts a line some co-tenant (a DataLoader, the framework's host code)
// had cached. The rate of touched lines is the controlled quantity.
//
// Unit: lines/s, cache lines touched per second (each touch is a load, plus a store with
// write=true so evicted lines are dirty and cost a write-back too).
//
// Unlike memcpy (streaming sequential copies of buffers far larger than the LLC, limited by
// DRAM bandwidth, prefetcher-friendly), the walk here is a dependent random pointer chase
// (pattern=chase) or a prime-stride sweep (pattern=stride) over ≈ the LLC size: latency-bound,
// little bandwidth, maximal cache-line turnover per byte moved.
//
// Miss behaviour is measured with perf_event_open (LLC read misses of our own threads) where
// the kernel allows it; where it does not (perf_event_paranoid, a container's seccomp filter),
// the summary says so and reports no miss figures.
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/memory_room.h"
#include "injectors/core/paced_run.h"
#include "injectors/cpu_list.h"
#include "injectors/llc/llc_topology.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

uint64_t DefaultLlcBytes() {
  const auto caches = ReadCacheTopology("/sys/devices/system/cpu/cpu0");
  const CacheInfo* llc = LastLevelCache(caches);
  return llc != nullptr ? llc->size : 32 * kMiB;
}

// A thread's LLC read-miss counter (user space only, this thread only). fd < 0: unavailable.
class MissCounter {
 public:
  // The LLC read-miss event where the PMU names it; else the generic "cache-misses" (on x86
  // the last-level misses too); each attempt's errno is kept for the note.
  MissCounter() {
    fd_ = Open(PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_LL | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                       (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
    event_ = "LL read misses";
    if (fd_ < 0 && (errno == ENOENT || errno == EOPNOTSUPP)) {
      fd_ = Open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
      event_ = "cache-misses";
    }
    error_ = fd_ < 0 ? errno : 0;
  }
  ~MissCounter() {
    if (fd_ >= 0) close(fd_);
  }
  MissCounter(const MissCounter&) = delete;
  MissCounter& operator=(const MissCounter&) = delete;
  bool ok() const { return fd_ >= 0; }
  int error() const { return error_; }
  const char* event() const { return event_; }
  uint64_t Read() const {
    uint64_t v = 0;
    return fd_ >= 0 && read(fd_, &v, sizeof v) == sizeof v ? v : 0;
  }

 private:
  static int Open(uint32_t type, uint64_t config) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.exclude_kernel = 1;  // our own loads only; also what perf_event_paranoid=2 allows
    attr.exclude_hv = 1;
    return static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  }

  int fd_ = -1;
  int error_ = 0;
  const char* event_ = "";
};

std::string PerfParanoid() {
  std::ifstream f("/proc/sys/kernel/perf_event_paranoid");
  std::string v;
  return f >> v ? v : "unknown";
}

// Why a counter could not be opened, in the terms a user can act on.
std::string PerfHint(int err) {
  if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV) {
    return "this CPU or VM exposes no LLC-miss event; VMs often have no virtual PMU";
  }
  if (err == EACCES || err == EPERM) {
    return "kernel.perf_event_paranoid=" + PerfParanoid() +
           ", or a container's seccomp filter forbids perf_event_open";
  }
  return "kernel.perf_event_paranoid=" + PerfParanoid();
}

// Adds the per-interval LLC miss rate (when measured) to each sample.
class MissReporter final : public Reporter {
 public:
  MissReporter(Reporter& inner, const std::atomic<uint64_t>& misses, bool measured)
      : inner_(inner), misses_(misses), measured_(measured) {}
  void Report(const Sample& s) override {
    Sample out = s;
    const uint64_t now = misses_.load(std::memory_order_relaxed);
    if (measured_ && s.interval_s > 0) {
      out.extra["llc_misses"] = static_cast<double>(now - last_) / s.interval_s;
    }
    last_ = now;
    inner_.Report(out);
  }

 private:
  Reporter& inner_;
  const std::atomic<uint64_t>& misses_;
  bool measured_;
  uint64_t last_ = 0;
};

// Stores to a line (its second word) so that its eviction costs a write-back.
inline void Dirty(char* line) {
  volatile uint64_t* w = reinterpret_cast<volatile uint64_t*>(line + 8);
  *w = *w + 1;
}

struct Unmap {
  size_t bytes = 0;
  void operator()(char* p) const { munmap(p, bytes); }
};

class LlcInjector final : public Injector {
 public:
  const Descriptor& descriptor() const override {
    static const Descriptor d = [] {
      const uint64_t llc = DefaultLlcBytes();
      const uint64_t ws = llc + llc / 2;
      return Descriptor{
          "llc",
          "last-level cache",
          "lines/s",
          "LLC thrasher: threads walk a working set of ~1.5x the LLC, one cache line per step",
          "cache lines touched per second (a load, plus a store with write=true); LLC misses "
          "reported alongside as llc_misses where perf counters are readable",
          {
              IntOption("threads", "1", 1, 1024,
                        "walking threads; each walks its own share of the working set"),
              SizeOption("working_set", std::to_string(ws / 1024) + "KiB", 64 * 1024,
                         16.0 * 1024 * kMiB,
                         "bytes walked, all threads together (default: 1.5x the LLC of cpu0, " +
                             std::to_string(llc / 1024) + "KiB here, from sysfs)"),
              EnumOption("pattern", "chase", {"chase", "stride"},
                         "chase = dependent random pointer chase (one miss at a time, no "
                         "prefetching); stride = independent loads at a prime stride of lines "
                         "(several misses in flight)"),
              BoolOption("write", "true", "also store to each line, so evictions write back"),
              IntOption("chunk", "1024", 16, 1 << 20, "lines per pacing step", "lines"),
              StringOption("cpus", "none", "CPU list to pin threads to round-robin, e.g. 0-3,6"),
          },
          Capabilities{},
          {{"threads", "1"}, {"working_set", "4MiB"}},
      };
    }();
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return Status::Ok(); }

  Status CheckOptions(const OptionValues& o) const override {
    if (o.Size("working_set") / 64 / static_cast<uint64_t>(o.Int("threads")) < 16) {
      return InvalidArgument("option 'working_set' (" + o.Text("working_set") +
                             ") leaves fewer than 16 lines " +
                             "per thread (threads=" + o.Text("threads") + ")");
    }
    if (o.Size("working_set") / 64 > 0xffffffffULL) {
      return InvalidArgument("option 'working_set' (" + o.Text("working_set") +
                             ") exceeds 2^32 lines");
    }
    return CheckCpuListOption("cpus", o.String("cpus"));
  }

  Status Setup(const OptionValues& o, const HostInfo&, HostServices&,
               const StopToken& stop) override;
  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override;

 private:
  // Touches `n` lines of thread `t`'s region starting from *pos; returns a value that
  // depends on every load (the chase's next index), so no load can be dropped.
  uint64_t Walk(int t, uint64_t* pos, uint64_t n) const;

  int threads_ = 1;
  bool chase_ = true, write_ = true;
  uint64_t chunk_ = 1024, line_ = 64, lines_per_thread_ = 0, stride_ = 1;
  std::vector<int> cpus_;
  std::unique_ptr<char, Unmap> memory_;
  std::vector<std::string> notes_;
};

Status LlcInjector::Setup(const OptionValues& o, const HostInfo&, HostServices&,
                          const StopToken& stop) {
  threads_ = static_cast<int>(o.Int("threads"));
  chase_ = o.String("pattern") == "chase";
  write_ = o.Bool("write");
  chunk_ = static_cast<uint64_t>(o.Int("chunk"));
  ParseCpuList(o.String("cpus"), &cpus_);
  const auto caches = ReadCacheTopology("/sys/devices/system/cpu/cpu0");
  const CacheInfo* llc = LastLevelCache(caches);
  line_ = llc != nullptr ? llc->line_size : 64;
  lines_per_thread_ = o.Size("working_set") / line_ / static_cast<uint64_t>(threads_);
  const size_t bytes = lines_per_thread_ * line_ * static_cast<size_t>(threads_);
  if (auto room = ReadMemoryRoom();
      room && static_cast<double>(bytes) > 0.5 * static_cast<double>(room->bytes())) {
    return ResourceExhausted("llc: working_set " + FormatSize(static_cast<double>(bytes)) +
                             " is more than half of the memory available: " + room->Describe());
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Err("llc: cannot allocate " + FormatSize(bytes) + ": " + std::strerror(errno));
  memory_ = std::unique_ptr<char, Unmap>(static_cast<char*>(p), Unmap{bytes});
  // Huge pages: fewer TLB misses, so the walk's cost is cache misses, not page walks.
  madvise(p, bytes, MADV_HUGEPAGE);
  // Each line's first word holds the index of the next line of its thread's chase.
  for (int t = 0; t < threads_; ++t) {
    if (stop.stop_requested()) return Err("stopped during setup");
    const auto next = RandomCycle(lines_per_thread_, 0x5eed + static_cast<uint64_t>(t));
    char* base = memory_.get() + static_cast<size_t>(t) * lines_per_thread_ * line_;
    for (uint64_t i = 0; i < lines_per_thread_; ++i) {
      std::memcpy(base + i * line_, &next[i], sizeof next[i]);
      std::memset(base + i * line_ + 8, 0, line_ - 8);
    }
  }
  // ~4 KiB + 1 line, adjusted to be coprime with the line count: every line once per sweep,
  // and each jump past a page, beyond what the stride prefetchers follow.
  stride_ = CoprimeStride(lines_per_thread_, 4096 / line_ + 1);
  notes_ = {"working set " + FormatSize(static_cast<double>(bytes)) + " (" +
            std::to_string(lines_per_thread_ * threads_) + " lines of " + std::to_string(line_) +
            " B); LLC " +
            (llc != nullptr
                 ? FormatSize(static_cast<double>(llc->size)) + " (L" + std::to_string(llc->level) +
                       ", shared by CPUs " + llc->shared_cpus + ")"
                 : std::string("unknown (no sysfs cache topology)"))};
  return Status::Ok();
}

uint64_t LlcInjector::Walk(int t, uint64_t* pos, uint64_t n) const {
  char* base = memory_.get() + static_cast<size_t>(t) * lines_per_thread_ * line_;
  uint64_t p = *pos, dep = 0;
  if (chase_) {
    for (uint64_t i = 0; i < n; ++i) {
      char* line = base + p * line_;
      uint32_t next;
      std::memcpy(&next, line, sizeof next);
      if (write_) Dirty(line);
      p = next;
    }
    dep = p;
  } else {
    for (uint64_t i = 0; i < n; ++i) {
      char* line = base + p * line_;
      dep += *reinterpret_cast<volatile uint32_t*>(line);
      if (write_) Dirty(line);
      p += stride_;
      if (p >= lines_per_thread_) p -= lines_per_thread_;
    }
  }
  *pos = p;
  return dep;
}

Result<RunSummary> LlcInjector::Run(const Target& target, const StopToken& stop,
                                    Reporter& reporter) {
  std::atomic<uint64_t> misses{0}, sink{0};
  std::atomic<int> measured{0};
  std::mutex mu;
  int perf_error = 0;
  // Counters are opened by each worker (they count the calling thread); whether they work is
  // known only then, so the reporter adds miss rates from the first sample after they opened.
  MissCounter probe;
  const bool perf_ok = probe.ok();
  MissReporter with_misses(reporter, misses, perf_ok);
  PacedRunSpec spec;
  spec.workers = threads_;
  auto worker = [&](WorkerContext& ctx) -> Status {
    if (!cpus_.empty()) PinThisThread(cpus_[static_cast<size_t>(ctx.index) % cpus_.size()]);
    MissCounter counter;
    if (!counter.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      perf_error = counter.error();
    } else {
      measured.fetch_add(1);
    }
    uint64_t pos = 0, last = counter.Read(), dep = 0;
    while (ctx.Acquire(chunk_)) {
      dep += Walk(ctx.index, &pos, chunk_);
      ctx.Done(chunk_);
      const uint64_t now = counter.Read();
      misses.fetch_add(now - last, std::memory_order_relaxed);
      last = now;
    }
    sink.fetch_xor(dep, std::memory_order_relaxed);
    return Status::Ok();
  };
  auto summary = RunPaced(spec, target, stop, with_misses, worker);
  if (!summary.ok()) return summary;
  summary->notes = notes_;
  if (perf_ok && measured.load() == threads_ && summary->seconds > 0) {
    const double lines = summary->achieved_rate * summary->seconds;
    summary->extra["llc_misses"] = static_cast<double>(misses.load()) / summary->seconds;
    if (lines > 0) summary->extra["llc_miss_ratio"] = static_cast<double>(misses.load()) / lines;
    summary->notes.push_back(std::string("LLC misses counted with perf event ") + probe.event() +
                             " (user space, walking threads only)");
  } else {
    const int err = perf_ok ? perf_error : probe.error();
    summary->notes.push_back("LLC misses not measured: perf_event_open(" +
                             std::string(probe.event()) + ") failed: " + std::strerror(err) + " (" +
                             PerfHint(err) + ")");
  }
  return summary;
}

}  // namespace

std::unique_ptr<Injector> MakeLlcInjector() { return std::make_unique<LlcInjector>(); }

}  // namespace codl::injectors
