#include "victim/options.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>

#include "lib/common/units.h"

namespace codl::victim {

const char* ToString(ReaderKind k) { return k == ReaderKind::kPosix ? "posix" : "io_uring"; }

const char* ToString(IoMode m) {
  switch (m) {
    case IoMode::kDirect: return "direct";
    case IoMode::kFadvise: return "fadvise";
    case IoMode::kBuffered: return "buffered";
  }
  return "?";
}

const char* ToString(Profile p) {
  switch (p) {
    case Profile::kBalanced: return "balanced";
    case Profile::kIoBound: return "io-bound";
    case Profile::kComputeBound: return "compute-bound";
  }
  return "?";
}

uint64_t EffectiveH2dBytes(const RunOptions& o, uint64_t sample_size) {
  if (o.h2d_size >= 0) return static_cast<uint64_t>(o.h2d_size);
  return sample_size * static_cast<uint64_t>(o.batch_size);
}

namespace {

// Each option is one row: its name, the value it takes, and how it is checked and stored.
// Help text lives in RunHelp() so that it can teach, in prose, how the options interact.
template <class T>
struct OptionRow {
  const char* name;
  std::function<Status(T&, std::string_view)> apply;
};

Status OutOfRange(std::string_view name, std::string_view text, const std::string& allowed) {
  return Err(std::string(name) + ": '" + std::string(text) + "' is out of range; allowed " +
             allowed);
}

Result<int64_t> IntIn(std::string_view name, std::string_view text, int64_t lo, int64_t hi) {
  auto v = ParseNumber(text);
  const std::string allowed = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  if (!v.ok() || *v != std::floor(*v)) {
    return Err(std::string(name) + ": '" + std::string(text) + "' is not " + allowed);
  }
  if (*v < static_cast<double>(lo) || *v > static_cast<double>(hi)) {
    return Err(OutOfRange(name, text, allowed).error());
  }
  return static_cast<int64_t>(*v);
}

Result<uint64_t> SizeIn(std::string_view name, std::string_view text, uint64_t lo, uint64_t hi) {
  auto v = ParseSize(text);
  if (!v.ok()) return Err(std::string(name) + ": " + v.error());
  if (*v < lo || *v > hi) {
    return Err(OutOfRange(name, text, "a size in [" + FormatSize(static_cast<double>(lo)) + ", " +
                                          FormatSize(static_cast<double>(hi)) + "]")
                   .error());
  }
  return *v;
}

// Stores an integer option into `field` after a range check.
template <class T, class F>
OptionRow<T> IntOption(const char* name, F T::*field, int64_t lo, int64_t hi,
                       bool T::*explicit_flag = nullptr) {
  return {name, [=](T& o, std::string_view text) -> Status {
            auto v = IntIn(name, text, lo, hi);
            if (!v.ok()) return Err(v.error());
            o.*field = static_cast<F>(*v);
            if (explicit_flag) o.*explicit_flag = true;
            return Status::Ok();
          }};
}

template <class T, class F>
OptionRow<T> SizeOption(const char* name, F T::*field, uint64_t lo, uint64_t hi,
                        bool T::*explicit_flag = nullptr) {
  return {name, [=](T& o, std::string_view text) -> Status {
            auto v = SizeIn(name, text, lo, hi);
            if (!v.ok()) return Err(v.error());
            o.*field = static_cast<F>(*v);
            if (explicit_flag) o.*explicit_flag = true;
            return Status::Ok();
          }};
}

// Seeds are plain unsigned 64-bit integers (no unit suffixes: "1k" as a seed would surprise).
template <class T>
OptionRow<T> SeedOption(const char* name, uint64_t T::*field) {
  return {name, [=](T& o, std::string_view text) -> Status {
            uint64_t v = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
              return Err(std::string(name) + ": '" + std::string(text) +
                         "' is not an unsigned integer in [0, 18446744073709551615]");
            }
            o.*field = v;
            return Status::Ok();
          }};
}

Result<Profile> ParseProfile(std::string_view text) {
  if (text == "balanced") return Profile::kBalanced;
  if (text == "io-bound") return Profile::kIoBound;
  if (text == "compute-bound") return Profile::kComputeBound;
  return Err("--profile: '" + std::string(text) +
             "' is not a profile; allowed balanced, io-bound, compute-bound");
}

// Presets. Sized so that ~30 steps take a few seconds on a 2-core machine; io-bound makes the
// loader (reads) the bottleneck, compute-bound the GEMMs. Explicit flags override every field.
void ApplyProfile(Profile p, RunOptions& o) {
  switch (p) {
    case Profile::kBalanced:
      o.samples = 256; o.sample_size = 128 * 1024; o.batch_size = 32;
      o.threads = 2; o.prefetch = 4; o.decode_work = 2; o.gemm_dim = 384; o.gemm_count = 3;
      break;
    case Profile::kIoBound:
      // Large samples, no decode, one small GEMM: the training loop waits for storage.
      o.samples = 64; o.sample_size = 1024 * 1024; o.batch_size = 16;
      o.threads = 2; o.prefetch = 2; o.decode_work = 0; o.gemm_dim = 128; o.gemm_count = 1;
      break;
    case Profile::kComputeBound:
      // Small samples, light decode, several large GEMMs: storage hardly matters.
      o.samples = 256; o.sample_size = 16 * 1024; o.batch_size = 16;
      o.threads = 1; o.prefetch = 4; o.decode_work = 1; o.gemm_dim = 384; o.gemm_count = 6;
      break;
  }
  o.profile = p;
}

// Accepts "--name value" and "--name=value"; every value goes through its row's checks.
template <class T>
Status ParseRows(const std::vector<std::string>& args, const std::vector<OptionRow<T>>& rows,
                 const char* command, T& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> value;
    if (auto eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionRow<T>* row = nullptr;
    for (const auto& r : rows) {
      if (name == r.name) row = &r;
    }
    if (row == nullptr) {
      return Err(std::string(name.rfind("-", 0) == 0 ? "unknown option '" : "unexpected argument '") +
                 name + "' (see codl-victim " + command + " --help)");
    }
    if (!value) {
      if (i + 1 >= args.size()) return Err(name + " needs a value (see codl-victim " + command + " --help)");
      value = args[++i];
    }
    if (Status s = row->apply(out, *value); !s.ok()) return s;
  }
  return Status::Ok();
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h" || a == "help") return true;
  }
  return false;
}

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

}  // namespace

