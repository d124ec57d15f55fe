#include "victim/loader.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "lib/common/clock.h"
#include "lib/common/units.h"
#include "victim/decode.h"
#include "victim/rng.h"

namespace codl::victim {
uint64_t EpochShuffle::At(uint64_t position) const {
  if (n_ <= 1) return 0;
  const uint64_t epoch = position / n_, i = position % n_;
  SplitMix64 rng(MixSeed(seed_, epoch));
  uint64_t a = 1 + rng.Below(n_ - 1);
  while (std::gcd(a, n_) != 1) a = 1 + rng.Below(n_ - 1);
  const uint64_t c = rng.Below(n_);
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * i + c) % n_);
}

Loader::Loader(LoaderConfig config, Device* device)
    : config_(std::move(config)),
      device_(device),
      stride_(RoundUpToIoAlign(config_.sample_size)),
      shuffle_(config_.files.size(), config_.seed) {}

Result<std::unique_ptr<Loader>> Loader::Start(LoaderConfig config, Device* device) {
  if (config.files.empty()) return Err("loader: no sample files in this rank's shard");
  std::unique_ptr<Loader> loader(new Loader(std::move(config), device));
  const LoaderConfig& c = loader->config_;
  for (int t = 0; t < c.threads; ++t) {
    auto reader = MakeSampleReader(c.reader);
    if (!reader.ok()) return reader.status();
    loader->readers_.push_back(std::move(*reader));
  }
  loader->buffer_bytes_ =
      std::max(loader->stride_ * static_cast<size_t>(c.batch_size), c.min_buffer_bytes);
  for (int b = 0; b < c.prefetch; ++b) {
    void* p = device->AllocHost(loader->buffer_bytes_);
    if (p == nullptr) {
      return Err("cannot allocate " + FormatSize(static_cast<double>(loader->buffer_bytes_)) +
                 " for batch buffer " + std::to_string(b) + " (lower --prefetch or --batch-size)");
    }
    loader->buffers_.push_back(static_cast<uint8_t*>(p));
    loader->free_buffers_.push_back(b);
  }
  for (int t = 0; t < c.threads; ++t) {
    loader->threads_.emplace_back([l = loader.get(), t] { l->Run(t); });
  }
  return loader;
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (uint8_t* b : buffers_) device_->FreeHost(b);
}

void Loader::Run(int worker) {
  SampleReader& reader = *readers_[static_cast<size_t>(worker)];
  const size_t batch = static_cast<size_t>(config_.batch_size);
  std::vector<ReadRequest> requests(batch);
  for (;;) {
    int64_t k;
    int buffer;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stop_ || next_claim_ >= config_.total_batches ||
               (next_claim_ < released_ + config_.prefetch && !free_buffers_.empty());
      });
      if (stop_ || next_claim_ >= config_.total_batches) return;
      k = next_claim_++;
      buffer = free_buffers_.back();
      free_buffers_.pop_back();
    }
    uint8_t* base = buffers_[static_cast<size_t>(buffer)];
    for (size_t j = 0; j < batch; ++j) {
      const uint64_t sample = shuffle_.At(static_cast<uint64_t>(k) * batch + j);
      requests[j] = {&config_.files[sample], base + j * stride_};
    }
    Batch b;
    b.index = k;
    b.data = base;
    b.bytes = buffer_bytes_;
    b.buffer = buffer;
    const double t0 = SteadySeconds();
    Status s = reader.ReadBatch(requests, config_.sample_size);
    const double t1 = SteadySeconds();
    if (s.ok() && config_.decode_passes > 0) {
      for (size_t j = 0; j < batch; ++j) {
        b.checksum ^= DecodeSample(base + j * stride_, config_.sample_size, config_.decode_passes);
      }
    }
    b.read_s = t1 - t0;
    b.decode_s = SteadySeconds() - t1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        if (error_.empty()) error_ = s.error();
        stop_ = true;
      } else {
        ready_.emplace(k, b);
      }
    }
    cv_.notify_all();
    if (!s.ok()) return;
  }
}

Result<Batch> Loader::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return ready_.count(next_take_) > 0 || !error_.empty(); });
  if (!error_.empty()) return Err(error_);
  auto node = ready_.extract(next_take_++);
  return node.mapped();
}

void Loader::Release(const Batch& batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_buffers_.push_back(batch.buffer);
    ++released_;
  }
  cv_.notify_all();
}

}  // namespace codl::victim
