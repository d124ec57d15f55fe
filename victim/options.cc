#include "victim/options.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <type_traits>
#include <utility>

#include "lib/common/options.h"
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

int WorldSize(const RunOptions& o) { return o.comm == CommKind::kTcp ? o.world_size : o.ranks; }
int GlobalRank(const RunOptions& o, int thread_rank) {
  return o.comm == CommKind::kTcp ? o.rank : thread_rank;
}

namespace {

constexpr double kMaxGemmCount = 100000;
constexpr double kMaxWorld = 4096;

// The option tables (lib/common/options.h: the same typed rows as codl-inject's injectors).
// Defaults are the balanced profile; a --profile preset replaces the defaults of the options
// the user did not give. The help text lives in RunHelp()/GenDataHelp(): prose that teaches how
// the options interact; OptionTablesMatchTheHelp (tests/victim) keeps the two in step.
std::vector<OptionSpec> GenDataTable() {
  return {
      StringOption("--dir", "", "folder to write (alias --data)"),
      IntOption("--samples", "256", 1, 10'000'000, "number of sample files"),
      SizeOption("--sample-size", "128KiB", 1, static_cast<double>(kGiB), "bytes per file"),
      UintOption("--seed", "1", "content seed"),
  };
}

std::vector<OptionSpec> RunTable() {
  const double gib = static_cast<double>(kGiB);
  return {
      StringOption("--dir", "", "dataset folder (alias --data)"),
      EnumOption("--profile", "balanced", {"balanced", "io-bound", "compute-bound"}, "presets"),
      IntOption("--samples", "256", 1, 10'000'000, "dataset files when generating"),
      SizeOption("--sample-size", "128KiB", 1, gib, "bytes per file when generating"),
      EnumOption("--reader", "posix", {"posix", "io_uring"}, "read path"),
      EnumOption("--io-mode", "direct", {"direct", "fadvise", "buffered"}, "page-cache bypass"),
      IntOption("--queue-depth", "8", 1, 4096, "io_uring reads in flight per loader"),
      SizeOption("--read-block", "1MiB", 4096, gib, "bytes per read request"),
      IntOption("--threads", "2", 1, 256, "loader threads per rank"),
      IntOption("--prefetch", "4", 1, 1024, "batches ahead of the loop"),
      IntOption("--batch-size", "32", 1, 65536, "samples per step"),
      IntOption("--decode-work", "2", 0, 1000, "decode passes per byte"),
      StringOption("--h2d-size", "batch", "bytes copied host-to-device per step, or 'batch'"),
      IntOption("--gemm-dim", "384", 16, 32768, "square GEMM size"),
      IntOption("--gemm-count", "3", 0, kMaxGemmCount, "GEMMs per step"),
      DoubleOption("--gemm-flops", "0", 0, 1e18, "FLOPs per step instead of --gemm-count"),
      IntOption("--compute-threads", "1", 1, 256, "CPU sgemm threads"),
      IntOption("--ranks", "1", 1, 64, "data-parallel ranks"),
      SizeOption("--allreduce-size", "4MiB", 4, 16 * gib, "gradient bytes per step"),
      EnumOption("--comm", "shm", {"shm", "tcp"}, "allreduce transport"),
      IntOption("--rank", "0", 0, kMaxWorld - 1, "this process's rank (--comm tcp)"),
      IntOption("--world-size", "1", 1, kMaxWorld, "ranks in all (--comm tcp)"),
      StringOption("--master", "", "rank 0's ADDR:PORT (--comm tcp)"),
      DurationOption("--connect-timeout", "60s", 0.1, 86400, "how long ranks wait for each other"),
      EnumOption("--device", "auto", {"auto", "cpu", "cuda"}, "where GEMMs run"),
      IntOption("--steps", "30", 1, 100'000'000, "measured steps"),
      IntOption("--warmup-steps", "2", 0, 100'000'000, "steps before them"),
      UintOption("--seed", "1", "shuffling and dataset seed"),
  };
}

// Flags that are other spellings of a table row, and values that are other spellings of a choice.
std::string CanonicalFlag(const std::string& name) { return name == "--data" ? "--dir" : name; }
std::string CanonicalValue(const std::string& flag, const std::string& value) {
  return flag == "--reader" && value == "io-uring" ? "io_uring" : value;
}

// Collects "--flag value" / "--flag=value" pairs for the table's rows (a repeated flag: the last
// one wins) and checks them against it.
Result<OptionValues> ParseFlags(const std::vector<std::string>& args,
                                const std::vector<OptionSpec>& table, const std::string& command) {
  const std::string see = " (see codl-victim " + command + " --help)";
  std::map<std::string, std::string> given;
  FlagScanner flags(args);
  while (flags.Next()) {
    const std::string name = CanonicalFlag(flags.name());
    bool known = false;
    for (const auto& row : table) known = known || row.name == name;
    if (!known) {
      return Err(std::string(flags.is_flag() ? "unknown option '" : "unexpected argument '") +
                 flags.name() + "'" + see);
    }
    auto value = flags.Value();
    if (!value.ok()) return Error{value.error() + see, value.code()};
    given[name] = CanonicalValue(name, *value);
  }
  return ParseOptionTable("codl-victim " + command, table, given);
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h" || a == "help") return true;
  }
  return false;
}