Result<Parsed<GenDataOptions>> ParseGenDataArgs(const std::vector<std::string>& args) {
  Parsed<GenDataOptions> parsed;
  if (WantsHelp(args)) {
    parsed.help = true;
    return parsed;
  }
  using G = GenDataOptions;
  const std::vector<OptionRow<G>> rows = {
      {"--dir", [](G& o, std::string_view v) -> Status { o.dir = std::string(v); return Status::Ok(); }},
      {"--data", [](G& o, std::string_view v) -> Status { o.dir = std::string(v); return Status::Ok(); }},
      IntOption<G>("--samples", &G::samples, 1, 10'000'000),
      SizeOption<G>("--sample-size", &G::sample_size, 1, kGiB),
      SeedOption<G>("--seed", &G::seed),
  };
  if (Status s = ParseRows(args, rows, "gen-data", parsed.options); !s.ok()) return Err(s.error());
  if (parsed.options.dir.empty()) return Err("gen-data: --dir is required (where to write the samples)");
  return parsed;
}

Result<Parsed<RunOptions>> ParseRunArgs(const std::vector<std::string>& args) {
  Parsed<RunOptions> parsed;
  if (WantsHelp(args)) {
    parsed.help = true;
    return parsed;
  }
  RunOptions& out = parsed.options;
  // The profile is applied first wherever it appears, so explicit flags always win.
  ApplyProfile(Profile::kBalanced, out);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    std::optional<std::string_view> v;
    if (a == "--profile" && i + 1 < args.size()) v = args[i + 1];
    if (a.rfind("--profile=", 0) == 0) v = a.substr(10);
    if (v) {
      auto p = ParseProfile(*v);
      if (!p.ok()) return Err(p.error());
      ApplyProfile(*p, out);
    }
  }

  using R = RunOptions;
  std::optional<double> gemm_flops;
  bool gemm_count_explicit = false;
  const std::vector<OptionRow<R>> rows = {
      {"--dir", [](R& o, std::string_view v) -> Status { o.dir = std::string(v); return Status::Ok(); }},
      {"--data", [](R& o, std::string_view v) -> Status { o.dir = std::string(v); return Status::Ok(); }},
      {"--profile", [](R&, std::string_view) -> Status { return Status::Ok(); }},  // applied above
      IntOption<R>("--samples", &R::samples, 1, 10'000'000, &R::samples_explicit),
      SizeOption<R>("--sample-size", &R::sample_size, 1, kGiB, &R::sample_size_explicit),
      {"--reader", [](R& o, std::string_view v) -> Status {
         if (v == "posix") o.reader = ReaderKind::kPosix;
         else if (v == "io_uring" || v == "io-uring") o.reader = ReaderKind::kIoUring;
         else return Err("--reader: '" + std::string(v) + "' is not a reader; allowed posix, io_uring");
         return Status::Ok();
       }},
      {"--io-mode", [](R& o, std::string_view v) -> Status {
         if (v == "direct") o.io_mode = IoMode::kDirect;
         else if (v == "fadvise") o.io_mode = IoMode::kFadvise;
         else if (v == "buffered") o.io_mode = IoMode::kBuffered;
         else return Err("--io-mode: '" + std::string(v) + "' is not a mode; allowed direct, fadvise, buffered");
         return Status::Ok();
       }},
      IntOption<R>("--queue-depth", &R::queue_depth, 1, 4096),
      SizeOption<R>("--read-block", &R::read_block, 4096, kGiB),
      IntOption<R>("--threads", &R::threads, 1, 256),
      IntOption<R>("--prefetch", &R::prefetch, 1, 1024),
      IntOption<R>("--batch-size", &R::batch_size, 1, 65536),
      IntOption<R>("--decode-work", &R::decode_work, 0, 1000),
      {"--h2d-size", [](R& o, std::string_view v) -> Status {
         if (v == "batch") { o.h2d_size = -1; return Status::Ok(); }
         auto s = SizeIn("--h2d-size", v, 0, 64 * kGiB);
         if (!s.ok()) return Err(s.error() + " (or 'batch')");
         o.h2d_size = static_cast<int64_t>(*s);
         return Status::Ok();
       }},
      IntOption<R>("--gemm-dim", &R::gemm_dim, 16, 32768),
      {"--gemm-count", [&](R& o, std::string_view v) -> Status {
         auto n = IntIn("--gemm-count", v, 0, 100000);
         if (!n.ok()) return Err(n.error());
         o.gemm_count = static_cast<int>(*n);
         gemm_count_explicit = true;
         return Status::Ok();
       }},
      {"--gemm-flops", [&](R&, std::string_view v) -> Status {
         auto f = ParseNumber(v);
         if (!f.ok() || *f < 0 || *f > 1e18) {
           return Err("--gemm-flops: '" + std::string(v) +
                      "' is not a FLOP count in [0, 1e18] (examples: 500M, 2G, 0)");
         }
         gemm_flops = *f;
         return Status::Ok();
       }},
      IntOption<R>("--compute-threads", &R::compute_threads, 1, 256),
      IntOption<R>("--ranks", &R::ranks, 1, 64),
      SizeOption<R>("--allreduce-size", &R::allreduce_size, 4, 16 * kGiB),
      {"--device", [](R& o, std::string_view v) -> Status {
         if (v == "auto") o.device = DeviceChoice::kAuto;
         else if (v == "cpu") o.device = DeviceChoice::kCpu;
         else if (v == "cuda") o.device = DeviceChoice::kCuda;
         else return Err("--device: '" + std::string(v) + "' is not a device; allowed auto, cpu, cuda");
         return Status::Ok();
       }},
      IntOption<R>("--steps", &R::steps, 1, 100'000'000),
      IntOption<R>("--warmup-steps", &R::warmup_steps, 0, 100'000'000),
      SeedOption<R>("--seed", &R::seed),
  };
  if (Status s = ParseRows(args, rows, "run", out); !s.ok()) return Err(s.error());

  if (out.dir.empty()) return Err("run: --dir is required (the dataset folder; run generates it when empty)");
  if (out.read_block % 4096 != 0) {
    return Err("--read-block: must be a multiple of 4KiB (O_DIRECT needs aligned reads)");
  }
  if (gemm_flops) {
    if (gemm_count_explicit) return Err("--gemm-flops and --gemm-count both given; use one of them");
    const double per_gemm = 2.0 * std::pow(static_cast<double>(out.gemm_dim), 3);
    const double count = std::ceil(*gemm_flops / per_gemm);
    if (count > 100000) {
      return Err("--gemm-flops: " + std::to_string(*gemm_flops) + " needs more than 100000 GEMMs of "
                 "--gemm-dim " + std::to_string(out.gemm_dim) + "; raise --gemm-dim");
    }
    out.gemm_count = static_cast<int>(count);
  }
  const uint64_t batch_bytes = out.sample_size * static_cast<uint64_t>(out.batch_size);
  if (batch_bytes > 16 * kGiB) {
    return Err("--batch-size x --sample-size: " + FormatSize(static_cast<double>(batch_bytes)) +
               " per batch is more than the allowed 16 GiB");
  }
  return parsed;
}

