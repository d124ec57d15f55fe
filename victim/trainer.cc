#include "victim/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/common/clock.h"
#include "lib/common/json_line.h"
#include "lib/common/units.h"
#include "victim/dataset.h"
#include "victim/device.h"
#include "victim/loader.h"
#include "victim/tcp_allreduce.h"

namespace codl::victim {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

void PrintLine(std::FILE* out, const JsonLine& line) {
  std::fputs((line.str() + "\n").c_str(), out);
  std::fflush(out);  // the agent reads progress live; never let a step sit in a buffer
}

// A failure after the ranks started: other ranks may be blocked in the allreduce's barrier or
// on their loaders, so the only clean way out is to leave the process at once, loudly.
[[noreturn]] void Die(int rank, int64_t step, const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "codl-victim: error: rank %d, step %lld: %s\n", rank,
               static_cast<long long>(step), what.c_str());
  std::fflush(stderr);
  ::_exit(1);
}

struct StepRecord {
  double step_time_s = 0;
  double end_s = 0;
  std::map<std::string, double> phases;
};

// Everything one rank needs; all of it built before any rank thread starts.
struct Rank {
  std::unique_ptr<Device> device;
  std::unique_ptr<Loader> loader;
};

struct Plan {
  DatasetInfo dataset;
  IoMode io_mode = IoMode::kDirect;
  std::string io_note;
  bool cuda = false;
  std::string device_note;
  uint64_t h2d_bytes = 0;
  std::string comm_note;
};

// Generation as its own phase on stdout (docs/victim.md, "Dataset records"): one record when it
// starts, at most one per kEverySeconds while it runs, and one when it ends, so that the agent
// shows the phase live instead of a silent victim.
class DatasetRecords {
 public:
  static constexpr double kEverySeconds = 0.25;
  DatasetRecords(std::FILE* out, const DatasetInfo& info)
      : out_(out), info_(info), start_s_(SteadySeconds()), last_s_(start_s_) {
    Print(0);
  }
  void OnSample(int64_t written) {
    const double now = SteadySeconds();
    if (written < info_.samples && now - last_s_ < kEverySeconds) return;
    last_s_ = now;
    Print(written);
  }

 private:
  void Print(int64_t written) {
    JsonLine j;
    j.Add("dataset", true).Add("generated", written).Add("total", info_.samples);
    j.Add("sample_size", info_.sample_size).Add("elapsed_s", SteadySeconds() - start_s_);
    PrintLine(out_, j);
  }
  std::FILE* out_;
  const DatasetInfo& info_;
  const double start_s_;
  double last_s_;  // when the last record was printed
};

// Finds or creates the dataset. Returns 0, or the exit status to leave with.
int PrepareDataset(const RunOptions& o, std::FILE* records, DatasetInfo* out) {
  auto manifest = ReadManifest(o.dir);
  if (!manifest.ok()) {
    std::fprintf(stderr, "codl-victim: %s\n", manifest.error().c_str());
    return 1;
  }
  if (!manifest->has_value()) {
    DatasetInfo info{o.dir, o.samples, o.sample_size, o.seed};
    std::fprintf(stderr,
                 "codl-victim: no dataset in %s; generating %lld samples of %s (seed %llu)\n",
                 o.dir.c_str(), static_cast<long long>(o.samples),
                 FormatSize(static_cast<double>(o.sample_size)).c_str(),
                 static_cast<unsigned long long>(o.seed));
    DatasetRecords progress(records, info);
    Status s = GenerateDataset(info, [&](int64_t written) { progress.OnSample(written); });
    if (!s.ok()) {
      std::fprintf(stderr, "codl-victim: gen-data: %s\n", s.error().c_str());
      return 1;
    }
    *out = info;
    return 0;
  }
  const DatasetInfo& have = **manifest;
  if ((o.samples_explicit && have.samples != o.samples) ||
      (o.sample_size_explicit && have.sample_size != o.sample_size)) {
    std::fprintf(stderr,
                 "codl-victim: --samples/--sample-size: %s holds %lld samples of %llu bytes, not "
                 "%lld of %llu; regenerate with codl-victim gen-data or use another --dir\n",
                 o.dir.c_str(), static_cast<long long>(have.samples),
                 static_cast<unsigned long long>(have.sample_size),
                 static_cast<long long>(o.samples), static_cast<unsigned long long>(o.sample_size));
    return 2;
  }
  *out = have;
  return 0;
}

