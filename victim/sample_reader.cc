#include "victim/sample_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace codl::victim {
namespace {

std::string ErrnoText(const std::string& what, const std::string& path, int err) {
  return what + " " + path + ": " + std::strerror(err);
}

// POSIX engine: one file at a time, read_block bytes per pread. Like a DataLoader worker that
// opens and reads its samples synchronously.
class PosixReader : public SampleReader {
 public:
  explicit PosixReader(const ReaderConfig& c) : config_(c) {}

  Status ReadBatch(const std::vector<ReadRequest>& batch, size_t sample_size) override {
    for (const ReadRequest& r : batch) {
      if (Status s = ReadOne(r, sample_size); !s.ok()) return s;
    }
    return Status::Ok();
  }

 private:
  Status ReadOne(const ReadRequest& r, size_t sample_size) {
    int fd = ::open(r.path->c_str(), OpenFlags(config_.mode));
    if (fd < 0) return Err(ErrnoText("open", *r.path, errno));
    size_t off = 0;
    Status status;
    while (off < sample_size) {
      // With O_DIRECT the last request is rounded up to the alignment; the kernel returns the
      // short count at end of file.
      size_t want = std::min(config_.read_block, sample_size - off);
      if (config_.mode == IoMode::kDirect) want = RoundUpToIoAlign(want);
      ssize_t n = ::pread(fd, r.dst + off, want, static_cast<off_t>(off));
      if (n < 0) {
        if (errno == EINTR) continue;
        status = Err(ErrnoText("read", *r.path, errno));
        break;
      }
      if (n == 0) {
        status = Err(*r.path + " is shorter than the dataset's sample size (" +
                     std::to_string(off) + " < " + std::to_string(sample_size) + " bytes)");
        break;
      }
      off += static_cast<size_t>(n);
      if (config_.mode == IoMode::kDirect && off < sample_size && off % kIoAlign != 0) {
        status = Err("short O_DIRECT read in " + *r.path + " at offset " + std::to_string(off));
        break;
      }
    }
    // Drop what buffered reads cached, so the next epoch reads storage again.
    if (config_.mode == IoMode::kFadvise) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (status.ok()) bytes_read_ += sample_size;
    return status;
  }

  ReaderConfig config_;
};

}  // namespace

int OpenFlags(IoMode mode) {
  int flags = O_RDONLY | O_CLOEXEC;
  if (mode == IoMode::kDirect) flags |= O_DIRECT;
  return flags;
}

IoMode ResolveIoMode(IoMode requested, const std::string& probe_path, std::string* note) {
  if (requested != IoMode::kDirect) return requested;
  int fd = ::open(probe_path.c_str(), OpenFlags(IoMode::kDirect));
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    // Some file systems accept O_DIRECT at open and refuse it at the first read.
    void* buf = std::aligned_alloc(kIoAlign, kIoAlign);
    if (::pread(fd, buf, kIoAlign, 0) < 0) err = errno;
    std::free(buf);
    ::close(fd);
  }
  if (err == EINVAL || err == EOPNOTSUPP) {
    *note = "O_DIRECT refused on " + probe_path + " (" + std::strerror(err) +
            "); reading buffered and dropping pages with POSIX_FADV_DONTNEED after each file";
    return IoMode::kFadvise;
  }
  // Other errors (missing file, permissions) surface with a better message at the first read.
  return IoMode::kDirect;
}

Result<std::unique_ptr<SampleReader>> MakeSampleReader(const ReaderConfig& config) {
  if (config.kind == ReaderKind::kIoUring) return MakeUringReader(config);
  return std::unique_ptr<SampleReader>(new PosixReader(config));
}

}  // namespace codl::victim