std::string TopLevelHelp() {
  return R"(codl-victim: a training-pipeline proxy (DLIO-like) that reports per-step, per-phase times.

Usage:
  codl-victim gen-data --dir DIR [--samples N] [--sample-size SIZE] [--seed K]
  codl-victim run --dir DIR [--profile balanced|io-bound|compute-bound] [options]
  codl-victim run --help        every run option, the phases and the output schema
  codl-victim gen-data --help

A step of `run`: loader threads read one batch of sample files from DIR (page cache
bypassed), decode them on the CPU, the training loop copies the batch host-to-device,
runs GEMMs (cuBLAS on a GPU, a blocked CPU sgemm otherwise) and, with --ranks > 1,
allreduces a gradient buffer. Each step prints one JSON line on stdout:

  {"phases":{"compute_s":0.012,"data_wait_s":0.001,"decode_s":0.004,"h2d_s":0.0003,
   "read_s":0.006},"step":3,"step_time_s":0.0135}

and the run ends with {"summary":true,...}. Start with:

  codl-victim run --dir /tmp/codl-victim --profile io-bound

Exit status: 0 ok, 1 runtime failure (I/O error, device error), 2 bad command line.
)";
}

std::string GenDataHelp() {
  return R"(codl-victim gen-data: write the dataset that `run` reads.

  --dir DIR          folder to write (created); files sample-00000000.bin ... plus a manifest
  --samples N        number of sample files, 1..10000000 (default 256)
  --sample-size S    bytes per file, 1B..1GiB, units as in 128KiB, 1MiB (default 128KiB)
  --seed K           content seed (default 1): the same seed gives byte-identical files,
                     another seed different ones

Files are fsync'ed and dropped from the page cache (POSIX_FADV_DONTNEED) so the first run
reads them from storage. `run` generates the dataset itself when DIR has none.
)";
}