Profile ToProfile(const std::string& name) {
  if (name == "io-bound") return Profile::kIoBound;
  if (name == "compute-bound") return Profile::kComputeBound;
  return Profile::kBalanced;
}

template <class E>
E Choice(const std::string& value, std::initializer_list<std::pair<const char*, E>> choices) {
  for (const auto& [name, e] : choices) {
    if (value == name) return e;
  }
  return choices.begin()->second;  // unreachable: the table accepted only these names
}

// Presets. Sized so that ~30 steps take a few seconds on a 2-core machine; io-bound makes the
// loader (reads) the bottleneck, compute-bound the GEMMs. Explicit flags override every field.
void ApplyProfile(Profile p, RunOptions& o) {
  switch (p) {
    case Profile::kBalanced:
      o.samples = 256;
      o.sample_size = 128 * 1024;
      o.batch_size = 32;
      o.threads = 2;
      o.prefetch = 4;
      o.decode_work = 2;
      o.gemm_dim = 384;
      o.gemm_count = 3;
      break;
    case Profile::kIoBound:
      // Large samples, no decode, one small GEMM: the training loop waits for storage.
      o.samples = 64;
      o.sample_size = 1024 * 1024;
      o.batch_size = 16;
      o.threads = 2;
      o.prefetch = 2;
      o.decode_work = 0;
      o.gemm_dim = 128;
      o.gemm_count = 1;
      break;
    case Profile::kComputeBound:
      // Small samples, light decode, several large GEMMs: storage hardly matters.
      o.samples = 256;
      o.sample_size = 16 * 1024;
      o.batch_size = 16;
      o.threads = 1;
      o.prefetch = 4;
      o.decode_work = 1;
      o.gemm_dim = 384;
      o.gemm_count = 6;
      break;
  }
  o.profile = p;
}

// The table's values into `o`. Options a profile presets keep the preset's value unless given;
// every other option takes the table's value (its default when not given).
void StoreRunFlags(const OptionValues& v, RunOptions& o) {
  auto preset_int = [&](const char* name, auto& field) {
    if (v.WasSet(name)) field = static_cast<std::remove_reference_t<decltype(field)>>(v.Int(name));
  };
  auto to_int = [&](const char* name) { return static_cast<int>(v.Int(name)); };
  o.dir = v.String("--dir");
  preset_int("--samples", o.samples);
  if (v.WasSet("--sample-size")) o.sample_size = v.Size("--sample-size");
  o.samples_explicit = v.WasSet("--samples");
  o.sample_size_explicit = v.WasSet("--sample-size");
  o.reader = Choice<ReaderKind>(
      v.String("--reader"), {{"posix", ReaderKind::kPosix}, {"io_uring", ReaderKind::kIoUring}});
  o.io_mode = Choice<IoMode>(v.String("--io-mode"), {{"direct", IoMode::kDirect},
                                                     {"fadvise", IoMode::kFadvise},
                                                     {"buffered", IoMode::kBuffered}});
  o.queue_depth = to_int("--queue-depth");
  o.read_block = v.Size("--read-block");
  preset_int("--threads", o.threads);
  preset_int("--prefetch", o.prefetch);
  preset_int("--batch-size", o.batch_size);
  preset_int("--decode-work", o.decode_work);
  preset_int("--gemm-dim", o.gemm_dim);
  preset_int("--gemm-count", o.gemm_count);
  o.compute_threads = to_int("--compute-threads");
  o.ranks = to_int("--ranks");
  o.allreduce_size = v.Size("--allreduce-size");
  o.device = Choice<DeviceChoice>(
      v.String("--device"),
      {{"auto", DeviceChoice::kAuto}, {"cpu", DeviceChoice::kCpu}, {"cuda", DeviceChoice::kCuda}});
  o.steps = to_int("--steps");
  o.warmup_steps = to_int("--warmup-steps");
  o.seed = v.Uint("--seed");
}

