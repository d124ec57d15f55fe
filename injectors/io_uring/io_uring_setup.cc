// The io_uring injector's Setup (io_uring_injector.h): everything before Run() that takes time
// or touches the disk: the scratch directory and its free space, the I/O buffers with their
// incompressible data, and the file set (created, preallocated, filled and flushed), plus
// SetupEstimateS, the controller's estimate of that cost. Apart from io_uring.cc (descriptor,
// ring and submit loop) because preparing files is a concern of its own: none of it uses
// liburing.
//
// Safety: files are created only inside this run's own directory, DIR/codl-inject.<pid>.<start>/,
// where DIR must resolve under a scratch root (scratch.h); a block device is never opened.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "injectors/core/scratch.h"
#include "injectors/io_uring/io_uring_injector.h"
#include "lib/common/units.h"

namespace codl::injectors::io_uring_internal {
namespace {

AlignedBuffer AllocAligned(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(bytes, 4096)) != 0) return nullptr;
  return AlignedBuffer(static_cast<char*>(p));
}

}  // namespace

AlignedBuffer AllocIoBuffers(size_t bytes, bool huge, std::string* note) {
  constexpr size_t kHuge = 2 * kMiB;
  if (!huge || bytes < kHuge) return AllocAligned(bytes);
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, rounded) != 0) return nullptr;
  if (madvise(p, rounded, MADV_HUGEPAGE) != 0) {
    *note = "huge_buffers: the kernel refused MADV_HUGEPAGE (" + Errno(errno) +
            "); large blocks may reach the device split";
  }
  return AlignedBuffer(static_cast<char*>(p));
}

std::string DirectRefused(const std::string& dir, const std::string& what) {
  return "io_uring: the filesystem of '" + dir + "' refused O_DIRECT (" + what +
         ": Invalid argument); use --set direct=false for buffered I/O (reads may then be "
         "served from the page cache), or a block_size that is a multiple of the device's "
         "logical block size";
}

Status IoUringInjector::Setup(const OptionValues& o, const HostInfo& host, HostServices&,
                              const StopToken& stop) {
  mode_ = o.String("mode");
  rwmix_read_ = static_cast<int>(o.Int("rwmix_read"));
  block_size_ = o.Size("block_size");
  queue_depth_ = static_cast<int>(o.Int("queue_depth"));
  complete_batch_ = o.Int("complete_batch") > 0 ? static_cast<unsigned>(o.Int("complete_batch"))
                                                : std::max(1, queue_depth_ / 4);
  submit_batch_ = static_cast<unsigned>(o.Int("submit_batch"));
  nr_files_ = static_cast<int>(o.Int("nr_files"));
  file_size_ = o.Size("file_size") / block_size_ * block_size_;  // whole blocks only
  direct_ = o.Bool("direct");
  prefill_ = o.Bool("prefill") || ModeReads(mode_);
  reg_buffers_ = o.Bool("registered_buffers");
  reg_files_ = o.Bool("registered_files");
  sqpoll_ = o.Bool("sqpoll");
  huge_buffers_ = o.Bool("huge_buffers");

  auto dir = ResolveScratchDir(o.String("dir"), host.scratch_roots);
  if (!dir.ok()) return dir.status().WithContext("option 'dir'");
  dir_ = *dir;
  struct statvfs vfs;
  const double need = static_cast<double>(file_size_) * nr_files_;
  if (statvfs(dir_.c_str(), &vfs) == 0) {
    const double avail = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
    if (need > 0.95 * avail) {
      return Err("io_uring: the file set needs " + FormatSize(need) +
                 " (nr_files x file_size) but '" + dir_ + "' has " + FormatSize(avail) + " free");
    }
  }
  // By descriptor from the scratch root: `dir_` was checked by name, and may have been swapped.
  auto run_dir = RunDir::CreateBeneath(dir_, host.scratch_roots);
  if (!run_dir.ok()) return run_dir.status().WithContext("io_uring");
  run_dir_ = std::move(*run_dir);

  std::string note;
  buffers_ =
      AllocIoBuffers(block_size_ * static_cast<uint64_t>(queue_depth_), huge_buffers_, &note);
  if (!note.empty()) Note(note);
  if (!buffers_) return Err("io_uring: cannot allocate I/O buffers");
  // Incompressible, non-zero data: storage that compresses or dedups zeros must not cheat.
  Rng rng{0x9e3779b97f4a7c15ULL};
  auto* words = reinterpret_cast<uint64_t*>(buffers_.get());
  for (size_t i = 0; i < block_size_ * queue_depth_ / 8; ++i) words[i] = rng.Next();
  return CreateFiles(stop);
}