std::string RunHelp() {
  return R"(codl-victim run: run the training-pipeline proxy and print one JSON line per step.

Usage: codl-victim run --dir DIR [--profile P] [options]      (sizes take units: 64KiB, 1MiB)

Dataset:
  --dir DIR            dataset folder (alias --data). When it holds no dataset, run generates
                       --samples files of --sample-size bytes first (seeded by --seed).
  --samples N, --sample-size S   dataset shape when generating; on an existing dataset they are
                       only checked (a mismatch is an error).
  --profile P          balanced | io-bound | compute-bound presets (below); flags override them

Pipeline (per rank):
  loader threads --read--> --decode--> [prefetch queue] --> training loop: h2d -> compute -> allreduce
  --threads N          loader threads, 1..256 (like DataLoader num_workers). Each builds whole
                       batches: reads batch_size sample files, then decodes them.
  --prefetch N         batches ready or in flight ahead of the loop, 1..1024
  --batch-size N       samples per step, 1..65536
  --reader R           posix (pread, one file at a time) | io_uring (all the batch's reads in
                       flight, up to --queue-depth). Default posix.
  --io-mode M          direct (O_DIRECT; default) | fadvise (buffered read, then
                       POSIX_FADV_DONTNEED) | buffered (page cache allowed: for comparison only).
                       direct falls back to fadvise where O_DIRECT is refused (ramfs, FUSE,
                       tmpfs before Linux 6.6); the first output line says which mode ran.
  --queue-depth N      io_uring reads in flight per loader thread, 1..4096 (default 8)
  --read-block SIZE    bytes per read request, a multiple of 4KiB (default 1MiB)
  --decode-work P      decode passes over every byte, 0..1000. One pass is an FNV-1a style
                       transform in place (a byte-serial dependency chain, about 1 ns per byte
                       on a current x86 core); raise it to match your decoder. 0 = no decode.
  --h2d-size S|batch   bytes copied host-to-device per step (default batch = batch_size x
                       sample_size; 0 = no copy). CUDA: cudaMemcpyAsync from pinned memory;
                       without a GPU: memcpy into a host staging buffer.
  --gemm-dim N         square GEMM size, 16..32768 (C[NxN] = A[NxN] B[NxN], fp32)
  --gemm-count N       GEMMs per step, 0..100000; 0 = no compute stage
  --gemm-flops F       FLOPs per step instead of --gemm-count (rounded up to whole GEMMs of
                       --gemm-dim; each is 2*N^3 FLOPs), e.g. 500M, 2G
  --compute-threads N  threads of the CPU sgemm (host fallback), 1..256 (default 1)
  --device D           auto (CUDA when a device is present) | cpu | cuda (fail without one)
  --ranks N            data-parallel ranks, 1..64, as threads of this process; each rank has its
                       own loaders and shard of the files, and every step ends with an allreduce.
                       NCCL when there are at least N GPUs; otherwise a shared-memory
                       reduce-scatter + all-gather on the host (GPU gradients are copied to the
                       host and back, as Gloo does). Step lines are rank 0's.
  --allreduce-size S   gradient bytes allreduced per step (default 4MiB)
  --steps N            measured steps (default 30)
  --warmup-steps N     steps before them, printed with "warmup":true (default 2)
  --seed K             shuffling seed; also the dataset seed when run generates it

Profiles (--profile; explicit flags override any field):
  balanced       256 x 128KiB samples, batch 32, 2 loaders, decode 2, 3 GEMMs of 384
  io-bound       64 x 1MiB samples, batch 16, 2 loaders, prefetch 2, no decode, 1 GEMM of 128:
                 the loop waits on storage (data_wait_s dominates the step)
  compute-bound  256 x 16KiB samples, batch 16, 1 loader, decode 1, 6 GEMMs of 384

Output (stdout, one JSON object per line, flushed per line):
  {"config":true,...}   what ran: reader, io_mode, device, gemm, comm, dataset
  {"step":K,"step_time_s":T,"phases":{...}[,"warmup":true]}
  {"summary":true,"steps":N,"median_step_time_s":T,"samples_per_s":X,...}
Phases (seconds; a stage that does not run is omitted, never zero-filled):
  data_wait_s  the training loop blocked waiting for this step's batch
  read_s       wall time the loader thread spent reading this batch's files (open to close)
  decode_s     wall time the loader thread spent decoding this batch
  h2d_s        host-to-device copy, synchronized
  compute_s    the step's GEMMs, synchronized
  comm_s       the allreduce, including waiting for the slowest rank
read_s and decode_s run in loader threads, overlapped with earlier steps; the other four are
on the training loop and add up to about step_time_s.
)";
}

}  // namespace codl::victim
