// cuda_memcpy: PCIe (H2D, D2H, bidirectional) or HBM (D2D) bandwidth antagonist.
//
// One worker thread per stream ("lane"); each keeps `depth` cudaMemcpyAsync copies of `size`
// bytes in flight and counts a copy's bytes when its event completes, never when it is
// enqueued. Two copies in flight per stream are enough for the copy engine never to wait on
// the host between copies (more are queued automatically when copies are shorter than the
// event polling, as 64 MiB D2D copies are), which is what lets --max match a bare
// cudaMemcpyAsync loop (tests/gpu/memcpy_baseline.cu). Host buffers are pinned (cudaHostAlloc):
// pageable memory would measure the CPU staging copy, not the bus.
//
// bidir: the H2D share of the bytes is held at h2d_share (copy_split.h); otherwise the faster
// direction took what it could. d2d with peer_device: the destination lives on another GPU and
// the copies go over NVLink (or PCIe) through peer access, which loads the interconnect without
// NCCL (and without NCCL's kernels on the SMs).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "injectors/core/injector.h"
#include "injectors/core/paced_run.h"
#include "injectors/gpu/copy_split.h"
#include "injectors/gpu/gpu_probe.h"
#include "lib/common/units.h"

#ifdef CODL_HAVE_CUDA
#include "injectors/gpu/cuda_common.h"
#endif

namespace codl::injectors {
namespace {

class CudaMemcpyInjector final : public Injector {
 public:
  ~CudaMemcpyInjector() override { Release(); }

  const Descriptor& descriptor() const override {
    static const Descriptor d{
        "cuda_memcpy",
        "PCIe / HBM bandwidth",
        "bytes/s",
        "cudaMemcpyAsync flood: h2d, d2h, d2d or bidir, pinned host memory, N streams",
        "bytes copied per second, each byte once; bidir adds both directions (telemetry 'h2d' "
        "is the H2D half); d2d counts a byte once although HBM reads and writes it",
        {
            EnumOption("direction", "h2d", {"h2d", "d2h", "d2d", "bidir"},
                       "h2d, d2h, d2d, or bidir (h2d and d2h at once, each on its own streams)"),
            SizeOption("size", "64MiB", 4096, 16.0 * (1ull << 30),
                       "bytes per copy; also the granularity of the rate control"),
            IntOption("streams", "1", 1, 16, "CUDA streams (worker threads) per direction"),
            IntOption("depth", "2", 1, 16,
                      "copies in flight per stream, at least (raised automatically while "
                      "copies are shorter than ~0.5 ms, e.g. d2d)"),
            IntOption("device", "0", 0, 1023,
                      "CUDA device index (as CUDA_VISIBLE_DEVICES shows it)"),
            DoubleOption("h2d_share", "0.5", 0.05, 0.95,
                         "bidir: fraction of the copied bytes that go host-to-device"),
            IntOption("peer_device", "-1", -1, 1023,
                      "d2d: copy into this other GPU's memory (peer access over NVLink or PCIe); "
                      "-1 = within `device` (HBM)"),
        },
        Capabilities{.needs_gpu = true},
        {{"size", "4MiB"}},
    };
    return d;
  }

  Status Unsupported(const HostInfo&) const override { return gpu::CudaUsable(); }

  Status CheckOptions(const OptionValues& o) const override {
    const int64_t peer = o.Int("peer_device");
    if (peer < 0) return Status::Ok();
    if (o.String("direction") != "d2d") {
      return InvalidArgument("option 'peer_device' applies to direction=d2d only (got direction=" +
                             o.String("direction") + ")");
    }
    if (peer == o.Int("device")) {
      return InvalidArgument("option 'peer_device': " + std::to_string(peer) +
                             " is `device` itself; use -1 for copies within one GPU");
    }
    return Status::Ok();
  }

