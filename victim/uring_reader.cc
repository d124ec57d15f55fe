// The io_uring engine: every read of a batch is queued, up to --queue-depth in flight, the way
// DLIO's and fio's io_uring paths keep the device busy. Files are opened when their first read
// is submitted and closed when their last one completes, so at most ~queue-depth are open.
#include "victim/sample_reader.h"

#ifdef CODL_VICTIM_HAVE_URING

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>

namespace codl::victim {
namespace {

class UringReader : public SampleReader {
 public:
  explicit UringReader(const ReaderConfig& c) : config_(c) {}
  ~UringReader() override {
    if (initialized_) io_uring_queue_exit(&ring_);
  }

  Status Init() {
    int rc = io_uring_queue_init(static_cast<unsigned>(config_.queue_depth), &ring_, 0);
    if (rc < 0) {
      return Err(std::string("io_uring is unavailable here (io_uring_queue_init: ") +
                 std::strerror(-rc) + "); use --reader posix");
    }
    initialized_ = true;
    return Status::Ok();
  }

  Status ReadBatch(const std::vector<ReadRequest>& batch, size_t sample_size) override {
    files_.assign(batch.size(), FileState{});
    chunks_.clear();
    for (size_t f = 0; f < batch.size(); ++f) {
      for (size_t off = 0; off < sample_size; off += config_.read_block) {
        chunks_.push_back({f, off, std::min(config_.read_block, sample_size - off)});
        ++files_[f].chunks_left;
      }
    }
    std::deque<size_t> pending;
    for (size_t c = 0; c < chunks_.size(); ++c) pending.push_back(c);

    Status status;
    int inflight = 0;
    while (inflight > 0 || (status.ok() && !pending.empty())) {
      while (status.ok() && !pending.empty() && inflight < config_.queue_depth) {
        const size_t c = pending.front();
        Status s = Submit(batch, c);
        if (!s.ok()) {
          status = s;
          break;
        }
        pending.pop_front();
        ++inflight;
      }
      if (inflight == 0) break;
      int rc = io_uring_submit_and_wait(&ring_, 1);
      if (rc < 0 && rc != -EINTR) {
        // Cannot even wait: the buffers may still be written by the kernel, so this is fatal.
        return Err(std::string("io_uring_submit_and_wait: ") + std::strerror(-rc));
      }
      io_uring_cqe* cqe;
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        --inflight;
        Status s = Complete(batch, io_uring_cqe_get_data64(cqe), cqe->res, pending);
        if (status.ok() && !s.ok()) status = s;  // keep reaping: reads in flight own buffers
      }
      io_uring_cq_advance(&ring_, seen);
    }
    for (FileState& f : files_) {
      if (f.fd >= 0) ::close(f.fd);
      f.fd = -1;
    }
    if (status.ok()) bytes_read_ += sample_size * batch.size();
    return status;
  }

 private:
  struct FileState {
    int fd = -1;
    size_t chunks_left = 0;
  };
  struct Chunk {
    size_t file;
    size_t offset;
    size_t length;  // bytes still wanted (short reads shrink it)
  };

  Status Submit(const std::vector<ReadRequest>& batch, size_t c) {
    Chunk& ch = chunks_[c];
    FileState& f = files_[ch.file];
    const std::string& path = *batch[ch.file].path;
    if (f.fd < 0) {
      f.fd = ::open(path.c_str(), OpenFlags(config_.mode));
      if (f.fd < 0) return Err("open " + path + ": " + std::strerror(errno));
    }
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) return Err("io_uring: submission queue full");
    }
    size_t len = ch.length;
    if (config_.mode == IoMode::kDirect) len = RoundUpToIoAlign(len);
    io_uring_prep_read(sqe, f.fd, batch[ch.file].dst + ch.offset, static_cast<unsigned>(len),
                       ch.offset);
    io_uring_sqe_set_data64(sqe, c);
    return Status::Ok();
  }

  Status Complete(const std::vector<ReadRequest>& batch, uint64_t c, int res,
                  std::deque<size_t>& pending) {
    Chunk& ch = chunks_[c];
    FileState& f = files_[ch.file];
    const std::string& path = *batch[ch.file].path;
    if (res == -EAGAIN || res == -EINTR) {
      pending.push_back(c);
      return Status::Ok();
    }
    if (res < 0) return Err("read " + path + ": " + std::strerror(-res));
    if (res == 0) return Err(path + " is shorter than the dataset's sample size");
    if (static_cast<size_t>(res) < ch.length) {
      ch.offset += static_cast<size_t>(res);
      ch.length -= static_cast<size_t>(res);
      if (config_.mode == IoMode::kDirect && ch.offset % kIoAlign != 0) {
        return Err("short O_DIRECT read in " + path + " at offset " + std::to_string(ch.offset));
      }
      pending.push_back(c);
      return Status::Ok();
    }
    if (--f.chunks_left == 0) {
      if (config_.mode == IoMode::kFadvise) ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(f.fd);
      f.fd = -1;
    }
    return Status::Ok();
  }

  ReaderConfig config_;
  io_uring ring_{};
  bool initialized_ = false;
  std::vector<FileState> files_;
  std::vector<Chunk> chunks_;
};

}  // namespace

Result<std::unique_ptr<SampleReader>> MakeUringReader(const ReaderConfig& config) {
  auto reader = std::make_unique<UringReader>(config);
  if (Status s = reader->Init(); !s.ok()) return s;
  return std::unique_ptr<SampleReader>(std::move(reader));
}

}  // namespace codl::victim

#else  // !CODL_VICTIM_HAVE_URING

namespace codl::victim {

Result<std::unique_ptr<SampleReader>> MakeUringReader(const ReaderConfig&) {
  return Err("--reader io_uring: this codl-victim was built without liburing; use --reader posix");
}

}  // namespace codl::victim

#endif
