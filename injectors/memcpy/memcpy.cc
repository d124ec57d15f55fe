// memcpy: host DRAM bandwidth hog. N threads each copy a source buffer into a destination
// buffer, both much larger than the last-level cache, so every byte goes to and from DRAM.
//
// Unit: bytes/s, counting each byte copied once (it is read once and written once). STREAM's
// "Copy" figure counts both the read and the write, i.e. 2× this number for the same work.
//
// Why non-temporal stores: a regular store to a line not in cache first reads it (read for
// ownership), so a copy costs 3 DRAM transfers per line instead of 2. Streaming stores skip
// that read; "auto" uses them whenever the buffers exceed the LLC (always, by default).
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/memory_room.h"
#include "injectors/core/paced_run.h"
#include "injectors/cpu_list.h"
#include "injectors/memcpy/memcpy_kernels.h"
#include "lib/common/units.h"

namespace codl::injectors {
namespace {

// MemTotal in bytes; 0 when unknown.
uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// Size of the largest data/unified cache, from sysfs; 32 MiB when unknown.
uint64_t LastLevelCacheBytes() {
  uint64_t best = 0;
  int best_level = -1;
  for (int i = 0; i < 16; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::ifstream level_f(dir + "level"), type_f(dir + "type"), size_f(dir + "size");
    int level;
    std::string type, size;
    if (!(level_f >> level) || !(type_f >> type) || !(size_f >> size)) continue;
    if (type == "Instruction") continue;
    uint64_t bytes = std::strtoull(size.c_str(), nullptr, 10);
    if (!size.empty() && size.back() == 'K') bytes *= 1024;
    if (!size.empty() && size.back() == 'M') bytes *= kMiB;
    if (level > best_level) {
      best_level = level;
      best = bytes;
    }
  }
  return best > 0 ? best : 32 * kMiB;
}

struct AlignedFree {
  size_t bytes = 0;
  void operator()(char* p) const { munmap(p, bytes); }
};
using Buffer = std::unique_ptr<char, AlignedFree>;

Result<Buffer> AllocateBuffer(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Err("cannot allocate " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
  madvise(p, bytes, MADV_HUGEPAGE);  // fewer TLB misses while streaming; advisory
  return Buffer(static_cast<char*>(p), AlignedFree{bytes});
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);  // this thread only (tid 0 = caller)
}

class MemcpyInjector final : public Injector {
 public:
  const Descriptor& descriptor() const override {
    static const Descriptor d = [] {
      const uint64_t llc = LastLevelCacheBytes();
      const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
      const unsigned threads = std::min(cpus, 4u);
      // 4x the LLC, so the walk misses it; but on a big-cache, small-memory machine (260 MiB of
      // L3 beside 24 GiB) no more than MemTotal/16 walked by the default threads, so the
      // default fits beside a training job. A round MiB count, at least 64 MiB.
      const uint64_t mem_cap = PhysicalMemoryBytes() / (32 * threads) / kMiB * kMiB;
      const uint64_t buffer =
          std::max<uint64_t>(std::min<uint64_t>(4 * llc, mem_cap > 0 ? mem_cap : 4 * llc),
                             64 * kMiB) /
          kMiB * kMiB;
      return Descriptor{
          "memcpy",
          "DRAM bandwidth",
          "bytes/s",
          "host memory-bandwidth hog: threads copying buffers much larger than the LLC",
          "bytes copied per second, each byte counted once (read once + written once; "
          "STREAM Copy would report 2x)",
          {
              IntOption("threads", std::to_string(threads), 1, 1024,
                        "copy threads (default: min(CPUs, 4))"),
              SizeOption("buffer_size", std::to_string(buffer / kMiB) + "MiB", 64 * 1024,
                         64.0 * 1024 * kMiB,
                         "per-thread source and destination buffer each (default: 4x LLC " +
                             std::to_string(llc / kMiB) +
                             "MiB, at least 64MiB, at most MemTotal/(32 x threads))"),
              SizeOption("chunk_size", "1MiB", 4096, 64.0 * kMiB,
                         "bytes copied per pacing step (finer = smoother, more overhead)"),
              EnumOption(
                  "nontemporal", "auto", {"auto", "on", "off"},
                  "streaming stores: auto = on when 2 x buffer_size x threads exceeds the LLC"),
              StringOption("pin", "none", "CPU list to pin threads to round-robin, e.g. 0-3,6"),
              EnumOption("kernel", "auto", {"auto", "interleaved", "sequential"},
                         "streaming-store kernel: interleaved (AVX, four pages at once), "
                         "sequential; auto = the faster in a ~20 ms trial at setup"),
          },
          Capabilities{},
          {{"threads", "1"}, {"buffer_size", "16MiB"}},
      };
    }();
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return Status::Ok(); }

