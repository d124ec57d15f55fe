// Loader: the input pipeline of one rank, shaped like torch.utils.data.DataLoader with workers.
// Loader threads each build whole batches (read the batch's files, then decode them in place)
// into a pool of host buffers; the training loop takes batches strictly in order. At most
// `prefetch` batches are claimed ahead of the oldest one the loop still holds, which bounds
// memory and keeps batches in order without a deadlock on buffers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/result.h"
#include "victim/device.h"
#include "victim/sample_reader.h"

namespace codl::victim {

struct LoaderConfig {
  std::vector<std::string> files;  // this rank's shard
  size_t sample_size = 0;
  int batch_size = 1;
  int threads = 1;
  int prefetch = 2;
  int decode_passes = 0;
  size_t min_buffer_bytes = 0;  // buffers also hold this much (the h2d copy's source)
  int64_t total_batches = 0;
  uint64_t seed = 1;  // shuffling: a fresh permutation of the shard every epoch
  ReaderConfig reader;
};

struct Batch {
  int64_t index = 0;
  uint8_t* data = nullptr;  // samples at multiples of RoundUpToIoAlign(sample_size)
  size_t bytes = 0;         // buffer size (>= min_buffer_bytes)
  double read_s = 0;        // wall time the loader thread spent reading this batch's files
  double decode_s = 0;      // wall time it spent decoding them
  uint64_t checksum = 0;
  int buffer = -1;
};

// Sample order: epoch e visits the shard in the permutation i -> (a_e * i + c_e) mod n, with a_e
// coprime to n. Stateless, so any loader thread can compute any batch's files without sharing
// a shuffled list (whose size would grow with steps).
class EpochShuffle {
 public:
  EpochShuffle(uint64_t n, uint64_t seed) : n_(n), seed_(seed) {}
  uint64_t At(uint64_t position) const;  // sample index for the position-th sample drawn

 private:
  uint64_t n_;
  uint64_t seed_;
};

class Loader {
 public:
  // Creates the readers (so an unavailable io_uring fails here, before any thread starts) and
  // starts the loader threads.
  static Result<std::unique_ptr<Loader>> Start(LoaderConfig config, Device* device);
  ~Loader();  // stops and joins the threads, frees the buffers

  // The next batch in order; blocks until it is ready. Fails when a loader thread failed.
  Result<Batch> Next();
  // Hands the batch's buffer back to the loader threads.
  void Release(const Batch& batch);

 private:
  explicit Loader(LoaderConfig config, Device* device);
  void Run(int worker);

  LoaderConfig config_;
  Device* device_;
  size_t stride_ = 0;
  EpochShuffle shuffle_;
  std::vector<std::unique_ptr<SampleReader>> readers_;
  std::vector<uint8_t*> buffers_;
  size_t buffer_bytes_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string error_;
  int64_t next_claim_ = 0;  // next batch index a loader thread will build
  int64_t next_take_ = 0;   // next batch index the training loop will take
  int64_t released_ = 0;    // batches handed back: claims stay below released_ + prefetch
  std::vector<int> free_buffers_;
  std::map<int64_t, Batch> ready_;
  std::vector<std::thread> threads_;
};

}  // namespace codl::victim
