// The io_uring injector's class and the helpers its two halves share: io_uring.cc (descriptor,
// options, the ring and its submit/reap loop, registration) and io_uring_setup.cc (Setup: the
// scratch directory, the I/O buffers and the file set). Private to those files: the registry
// knows only MakeIoUringInjector(). A named namespace, not an anonymous one, because both files
// define members of the same class.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/core/scratch.h"
#include "lib/common/random.h"
#include "lib/common/units.h"

namespace codl::injectors::io_uring_internal {

inline std::string Errno(int err) { return std::strerror(err); }

inline bool ModeReads(const std::string& m) { return m != "write" && m != "randwrite"; }

using Rng = XorShift64Star;  // spreads offsets, fills unique words (lib/common/random.h)

// Written data gets a fresh random word every this many bytes (fill and every write), so no
// two 4 KiB blocks of a run are alike: deduplicating storage cannot cheat the flood.
inline constexpr size_t kUniqueStrideBytes = 4096;

struct AlignedDelete {
  void operator()(char* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<char, AlignedDelete>;

// The ring's I/O buffers: `bytes`, 4 KiB-aligned. huge: 2 MiB-aligned and madvise'd
// MADV_HUGEPAGE (transparent huge pages), so one block is physically contiguous and an O_DIRECT
// I/O of it is one segment list entry: with 4 KiB pages a 1 MiB block is 256 segments, more
// than a virtio disk's 254, and reaches the device as two requests. `note` says why huge pages
// were not asked for (the kernel refused the advice; THP off). Null when out of memory.
AlignedBuffer AllocIoBuffers(size_t bytes, bool huge, std::string* note);

// The error for a filesystem that refuses O_DIRECT; `what` is the step that found out.
std::string DirectRefused(const std::string& dir, const std::string& what);

class IoUringInjector final : public Injector {
 public:
  ~IoUringInjector() override;

  const Descriptor& descriptor() const override;
  Status Unsupported(const HostInfo&) const override;
  using Injector::ToInjectorUnit;
  Result<double> ToInjectorUnit(const Rate& rate, const OptionValues& o) const override;
  Status CheckOptions(const OptionValues& o) const override;

  Status Setup(const OptionValues& o, const HostInfo& host, HostServices&,
               const StopToken& stop) override;
  double SetupEstimateS(const OptionValues& o, const HostInfo&) const override;
  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override;
  Status PrepareStart() override;
  FirstLoad FirstLoadTimes() const override {
    return {first_submit_ns_.load(std::memory_order_relaxed),
            first_complete_ns_.load(std::memory_order_relaxed)};
  }

 private:
  Status CreateFiles(const StopToken& stop);
  struct Ring;  // a ring with its registered buffers and files
#ifdef CODL_HAVE_URING
  class RingLoop;  // one worker's ring: the steps of Loop()
  Status Loop(WorkerContext& ctx);
  // The ring with the best flags this kernel takes, then registered buffers and files;
  // `disabled`: created IORING_SETUP_R_DISABLED, to be enabled by the thread that submits.
  Status CreateRing(Ring* ring, bool disabled);
#endif
  void Note(const std::string& n) {
    if (std::find(notes_.begin(), notes_.end(), n) == notes_.end()) notes_.push_back(n);
  }

  std::string mode_ = "randread";
  int rwmix_read_ = 50;
  uint64_t block_size_ = kMiB;
  int queue_depth_ = 32;
  unsigned complete_batch_ = 8;
  unsigned submit_batch_ = 1;  // I/Os per submit call; 0: all ready I/Os in one call
  int nr_files_ = 4;
  uint64_t file_size_ = 256 * kMiB;
  bool direct_ = true, prefill_ = true, reg_buffers_ = true, reg_files_ = true, sqpoll_ = false;
  bool huge_buffers_ = true;
  std::string dir_;
  RunDir run_dir_;
  std::vector<int> fds_;
  AlignedBuffer buffers_;  // queue_depth × block_size
  std::vector<std::string> notes_;
  // The latest Run()'s first submit and first completion (FirstLoadTimes), set by its worker.
  std::atomic<int64_t> first_submit_ns_{0}, first_complete_ns_{0};
  // The latest Run()'s submit calls and the I/Os they submitted (set when its worker ends).
  std::atomic<uint64_t> submit_calls_{0}, submitted_ios_{0};
  std::unique_ptr<Ring> prepared_;  // PrepareStart's ring, for the next Run()
};

}  // namespace codl::injectors::io_uring_internal