  Status CheckOptions(const OptionValues& o) const override {
    CODL_RETURN_IF_ERROR(CheckCpuListOption("pin", o.String("pin")));
    if (o.Size("chunk_size") > o.Size("buffer_size")) {
      return InvalidArgument("option 'chunk_size' (" + o.Text("chunk_size") +
                             ") must not exceed 'buffer_size' (" + o.Text("buffer_size") + ")");
    }
    if (o.String("nontemporal") == "on" && StreamingKernel() == nullptr) {
      return InvalidArgument(
          "option 'nontemporal': 'on' needs SSE2 or AVX streaming stores, which this CPU lacks");
    }
    const std::string kernel = o.String("kernel");
    if (kernel != "auto") {
      if (o.String("nontemporal") == "off") {
        return InvalidArgument(
            "option 'kernel' (" + kernel +
            ") picks a streaming-store kernel, but 'nontemporal' is off (regular stores copy "
            "with libc memcpy)");
      }
      if (FindKernel(kernel) == nullptr) {
        return InvalidArgument("option 'kernel': '" + kernel + "' is not available on this CPU (" +
                               (kernel == "interleaved" ? "needs AVX" : "needs SSE2") + ")");
      }
    }
    return Status::Ok();
  }

  Status Setup(const OptionValues& o, const HostInfo&, HostServices&,
               const StopToken& stop) override {
    threads_ = static_cast<int>(o.Int("threads"));
    ParseCpuList(o.String("pin"), &pin_);
    // Chunks are multiples of 4 KiB so streaming kernels see aligned, 128-byte-multiple spans.
    chunk_ = std::max<size_t>(4096, o.Size("chunk_size") / 4096 * 4096);
    span_ = std::max<size_t>(chunk_, o.Size("buffer_size") / chunk_ * chunk_);
    const std::string nt = o.String("nontemporal");
    // What must not fit in the LLC is everything the threads walk: a source and a destination
    // each. (Per-thread buffer against the LLC left streaming off for 2 x 128 MiB on a 260 MiB
    // L3, where the walk is 512 MiB, at 0.57x a STREAM copy.)
    const double walked = 2.0 * static_cast<double>(span_) * threads_;
    const bool stream =
        nt == "on" || (nt == "auto" && walked > static_cast<double>(LastLevelCacheBytes()) &&
                       StreamingKernel() != nullptr);
    copy_ = CopyRegular;
    notes_.clear();
    notes_.push_back(std::string("non-temporal stores ") + (stream ? "on" : "off"));

    // Against what the node can give (MemAvailable: page cache included) and the cgroup's room,
    // never MemFree: a node that has read its dataset has little of that (memory_room.h).
    if (auto room = ReadMemoryRoom(); room && walked > 0.9 * static_cast<double>(room->bytes())) {
      return ResourceExhausted("memcpy needs " + FormatSize(walked) +
                               " (2 x buffer_size x threads) but only " + room->Describe() +
                               "; lower buffer_size or threads");
    }
    // Each thread allocates and first-touches its own buffers, pinned as it will run, so the
    // pages land on its NUMA node and page faults are paid here, not in the measurement.
    src_.clear();
    dst_.clear();
    src_.resize(threads_);
    dst_.resize(threads_);
    std::vector<std::string> errors(threads_);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads_; ++i) {
      ts.emplace_back([&, i] {
        if (!pin_.empty()) PinTo(pin_[i % pin_.size()]);
        auto s = AllocateBuffer(span_), d = AllocateBuffer(span_);
        if (!s.ok() || !d.ok()) {
          errors[i] = s.ok() ? d.error() : s.error();
          return;
        }
        std::memset(s->get(), 0x5a + i, span_);
        std::memset(d->get(), 0, span_);
        src_[i] = std::move(*s);
        dst_[i] = std::move(*d);
      });
    }
    for (auto& t : ts) t.join();
    for (const auto& e : errors) {
      if (!e.empty()) return Err("memcpy: " + e);
    }
    if (stop.stop_requested()) return Err("stopped during setup");
    if (stream) {
      ChooseKernel(o.String("kernel"));
    } else if (o.String("kernel") != "auto") {
      notes_.push_back("kernel " + o.String("kernel") +
                       " not used: the buffers fit in the LLC, so stores are regular");
    }
    return Status::Ok();
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
    PacedRunSpec spec;
    spec.workers = threads_;
    auto worker = [this](WorkerContext& ctx) -> Status {
      if (!pin_.empty()) PinTo(pin_[static_cast<size_t>(ctx.index) % pin_.size()]);
      char* src = src_[ctx.index].get();
      char* dst = dst_[ctx.index].get();
      size_t offset = 0;
      while (ctx.Acquire(chunk_)) {
        copy_(dst + offset, src + offset, chunk_);
        ctx.Done(chunk_);
        offset += chunk_;
        if (offset >= span_) offset = 0;
      }
      return Status::Ok();
    };
    auto summary = RunPaced(spec, target, stop, reporter, worker);
    if (summary.ok()) summary->notes = notes_;
    return summary;
  }