// --h2d-size: a size in [0, 64GiB], or "batch" (-1: the batch's bytes).
Result<int64_t> H2dSize(const std::string& text) {
  if (text == "batch") return int64_t{-1};
  auto size = ParseOptionValue(SizeOption("--h2d-size", "0", 0, 64.0 * kGiB, ""), text);
  if (!size.ok()) return Error{size.error() + " (or 'batch')", size.code()};
  return static_cast<int64_t>(std::get<uint64_t>(*size));
}

// --gemm-flops instead of --gemm-count: whole GEMMs of --gemm-dim, rounded up.
Status ApplyGemmFlops(const OptionValues& v, RunOptions& o) {
  if (!v.WasSet("--gemm-flops")) return Status::Ok();
  if (v.WasSet("--gemm-count"))
    return Err("--gemm-flops and --gemm-count both given; use one of them");
  const double flops = v.Double("--gemm-flops");
  const double count = std::ceil(flops / (2.0 * std::pow(static_cast<double>(o.gemm_dim), 3)));
  if (count > kMaxGemmCount) {
    return Err("--gemm-flops: " + std::to_string(flops) +
               " needs more than 100000 GEMMs of "
               "--gemm-dim " +
               std::to_string(o.gemm_dim) + "; raise --gemm-dim");
  }
  o.gemm_count = static_cast<int>(count);
  return Status::Ok();
}

// "--master ADDR:PORT" (ADDR may be [v6]): the host and port, or why not.
Status SplitMaster(const std::string& text, RunOptions& o) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Err("--master: '" + text + "' is not ADDR:PORT");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  auto port = ParseOptionValue(IntOption("--master", "1", 1, 65535, ""), text.substr(colon + 1));
  if (!port.ok()) return Error{port.error() + " (the port of ADDR:PORT)", port.code()};
  o.master_host = host;
  o.master_port = static_cast<int>(std::get<int64_t>(*port));
  return Status::Ok();
}

// The flag when given, else the environment variable, parsed against the flag's bounds (the
// message names the variable). Absent from both: nullopt.
Result<std::optional<int64_t>> FlagOrEnv(const OptionValues& v, const char* flag, const char* var,
                                         double min, double max, const EnvLookup& env) {
  if (v.WasSet(flag)) return std::optional<int64_t>(v.Int(flag));
  const char* text = env ? env(var) : nullptr;
  if (text == nullptr) return std::optional<int64_t>();
  auto parsed = ParseOptionValue(IntOption(var, "0", min, max, ""), text);
  if (!parsed.ok()) return parsed.status().WithContext("environment");
  return std::optional<int64_t>(std::get<int64_t>(*parsed));
}

// --comm and, for tcp, the rank, world size and master: flags first, then the torch.distributed
// variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), as a launcher such as torchrun or the
// CoDL controller sets them.
Status ResolveComm(const OptionValues& v, const EnvLookup& env, RunOptions& o) {
  o.comm = v.String("--comm") == "tcp" ? CommKind::kTcp : CommKind::kShm;
  o.connect_timeout_s = v.Duration("--connect-timeout");
  if (o.comm == CommKind::kShm) {
    for (const char* f : {"--rank", "--world-size", "--master"}) {
      if (v.WasSet(f)) return Err(std::string(f) + " needs --comm tcp");
    }
    return Status::Ok();
  }
  if (o.ranks > 1) {
    return Err(
        "--comm tcp runs one rank per process: drop --ranks (start one codl-victim per "
        "rank, with RANK/WORLD_SIZE or --rank/--world-size)");
  }
  auto world = FlagOrEnv(v, "--world-size", "WORLD_SIZE", 1, kMaxWorld, env);
  if (!world.ok()) return world.status();
  auto rank = FlagOrEnv(v, "--rank", "RANK", 0, kMaxWorld - 1, env);
  if (!rank.ok()) return rank.status();
  if (!world->has_value() || !rank->has_value()) {
    return Err(
        "--comm tcp: set RANK and WORLD_SIZE in the environment, or --rank and "
        "--world-size");
  }
  o.world_size = static_cast<int>(**world);
  o.rank = static_cast<int>(**rank);
  if (o.rank >= o.world_size) {
    return Err("--comm tcp: rank " + std::to_string(o.rank) + " is not below the world size " +
               std::to_string(o.world_size));
  }
  if (v.WasSet("--master")) return SplitMaster(v.String("--master"), o);
  const char* port_text = env ? env("MASTER_PORT") : nullptr;
  if (port_text != nullptr) {
    auto p = ParseOptionValue(IntOption("MASTER_PORT", "1", 1, 65535, ""), port_text);
    if (!p.ok()) return p.status().WithContext("environment");
    o.master_port = static_cast<int>(std::get<int64_t>(*p));
  }
  const char* addr = env ? env("MASTER_ADDR") : nullptr;
  if (addr != nullptr) o.master_host = addr;
  // Rank 0 only listens; every other rank must know where.
  if (o.rank > 0 && o.master_host.empty()) {
    return Err("--comm tcp: rank " + std::to_string(o.rank) +
               " needs rank 0's address: set MASTER_ADDR (and MASTER_PORT) or --master ADDR:PORT");
  }
  return Status::Ok();
}

}  // namespace

