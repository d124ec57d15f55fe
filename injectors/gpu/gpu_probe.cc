#include "injectors/gpu/gpu_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include "injectors/core/stop_token.h"
#include "injectors/gpu/gpu_host.h"
#include "lib/common/subprocess.h"

#ifdef CODL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace codl::injectors::gpu {
namespace {

std::atomic<bool> g_cuda_used{false};

#ifdef CODL_HAVE_CUDA
// A probe can hang on a wedged driver; the caller (e.g. --list) must not.
constexpr double kProbeTimeoutS = 30;

// Runs in the child. One line per fact, tab-separated, so the parent needs no JSON parser:
//   count <err> <n> <driver> <runtime>\n  errtext <text>\n  dev <mem> <mode> <sms> <maj> <min>
//   <pci> <name>\n
std::string ProbeInThisProcess() {
  std::ostringstream out;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) n = 0;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  out << "count\t" << static_cast<int>(e) << '\t' << n << '\t' << driver << '\t' << runtime << '\n';
  out << "errtext\t" << cudaGetErrorString(e) << '\n';
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    int mode = 0;  // cudaDeviceProp::computeMode is gone in CUDA 13; the attribute is not
    cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, i);
    char pci[32] = "";
    cudaDeviceGetPCIBusId(pci, sizeof pci, i);
    std::string name = p.name;
    for (char& c : name) {
      if (c == '\t' || c == '\n') c = ' ';
    }
    out << "dev\t" << p.totalGlobalMem << '\t' << mode << '\t' << p.multiProcessorCount << '\t'
        << p.major << '\t' << p.minor << '\t' << pci << '\t' << name << '\n';
  }
  return out.str();
}

void ParseProbe(const std::string& text, GpuProbe* probe) {
  std::istringstream in(text);
  std::string line;
  bool saw_count = false;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    size_t start = 0;
    while (true) {
      const size_t tab = line.find('\t', start);
      f.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (f[0] == "count" && f.size() == 5) {
      saw_count = true;
      probe->count_error = std::atoi(f[1].c_str());
      probe->driver_version = std::atoi(f[3].c_str());
      probe->runtime_version = std::atoi(f[4].c_str());
    } else if (f[0] == "errtext" && f.size() >= 2) {
      probe->count_error_text = f[1];
    } else if (f[0] == "dev" && f.size() >= 8) {
      GpuDeviceInfo d;
      d.memory_bytes = std::strtoull(f[1].c_str(), nullptr, 10);
      d.compute_mode = std::atoi(f[2].c_str());
      d.sm_count = std::atoi(f[3].c_str());
      d.cc_major = std::atoi(f[4].c_str());
      d.cc_minor = std::atoi(f[5].c_str());
      d.pci_bus_id = f[6];
      d.name = f[7];
      probe->devices.push_back(std::move(d));
    }
  }
  if (!saw_count) probe->probe_error = "CUDA probe child printed nothing";
}

GpuProbe ForkedProbe() {
  GpuProbe probe;
  probe.built_with_cuda = true;
  SpawnOptions o;
  o.out = Stdio::Pipe();
  // The child probes and reports; it is a copy of this process, so the parent's CUDA state
  // stays untouched (and fork-safe).
  auto child = Subprocess::ForkCall(o, [] {
    const std::string text = ProbeInThisProcess();
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t w = write(1, text.data() + off, text.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    return 0;
  });
  if (!child.ok()) {
    probe.probe_error = "CUDA probe: " + child.error();
    return probe;
  }
  const CapturedRun run = CaptureOutput(*child, kProbeTimeoutS);
  if (run.timed_out) {
    probe.probe_error = "CUDA probe timed out after 30s (is the driver wedged?)";
    return probe;
  }
  if (!run.status.exited) {
    probe.probe_error = "CUDA probe child died with signal " + std::to_string(run.status.signal);
    return probe;
  }
  ParseProbe(run.out, &probe);
  return probe;
}
#endif  // CODL_HAVE_CUDA

}  // namespace

const GpuProbe& ProbeGpus() {
  static std::once_flag once;
  static GpuProbe probe;
#ifdef CODL_HAVE_CUDA
  std::call_once(once, [] { probe = ForkedProbe(); });
#else
  std::call_once(once, [] { probe.count_error_text = "built without CUDA"; });
#endif
  return probe;
}

Status CudaUsable() {
  const GpuProbe& p = ProbeGpus();
  if (!p.built_with_cuda) return FailedPrecondition("built without CUDA");
  if (!p.probe_error.empty()) return FailedPrecondition("no CUDA device: " + p.probe_error);
  if (p.count_error != 0) {
    return FailedPrecondition(NoDeviceReason(p.count_error, p.count_error_text));
  }
  if (p.devices.empty()) {
    return FailedPrecondition("no CUDA device: cudaGetDeviceCount returned 0 devices");
  }
  return Status::Ok();
}

std::string FindOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    return access(program.c_str(), X_OK) == 0 ? program : "";
  }
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    // An empty PATH entry means the current directory.
    const std::string full =
        (colon > start ? dirs.substr(start, colon - start) : std::string(".")) + "/" + program;
    struct stat st {};
    if (stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(full.c_str(), X_OK) == 0) {
      return full;
    }
    start = colon + 1;
  }
  return "";
}

void MarkCudaUsedHere() { g_cuda_used.store(true); }
bool CudaUsedHere() { return g_cuda_used.load(); }

}  // namespace codl::injectors::gpu