// Setup's cost is the file set: written in full (then fdatasync), or only preallocated with
// prefill=false. The rates are deliberately low (a loaded, shared or network disk), because an
// underestimate makes this antagonist start after the common start.
double IoUringInjector::SetupEstimateS(const OptionValues& o, const HostInfo&) const {
  constexpr double kFillBytesPerS = 256.0 * kMiB;
  constexpr double kPerFileS = 0.05;  // create + fallocate + fdatasync of an empty file
  const double files = static_cast<double>(o.Int("nr_files"));
  const bool prefill = o.Bool("prefill") || ModeReads(o.String("mode"));
  const double fill = prefill ? files * static_cast<double>(o.Size("file_size")) : 0;
  return files * kPerFileS + fill / kFillBytesPerS;
}

Status IoUringInjector::CreateFiles(const StopToken& stop) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (direct_ ? O_DIRECT : 0);
  const size_t fill_chunk = std::min<uint64_t>(4 * kMiB, file_size_);
  AlignedBuffer fill = prefill_ ? AllocAligned(fill_chunk) : nullptr;
  Rng rng{0x6a09e667f3bcc909ULL};
  auto* fill_words = reinterpret_cast<uint64_t*>(fill.get());
  if (fill) {  // random data, and below each 4 KiB of each chunk made unique
    for (size_t k = 0; k < fill_chunk / 8; ++k) fill_words[k] = rng.Next();
  }
  for (int i = 0; i < nr_files_; ++i) {
    const std::string name = "file." + std::to_string(i);
    // openat on our own fresh run dir, O_EXCL|O_NOFOLLOW: never an existing file or a symlink.
    const int fd = openat(run_dir_.fd(), name.c_str(), flags, 0600);
    if (fd < 0) {
      if (errno == EINVAL && direct_) return Err(DirectRefused(dir_, "open"));
      return Err("io_uring: cannot create " + run_dir_.path() + "/" + name + ": " + Errno(errno));
    }
    fds_.push_back(fd);
    if (fallocate(fd, 0, 0, static_cast<off_t>(file_size_)) != 0) {
      if (errno == ENOSPC) return Err("io_uring: no space for the file set in '" + dir_ + "'");
      if (ftruncate(fd, static_cast<off_t>(file_size_)) != 0) {  // fs without fallocate
        return Err("io_uring: cannot size " + name + ": " + Errno(errno));
      }
    }
    if (!fill) {
      fdatasync(fd);  // persist the allocation now, not during the measurement
      continue;
    }
    // Read modes need real data: a preallocated (unwritten) extent reads as zeros without
    // touching the device, which would make the "flood" a no-op. Write modes fill too (fio's
    // layout): the first direct write into an unwritten extent also converts it (a metadata
    // update), which a steady-state flood should not be measuring.
    for (uint64_t off = 0; off < file_size_; off += fill_chunk) {
      if (stop.stop_requested()) return Err("stopped during setup");
      const size_t len = std::min<uint64_t>(fill_chunk, file_size_ - off);
      // Every 4 KiB written differs from every other: storage that deduplicates (ZFS, VDO, some
      // arrays and VM hosts) must not serve the whole file set from one physical block.
      for (size_t k = 0; k < len / 8; k += kUniqueStrideBytes / 8) fill_words[k] = rng.Next();
      const ssize_t n = pwrite(fd, fill.get(), len, static_cast<off_t>(off));
      if (n < 0 && errno == EINVAL && direct_) return Err(DirectRefused(dir_, "first write"));
      if (n != static_cast<ssize_t>(len)) {
        return Err("io_uring: filling " + name +
                   " failed: " + (n < 0 ? Errno(errno) : "short write"));
      }
    }
    // Flush the fill all the way down, O_DIRECT included: O_DIRECT bypasses the page cache,
    // not the device's (or a VM host's) write cache, and writing back our own fill during the
    // measurement would steal bandwidth from it. (fio does the same: create_fsync=1.)
    if (fdatasync(fd) != 0)
      return Err("io_uring: fdatasync of " + name + " failed: " + Errno(errno));
    // Buffered mode: drop the data from the page cache so reads start cold.
    if (!direct_) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  return Status::Ok();
}

}  // namespace codl::injectors::io_uring_internal