JsonLine ConfigLine(const RunOptions& o, const Plan& p, const std::vector<Rank>& ranks,
                    const Communicator* comm) {
  JsonLine j;
  j.Add("config", true).Add("profile", ToString(o.profile)).Add("dir", p.dataset.dir);
  j.Add("samples", p.dataset.samples).Add("sample_size", p.dataset.sample_size);
  j.Add("batch_size", o.batch_size).Add("reader", ToString(o.reader));
  j.Add("io_mode", ToString(p.io_mode));
  if (!p.io_note.empty()) j.Add("io_note", p.io_note);
  j.Add("threads", o.threads).Add("prefetch", o.prefetch);
  if (o.reader == ReaderKind::kIoUring) j.Add("queue_depth", o.queue_depth);
  j.Add("read_block", o.read_block).Add("decode_work", o.decode_work);
  j.Add("h2d_bytes", p.h2d_bytes).Add("device", ranks[0].device->Name());
  if (!p.device_note.empty()) j.Add("device_note", p.device_note);
  if (o.gemm_count > 0) {
    j.Add("gemm", ranks[0].device->GemmEngine()).Add("gemm_dim", o.gemm_dim);
    j.Add("gemm_count", o.gemm_count);
    j.Add("gemm_flops_per_step", 2.0 * std::pow(static_cast<double>(o.gemm_dim), 3) * o.gemm_count);
  }
  j.Add("ranks", o.ranks);
  if (o.comm == CommKind::kTcp) j.Add("rank", o.rank).Add("world_size", o.world_size);
  if (comm != nullptr) j.Add("comm", comm->Name()).Add("allreduce_bytes", o.allreduce_size);
  if (!p.comm_note.empty()) j.Add("comm_note", p.comm_note);
  j.Add("steps", o.steps).Add("warmup_steps", o.warmup_steps).Add("seed", o.seed);
  return j;
}

// The training loop of one rank. Rank 0 prints and records its steps.
void RunRank(int r, const RunOptions& o, const Plan& plan, Rank& rank, Communicator* comm,
             std::FILE* out, std::vector<StepRecord>* records) {
  const int64_t total = static_cast<int64_t>(o.warmup_steps) + o.steps;
  double prev_end = SteadySeconds();
  for (int64_t s = 0; s < total; ++s) {
    std::map<std::string, double> phases;
    double t = SteadySeconds();
    auto batch = rank.loader->Next();
    if (!batch.ok()) Die(r, s, batch.error());
    double t2 = SteadySeconds();
    phases["data_wait_s"] = t2 - t;
    phases["read_s"] = batch->read_s;
    if (o.decode_work > 0) phases["decode_s"] = batch->decode_s;
    if (plan.h2d_bytes > 0) {
      t = t2;
      if (Status st = rank.device->CopyToDevice(batch->data, plan.h2d_bytes); !st.ok())
        Die(r, s, st.error());
      t2 = SteadySeconds();
      phases["h2d_s"] = t2 - t;
    }
    rank.loader->Release(*batch);
    if (o.gemm_count > 0) {
      t = t2;
      if (Status st = rank.device->Gemm(o.gemm_count); !st.ok()) Die(r, s, st.error());
      t2 = SteadySeconds();
      phases["compute_s"] = t2 - t;
    }
    if (comm != nullptr) {
      t = t2;
      if (Status st = comm->Allreduce(r); !st.ok()) Die(r, s, st.error());
      t2 = SteadySeconds();
      phases["comm_s"] = t2 - t;
    }
    const double step_time = t2 - prev_end;
    prev_end = t2;
    if (r != 0) continue;
    JsonLine line;
    line.Add("step", s).Add("step_time_s", step_time).AddObject("phases", phases);
    if (s < o.warmup_steps) line.Add("warmup", true);
    PrintLine(out, line);
    records->push_back({step_time, t2, std::move(phases)});
  }
}

