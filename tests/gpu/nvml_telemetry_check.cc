// nvml_telemetry_check: the agent's GPU telemetry (agent/gpu_telemetry.h) against a real GPU.
// Samples every GPU through the node's NVML for --seconds while a load command runs (a CUDA
// memcpy: tests/gpu/run_gpu_checks.sh passes memcpy_baseline h2d), prints one JSON line per
// GPU, and checks the loaded device: at least 5 samples, memory in use > 0, and PCIe bytes (or,
// where the driver has no PCIe byte counters, utilization) > 0.
//
// Exit status: 0 passed; 1 failed (the reason on stderr); 77 no NVML on this node (skipped,
// the reason on stdout: ctest's SKIP_RETURN_CODE). Plain C++: built by g++ without CUDA.
//
// Usage: nvml_telemetry_check [--device N] [--seconds S] [--load 'command ...']
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "agent/gpu_telemetry.h"
#include "lib/common/gpu_clock_reasons.h"

extern char** environ;

namespace {

double NowS() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string JsonText(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  double seconds = 3;
  std::string load;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--device") device = std::atoi(argv[i + 1]);
    else if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (flag == "--load") load = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  const codl::agent::GpuSource& nvml = codl::agent::NodeNvml();
  if (nvml.api == nullptr) {
    std::printf("SKIP: %s\n", nvml.note.c_str());
    return 77;
  }

  pid_t load_pid = -1;
  if (!load.empty()) {
    const char* sh_argv[] = {"/bin/sh", "-c", load.c_str(), nullptr};
    if (posix_spawn(&load_pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(sh_argv), environ) !=
        0) {
      std::fprintf(stderr, "FAIL: cannot start the load: %s\n", load.c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // CUDA context, first copies
  }

  codl::agent::GpuTelemetrySampler sampler(nvml);
  const double t0 = NowS();
  sampler.Start(0);
  while (NowS() - t0 < seconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    sampler.Tick(NowS() - t0);
  }
  codl::NodeTelemetry t;
  const double window = NowS() - t0;
  sampler.Finish(window, &t);

  int load_status = 0;
  if (load_pid > 0) {
    if (waitpid(load_pid, &load_status, WNOHANG) == 0) {
      kill(load_pid, SIGTERM);
      waitpid(load_pid, &load_status, 0);
    }
  }

  std::printf("{\"gpu_note\":%s,\"window_s\":%s,\"gpus\":%zu}\n", JsonText(t.gpu_note).c_str(),
              JsonNumber(window).c_str(), t.gpus.size());
  const codl::GpuTelemetry* loaded = nullptr;
  for (const codl::GpuTelemetry& g : t.gpus) {
    if (g.index == device) loaded = &g;
    std::printf(
        "{\"index\":%d,\"name\":%s,\"samples\":%d,\"util_mean\":%s,\"util_max\":%s,"
        "\"mem_util_mean\":%s,\"mem_used_max_bytes\":%lld,\"pcie_tx_bytes\":%s,"
        "\"pcie_rx_bytes\":%s,\"nvlink_tx_bytes\":%s,\"nvlink_rx_bytes\":%s,"
        "\"sm_clock_min_mhz\":%s,\"sm_clock_mean_mhz\":%s,\"mem_clock_min_mhz\":%s,"
        "\"clock_reasons\":%s,\"notes\":%s}\n",
        g.index, JsonText(g.name).c_str(), g.samples, JsonNumber(g.util_mean).c_str(),
        JsonNumber(g.util_max).c_str(), JsonNumber(g.mem_util_mean).c_str(),
        static_cast<long long>(g.mem_used_max_bytes), JsonNumber(g.pcie_tx_bytes).c_str(),
        JsonNumber(g.pcie_rx_bytes).c_str(), JsonNumber(g.nvlink_tx_bytes).c_str(),
        JsonNumber(g.nvlink_rx_bytes).c_str(), JsonNumber(g.sm_clock_min_mhz).c_str(),
        JsonNumber(g.sm_clock_mean_mhz).c_str(), JsonNumber(g.mem_clock_min_mhz).c_str(),
        JsonText(codl::GpuClockReasonsText(g.clock_reasons)).c_str(), JsonText(g.notes).c_str());
  }

  if (loaded == nullptr) {
    std::fprintf(stderr, "FAIL: NVML lists no GPU %d (%s)\n", device, t.gpu_note.c_str());
    return 1;
  }
  std::string why;
  if (loaded->samples < 5) why += "fewer than 5 samples; ";
  if (loaded->mem_used_max_bytes <= 0) why += "no memory in use read; ";
  const double pcie = loaded->pcie_tx_bytes + loaded->pcie_rx_bytes;  // NaN when not counted
  if (!load.empty()) {
    if (std::isfinite(pcie) ? pcie <= 0 : !(loaded->util_max > 0))
      why += "no PCIe bytes (nor utilization) under the memcpy load; ";
    if (!WIFEXITED(load_status) && !WIFSIGNALED(load_status)) why += "the load did not end; ";
  }
  if (!why.empty()) {
    std::fprintf(stderr, "FAIL: GPU %d: %s(notes: %s)\n", device, why.c_str(),
                 loaded->notes.c_str());
    return 1;
  }
  std::printf("PASS: GPU %d: %d samples, PCIe %s bytes over %.1f s, utilization max %s%%\n", device,
              loaded->samples, JsonNumber(pcie).c_str(), window,
              JsonNumber(loaded->util_max).c_str());
  return 0;
}