  Status Setup(const OptionValues& options, const HostInfo&, HostServices&,
               const StopToken& stop) override {
#ifdef CODL_HAVE_CUDA
    direction_ = options.String("direction");
    size_ = options.Size("size");
    depth_ = static_cast<int>(options.Int("depth"));
    device_ = static_cast<int>(options.Int("device"));
    const int streams = static_cast<int>(options.Int("streams"));
    h2d_share_ = options.Double("h2d_share");
    peer_ = static_cast<int>(options.Int("peer_device"));
    gpu::MarkCudaUsedHere();
    int count = 0;
    CODL_CUDA_RETURN(cudaGetDeviceCount(&count));
    for (const auto& [name, index] : {std::pair{"device", device_}, std::pair {
                                        "peer_device",
                                        peer_
                                      }}) {
      if (index >= count) {
        return Err(std::string("option '") + name + "': " + std::to_string(index) + " but only " +
                   std::to_string(count) + " CUDA device(s) are visible");
      }
    }
    CODL_CUDA_RETURN(cudaSetDevice(device_));
    if (peer_ >= 0) {
      if (Status s = EnablePeer(); !s.ok()) return s;
    }
    cudaDeviceProp prop{};
    CODL_CUDA_RETURN(cudaGetDeviceProperties(&prop, device_));
    device_name_ = prop.name;

    std::vector<std::string> kinds;
    if (direction_ == "bidir") {
      kinds = {"h2d", "d2h"};
    } else {
      kinds = {direction_};
    }
    int device_buffers = 0;
    for (const auto& k : kinds) device_buffers += (k == "d2d" && peer_ < 0 ? 2 : 1) * streams;
    size_t free_bytes = 0, total_bytes = 0;
    CODL_CUDA_RETURN(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double need = static_cast<double>(device_buffers) * static_cast<double>(size_);
    if (need > 0.9 * static_cast<double>(free_bytes)) {
      return Err("cuda_memcpy: needs " + FormatSize(need) + " of device memory (" +
                 std::to_string(device_buffers) + " buffers of " + FormatSize(size_) + "), " +
                 FormatSize(static_cast<double>(free_bytes)) + " free on device " +
                 std::to_string(device_));
    }
    for (const auto& kind : kinds) {
      for (int i = 0; i < streams; ++i) {
        if (stop.stop_requested()) return Err("stopped during setup");
        lanes_.push_back(Lane{});
        Lane& lane = lanes_.back();
        lane.h2d = kind == "h2d";
        lane.kind = kind == "h2d"   ? cudaMemcpyHostToDevice
                    : kind == "d2h" ? cudaMemcpyDeviceToHost
                                    : cudaMemcpyDeviceToDevice;
        lane.src_host = kind == "h2d";
        lane.dst_host = kind == "d2h";
        CODL_CUDA_RETURN(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
        if (Status s = Allocate(&lane.src, lane.src_host); !s.ok()) return s;
        if (peer_ >= 0) {
          if (Status s = AllocateOnPeer(&lane.dst); !s.ok()) return s;
        } else if (Status s = Allocate(&lane.dst, lane.dst_host); !s.ok()) {
          return s;
        }
      }
    }
    CODL_CUDA_RETURN(cudaDeviceSynchronize());
    return Status::Ok();
#else
    return Err("cuda_memcpy: built without CUDA");
#endif
  }

  Result<RunSummary> Run(const Target& target, const StopToken& stop, Reporter& reporter) override {
#ifdef CODL_HAVE_CUDA
    if (lanes_.empty()) return Err("cuda_memcpy: Run before Setup");
    PacedRunSpec spec;
    spec.workers = static_cast<int>(lanes_.size());
    if (direction_ == "bidir") spec.ops_name = "h2d";  // the H2D half, in bytes/s
    // A lane's copies in flight plus the one completing (docs/gpu.md, "cuda_memcpy").
    spec.controller.min_deficit_units =
        static_cast<double>(size_) * (depth_ + 1) * static_cast<double>(lanes_.size());
    gpu::CopySplit split(h2d_share_);
    const bool bidir = direction_ == "bidir";
    auto worker = [this, &split, bidir](WorkerContext& ctx) -> Status {
      const Lane& lane = lanes_[static_cast<size_t>(ctx.index)];
      gpu::PacedStreamSpec ps;
      ps.device = device_;
      ps.depth = depth_;
      ps.units = size_;
      ps.ops = lane.h2d ? size_ : 0;
      if (bidir) ps.ready = [&split, &lane] { return split.MayIssue(lane.h2d); };
      return gpu::RunPacedStream(ctx, lane.stream, ps, [&](cudaStream_t s) -> Status {
        if (peer_ >= 0) {
          CODL_CUDA_RETURN(cudaMemcpyPeerAsync(lane.dst, peer_, lane.src, device_, size_, s));
        } else {
          CODL_CUDA_RETURN(cudaMemcpyAsync(lane.dst, lane.src, size_, lane.kind, s));
        }
        if (bidir) split.Issued(lane.h2d, size_);
        return Status::Ok();
      });
    };
    auto summary = RunPaced(spec, target, stop, reporter, worker);
    if (summary.ok() && peer_ >= 0) {
      summary->notes.push_back("d2d from device " + std::to_string(device_) + " into device " +
                               std::to_string(peer_) + " through peer access");
    }
    if (summary.ok() && direction_ != "d2d") {
      summary->notes.push_back(
          "device " + std::to_string(device_) + " (" + device_name_ +
          "): pinned host buffers follow this process's NUMA policy; bind codl-inject to the "
          "GPU's NUMA node (numactl) for the PCIe peak");
    }
    return summary;
#else
    return Err("cuda_memcpy: built without CUDA");
#endif
  }

 private:
#ifdef CODL_HAVE_CUDA
  struct Lane {
    bool h2d = false;
    cudaMemcpyKind kind = cudaMemcpyDefault;
    bool src_host = false, dst_host = false;
    void* src = nullptr;
    void* dst = nullptr;
    cudaStream_t stream = nullptr;
  };

  // Buffers are written once so no page is first touched inside a measured copy.
  Status Allocate(void** p, bool host) {
    if (host) {
      // Portable: pinned for every context, should a future option copy to another GPU.
      CODL_CUDA_RETURN(cudaHostAlloc(p, size_, cudaHostAllocPortable));
      std::memset(*p, 0x5a, size_);
    } else {
      CODL_CUDA_RETURN(cudaMalloc(p, size_));
      CODL_CUDA_RETURN(cudaMemset(*p, 0x5a, size_));
    }
    return Status::Ok();
  }

  // Peer copies need access enabled from `device` to the peer (it stays on for the context).
  Status EnablePeer() {
    int can = 0;
    CODL_CUDA_RETURN(cudaDeviceCanAccessPeer(&can, device_, peer_));
    if (can == 0) {
      return Err("cuda_memcpy: device " + std::to_string(device_) + " cannot access device " +
                 std::to_string(peer_) + " as a peer (no NVLink/P2P path; see nvidia-smi topo -m)");
    }
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer_, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();  // clear the sticky-until-read error
    } else {
      CODL_CUDA_RETURN(e);
    }
    return Status::Ok();
  }

  Status AllocateOnPeer(void** p) {
    CODL_CUDA_RETURN(cudaSetDevice(peer_));
    size_t free_bytes = 0, total = 0;
    Status s = Status::Ok();
    if (cudaError_t e = cudaMemGetInfo(&free_bytes, &total); e != cudaSuccess) {
      s = Err(gpu::CudaErrorText("cudaMemGetInfo", e));
    } else if (static_cast<double>(size_) > 0.9 * static_cast<double>(free_bytes)) {
      s = Err("cuda_memcpy: " + FormatSize(static_cast<double>(size_)) + " do not fit on device " +
              std::to_string(peer_) + " (" + FormatSize(static_cast<double>(free_bytes)) +
              " free)");
    } else {
      s = Allocate(p, /*host=*/false);
    }
    CODL_CUDA_RETURN(cudaSetDevice(device_));
    return s;
  }

  void Release() {
    if (lanes_.empty()) return;
    cudaSetDevice(device_);
    for (Lane& lane : lanes_) {
      if (lane.stream != nullptr) cudaStreamSynchronize(lane.stream);  // copies still reading
      if (lane.src != nullptr) lane.src_host ? cudaFreeHost(lane.src) : cudaFree(lane.src);
      if (lane.dst != nullptr) lane.dst_host ? cudaFreeHost(lane.dst) : cudaFree(lane.dst);
      if (lane.stream != nullptr) cudaStreamDestroy(lane.stream);
    }
    lanes_.clear();
  }

  std::vector<Lane> lanes_;
  std::string direction_, device_name_;
  uint64_t size_ = 0;
  int depth_ = 2;
  int device_ = 0;
  int peer_ = -1;  // d2d destination device, -1: none
  double h2d_share_ = 0.5;
#else
  void Release() {}
#endif
};

}  // namespace

std::unique_ptr<Injector> MakeCudaMemcpyInjector() {
  return std::make_unique<CudaMemcpyInjector>();
}

}  // namespace codl::injectors