JsonLine SummaryLine(const RunOptions& o, const Plan& plan, const std::vector<StepRecord>& rec,
                     double loop_start) {
  std::vector<double> times;
  std::map<std::string, std::vector<double>> phases;
  for (size_t i = static_cast<size_t>(o.warmup_steps); i < rec.size(); ++i) {
    times.push_back(rec[i].step_time_s);
    for (const auto& [k, v] : rec[i].phases) phases[k].push_back(v);
  }
  const double begin =
      o.warmup_steps > 0 ? rec[static_cast<size_t>(o.warmup_steps) - 1].end_s : loop_start;
  const double elapsed = rec.back().end_s - begin;
  const double samples = static_cast<double>(o.steps) * o.batch_size * o.ranks;
  std::map<std::string, double> medians;
  for (auto& [k, v] : phases) medians[k] = Median(v);
  JsonLine j;
  j.Add("summary", true).Add("steps", o.steps).Add("warmup_steps", o.warmup_steps);
  j.Add("median_step_time_s", Median(times)).Add("elapsed_s", elapsed);
  j.Add("samples_per_s", elapsed > 0 ? samples / elapsed : 0.0);
  const double bytes = samples * static_cast<double>(plan.dataset.sample_size);
  j.Add("read_bytes_per_s", elapsed > 0 ? bytes / elapsed : 0.0);
  j.AddObject("phase_medians", medians);
  return j;
}

}  // namespace

namespace {

// Resolves the device: CUDA when asked for (or found under auto), else the host. Returns the
// number of CUDA devices to use (0: host), or -1 after printing why --device cuda cannot run.
int ChooseDevice(const RunOptions& o, Plan* plan) {
  int cuda_devices = o.device == DeviceChoice::kCpu ? 0 : CudaDeviceCount(&plan->device_note);
  if (o.device == DeviceChoice::kCuda && cuda_devices == 0) {
    std::fprintf(stderr, "codl-victim: --device cuda: %s\n", plan->device_note.c_str());
    return -1;
  }
  plan->cuda = cuda_devices > 0;
  if (o.device == DeviceChoice::kCpu) plan->device_note.clear();
  return cuda_devices;
}

// One device per rank (ranks share GPUs round-robin when there are fewer GPUs than ranks).
bool MakeDevices(const RunOptions& o, const Plan& plan, int cuda_devices, std::vector<Rank>* ranks,
                 std::vector<Device*>* devices) {
  for (int r = 0; r < o.ranks; ++r) {
    DeviceConfig dc;
    dc.h2d_bytes = plan.h2d_bytes;
    dc.gemm_dim = o.gemm_count > 0 ? o.gemm_dim : 0;
    dc.compute_threads = o.compute_threads;
    dc.grad_bytes = WorldSize(o) > 1 ? o.allreduce_size / sizeof(float) * sizeof(float) : 0;
    dc.seed = o.seed + static_cast<uint64_t>(GlobalRank(o, r));
    auto dev = plan.cuda ? MakeCudaDevice(r % cuda_devices, dc) : MakeHostDevice(dc);
    if (!dev.ok()) {
      std::fprintf(stderr, "codl-victim: device for rank %d: %s\n", r, dev.error().c_str());
      return false;
    }
    (*ranks)[static_cast<size_t>(r)].device = std::move(*dev);
    devices->push_back((*ranks)[static_cast<size_t>(r)].device.get());
  }
  return true;
}

// The allreduce between ranks: NCCL when every rank has its own GPU, else shared host memory.
// nullptr for one rank.
std::unique_ptr<Communicator> MakeCommunicator(const RunOptions& o, int cuda_devices,
                                               const std::vector<Device*>& devices, Plan* plan) {
  if (o.ranks <= 1 || o.comm == CommKind::kTcp) return nullptr;
  std::unique_ptr<Communicator> comm;
  const size_t floats = o.allreduce_size / sizeof(float);
  if (plan->cuda && cuda_devices >= o.ranks) {
    auto nccl = MakeNcclCommunicator(devices, floats);
    if (nccl.ok()) comm = std::move(*nccl);
    else plan->comm_note = "NCCL unavailable (" + nccl.error() + "); using the host allreduce";
  } else if (plan->cuda) {
    plan->comm_note = std::to_string(o.ranks) + " ranks share " + std::to_string(cuda_devices) +
                      " GPU(s); using the host allreduce";
  }
  if (!comm) comm = MakeShmCommunicator(devices, floats);
  return comm;
}

// --comm tcp: this process's rank joins the others over TCP (tcp_allreduce.h).
Result<std::unique_ptr<Communicator>> ConnectTcpRanks(const RunOptions& o, Device* device) {
  TcpCommConfig c;
  c.rank = o.rank;
  c.world_size = o.world_size;
  c.master_host = o.master_host;
  c.master_port = o.master_port;
  c.connect_timeout_s = o.connect_timeout_s;
  return MakeTcpCommunicator(c, device, o.allreduce_size / sizeof(float));
}

// Each rank's loader reads every ranks-th sample file (every world_size-th under --comm tcp).
bool StartLoaders(const RunOptions& o, const Plan& plan, const std::vector<Device*>& devices,
                  std::vector<Rank>* ranks) {
  for (int r = 0; r < o.ranks; ++r) {
    LoaderConfig lc;
    for (int64_t i = GlobalRank(o, r); i < plan.dataset.samples; i += WorldSize(o))
      lc.files.push_back(SamplePath(o.dir, i));
    lc.sample_size = plan.dataset.sample_size;
    lc.batch_size = o.batch_size;
    lc.threads = o.threads;
    lc.prefetch = o.prefetch;
    lc.decode_passes = o.decode_work;
    lc.min_buffer_bytes = plan.h2d_bytes;
    lc.total_batches = static_cast<int64_t>(o.warmup_steps) + o.steps;
    lc.seed = o.seed * 1000003 + static_cast<uint64_t>(r);
    lc.reader = {o.reader, plan.io_mode, o.read_block, o.queue_depth};
    auto loader = Loader::Start(std::move(lc), devices[static_cast<size_t>(r)]);
    if (!loader.ok()) {
      std::fprintf(stderr, "codl-victim: %s\n", loader.error().c_str());
      return false;
    }
    (*ranks)[static_cast<size_t>(r)].loader = std::move(*loader);
  }
  return true;
}

// Rank 0 runs on this thread and keeps the step records; the others on their own threads.
void RunRanks(const RunOptions& o, const Plan& plan, std::vector<Rank>& ranks, Communicator* comm,
              std::FILE* out) {
  PrintLine(out, ConfigLine(o, plan, ranks, comm));
  std::vector<StepRecord> records;
  const double loop_start = SteadySeconds();
  std::vector<std::thread> threads;
  for (int r = 1; r < o.ranks; ++r) {
    threads.emplace_back(
        [&, r] { RunRank(r, o, plan, ranks[static_cast<size_t>(r)], comm, out, nullptr); });
  }
  RunRank(0, o, plan, ranks[0], comm, out, &records);
  for (auto& t : threads) t.join();
  PrintLine(out, SummaryLine(o, plan, records, loop_start));
}

}  // namespace