 private:
  static CopyFn FindKernel(std::string_view name) {
    for (const auto& k : StreamingKernels()) {
      if (name == k.name) return k.copy;
    }
    return nullptr;
  }

  // Which streaming walk is faster depends on the CPU (four pages at once was 29 % ahead of one
  // line after the next on a Xeon, and 5-25 % behind on an AMD EPYC: docs/injectors.md), so
  // `auto` measures: every thread copies the first 16 MiB of its buffers (less with more than 4
  // threads) with each candidate, all threads together as in the run, five times each in
  // alternating order; the best median wins. About 20 ms at 2 x 20 GiB/s; the result is in the
  // notes.
  void ChooseKernel(const std::string& requested) {
    const auto kernels = StreamingKernels();
    if (requested != "auto" || kernels.size() == 1) {
      const char* name = requested != "auto" ? requested.c_str() : kernels.front().name;
      copy_ = FindKernel(name);
      notes_.push_back(std::string("kernel ") + name + (requested != "auto" ? " (set)" : ""));
      return;
    }
    // Per thread: 16 MiB, less with many threads (64 MiB per measurement in all), at least one
    // chunk: 2 threads copy 10 x 32 MiB, 1,024 threads 10 x 1 GiB.
    const size_t per_thread = std::min<size_t>({span_, 16 * kMiB, 64 * kMiB / threads_});
    const size_t trial = std::max(chunk_, per_thread / chunk_ * chunk_);
    constexpr int kRepeats = 5;
    std::vector<std::vector<double>> rates(kernels.size());
    // Measurement m uses kernel order[m]: ABBAABBAAB...
    std::vector<size_t> order;
    for (int r = 0; r < kRepeats; ++r) {
      for (size_t k = 0; k < kernels.size(); ++k) {
        order.push_back(r % 2 == 0 ? k : kernels.size() - 1 - k);
      }
    }
    using Clock = std::chrono::steady_clock;
    std::vector<Clock::time_point> done(threads_);
    Clock::time_point start;
    size_t m = 0;
    // Completion step (runs on one thread while the others wait): score the measurement that
    // just ended, then stamp the start of the next.
    auto step = [&]() noexcept {
      if (m > 0) {
        const double s =
            std::chrono::duration<double>(*std::max_element(done.begin(), done.end()) - start)
                .count();
        rates[order[m - 1]].push_back(static_cast<double>(trial) * threads_ / std::max(s, 1e-9));
      }
      ++m;
      start = Clock::now();
    };
    std::barrier sync(threads_, step);
    std::vector<std::thread> ts;
    for (int i = 0; i < threads_; ++i) {
      ts.emplace_back([&, i] {
        if (!pin_.empty()) PinTo(pin_[i % pin_.size()]);
        char* src = src_[i].get();
        char* dst = dst_[i].get();
        sync.arrive_and_wait();
        for (size_t k : order) {
          for (size_t off = 0; off < trial; off += chunk_)
            kernels[k].copy(dst + off, src + off, chunk_);
          done[i] = Clock::now();
          sync.arrive_and_wait();
        }
      });
    }
    for (auto& t : ts) t.join();
    size_t best = 0;
    std::vector<double> medians;
    for (auto& r : rates) {
      std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
      medians.push_back(r[r.size() / 2]);
      if (medians.back() > medians[best]) best = medians.size() - 1;
    }
    copy_ = kernels[best].copy;
    std::string note = std::string("kernel ") + kernels[best].name + " (trial:";
    for (size_t k = 0; k < kernels.size(); ++k) {
      note +=
          std::string(k ? ", " : " ") + kernels[k].name + " " + FormatBytesPerSecond(medians[k]);
    }
    notes_.push_back(note + ")");
  }

  int threads_ = 1;
  std::vector<int> pin_;
  size_t chunk_ = kMiB, span_ = 64 * kMiB;
  CopyFn copy_ = CopyRegular;
  std::vector<Buffer> src_, dst_;
  std::vector<std::string> notes_;
};

}  // namespace

std::unique_ptr<Injector> MakeMemcpyInjector() { return std::make_unique<MemcpyInjector>(); }

}  // namespace codl::injectors