namespace {
std::vector<std::string> Names(const std::vector<OptionSpec>& table) {
  std::vector<std::string> names;
  for (const auto& row : table) names.push_back(row.name);
  names.push_back("--data");
  return names;
}
}  // namespace

std::vector<std::string> GenDataFlags() { return Names(GenDataTable()); }
std::vector<std::string> RunFlags() { return Names(RunTable()); }

Result<Parsed<GenDataOptions>> ParseGenDataArgs(const std::vector<std::string>& args) {
  Parsed<GenDataOptions> parsed;
  if (WantsHelp(args)) {
    parsed.help = true;
    return parsed;
  }
  auto v = ParseFlags(args, GenDataTable(), "gen-data");
  if (!v.ok()) return v.status();
  GenDataOptions& o = parsed.options;
  o.dir = v->String("--dir");
  o.samples = v->Int("--samples");
  o.sample_size = v->Size("--sample-size");
  o.seed = v->Uint("--seed");
  if (o.dir.empty()) return Err("gen-data: --dir is required (where to write the samples)");
  return parsed;
}

Result<Parsed<RunOptions>> ParseRunArgs(const std::vector<std::string>& args) {
  return ParseRunArgs(args, [](const char* name) -> const char* { return std::getenv(name); });
}

Result<Parsed<RunOptions>> ParseRunArgs(const std::vector<std::string>& args,
                                        const EnvLookup& env) {
  Parsed<RunOptions> parsed;
  if (WantsHelp(args)) {
    parsed.help = true;
    return parsed;
  }
  auto v = ParseFlags(args, RunTable(), "run");
  if (!v.ok()) return v.status();
  RunOptions& out = parsed.options;
  // The profile first wherever it appears on the line, so explicit flags always win.
  ApplyProfile(ToProfile(v->String("--profile")), out);
  StoreRunFlags(*v, out);
  auto h2d = H2dSize(v->String("--h2d-size"));
  if (!h2d.ok()) return h2d.status();
  out.h2d_size = *h2d;

  if (out.dir.empty())
    return Err("run: --dir is required (the dataset folder; run generates it when empty)");
  if (out.read_block % 4096 != 0) {
    return Err("--read-block: must be a multiple of 4KiB (O_DIRECT needs aligned reads)");
  }
  if (Status s = ApplyGemmFlops(*v, out); !s.ok()) return s;
  if (Status s = ResolveComm(*v, env, out); !s.ok()) return s;
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

  --dir DIR          folder to write (created; alias --data); files sample-00000000.bin ...
                     plus a manifest
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
  --comm shm|tcp       allreduce transport (default shm: the --ranks threads above). tcp: one
                       rank per process, on one node or many, a ring reduce-scatter + all-gather
                       over TCP each step; the rank, world size and rank 0's address come from
                       RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torch.distributed's), or:
  --rank R             this process's rank, 0..world-size-1 (--comm tcp)
  --world-size N       ranks in all, one process each (--comm tcp)
  --master ADDR:PORT   where rank 0 listens (it binds PORT on every address; the other ranks
                       dial ADDR:PORT). Default port 29500 (MASTER_PORT).
  --connect-timeout D  how long the ranks retry and wait for each other before the first step
                       (default 60s); the error names the address it could not reach
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
