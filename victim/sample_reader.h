// SampleReader: reads whole sample files into aligned buffers, the storage half of a loader
// thread. One instance per loader thread (not thread-safe). Two engines: POSIX pread, one file
// at a time, and io_uring with the whole batch's reads in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/common/result.h"
#include "victim/options.h"

namespace codl::victim {

// Buffers and strides handed to ReadBatch are multiples of this, as O_DIRECT requires for any
// logical block size up to 4 KiB.
inline constexpr size_t kIoAlign = 4096;

inline size_t RoundUpToIoAlign(size_t n) { return (n + kIoAlign - 1) / kIoAlign * kIoAlign; }

struct ReadRequest {
  const std::string* path;
  uint8_t* dst;  // kIoAlign-aligned, room for RoundUpToIoAlign(sample_size) bytes
};

class SampleReader {
 public:
  virtual ~SampleReader() = default;
  // Reads every request's file completely (exactly `sample_size` bytes each). Fails when a file
  // is shorter or unreadable; the message names the file.
  virtual Status ReadBatch(const std::vector<ReadRequest>& batch, size_t sample_size) = 0;
  uint64_t bytes_read() const { return bytes_read_; }

 protected:
  uint64_t bytes_read_ = 0;
};

struct ReaderConfig {
  ReaderKind kind = ReaderKind::kPosix;
  IoMode mode = IoMode::kDirect;  // already resolved by ResolveIoMode (never falls back here)
  size_t read_block = 1 << 20;
  int queue_depth = 8;
};

// Decides the mode that will actually run: kDirect is tried on `probe_path` (open + one aligned
// read); where the file system refuses O_DIRECT it becomes kFadvise and `note` says why.
IoMode ResolveIoMode(IoMode requested, const std::string& probe_path, std::string* note);

Result<std::unique_ptr<SampleReader>> MakeSampleReader(const ReaderConfig& config);

// The io_uring engine (uring_reader.cc); an error when built without liburing or when the
// kernel refuses io_uring (old kernel, seccomp).
Result<std::unique_ptr<SampleReader>> MakeUringReader(const ReaderConfig& config);

// open(2) flags for a mode.
int OpenFlags(IoMode mode);

}  // namespace codl::victim