int RunVictim(const RunOptions& o, std::FILE* out) {
  Plan plan;
  if (int rc = PrepareDataset(o, out, &plan.dataset); rc != 0) return rc;
  if (plan.dataset.samples < WorldSize(o)) {
    std::fprintf(stderr, "codl-victim: %d ranks need at least %d samples; %s holds %lld\n",
                 WorldSize(o), WorldSize(o), o.dir.c_str(),
                 static_cast<long long>(plan.dataset.samples));
    return 2;
  }
  plan.io_mode = ResolveIoMode(o.io_mode, SamplePath(o.dir, 0), &plan.io_note);
  if (!plan.io_note.empty()) std::fprintf(stderr, "codl-victim: %s\n", plan.io_note.c_str());
  plan.h2d_bytes = EffectiveH2dBytes(o, plan.dataset.sample_size);

  const int cuda_devices = ChooseDevice(o, &plan);
  if (cuda_devices < 0) return 1;
  std::vector<Rank> ranks(static_cast<size_t>(o.ranks));
  std::vector<Device*> devices;
  if (!MakeDevices(o, plan, cuda_devices, &ranks, &devices)) return 1;
  std::unique_ptr<Communicator> comm = MakeCommunicator(o, cuda_devices, devices, &plan);
  if (o.comm == CommKind::kTcp && o.world_size > 1) {
    auto tcp = ConnectTcpRanks(o, devices[0]);  // before the loaders: setup is no step's time
    if (!tcp.ok()) {
      std::fprintf(stderr, "codl-victim: --comm tcp: %s\n", tcp.error().c_str());
      return 1;
    }
    comm = std::move(*tcp);
  }
  if (!StartLoaders(o, plan, devices, &ranks)) return 1;
  RunRanks(o, plan, ranks, comm.get(), out);
  return 0;
}

}  // namespace codl::victim
