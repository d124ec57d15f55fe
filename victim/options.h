// Command-line options of codl-victim: what the user asked for, validated once, with the
// --profile presets applied underneath explicit flags. The flags are typed option tables
// (lib/common/options.h, shared with codl-inject; no CLI library) so the binary builds on a bare
// CUDA box.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::victim {

enum class ReaderKind { kPosix, kIoUring };
// How reads avoid the page cache. kDirect falls back to kFadvise when the file system refuses
// O_DIRECT (tmpfs, some FUSE/overlay mounts); the first output line says which one ran.
enum class IoMode { kDirect, kFadvise, kBuffered };
enum class DeviceChoice { kAuto, kCpu, kCuda };
enum class Profile { kBalanced, kIoBound, kComputeBound };
// How ranks allreduce: kShm, --ranks threads of this process; kTcp, one rank per process, a
// ring over TCP between processes (on one node or many), torch.distributed style.
enum class CommKind { kShm, kTcp };

const char* ToString(ReaderKind k);
const char* ToString(IoMode m);
const char* ToString(Profile p);

struct GenDataOptions {
  std::string dir;
  int64_t samples = 256;
  uint64_t sample_size = 128 * 1024;
  uint64_t seed = 1;
};

struct RunOptions {
  std::string dir;
  Profile profile = Profile::kBalanced;
  // Dataset shape used when --dir holds no dataset yet (run generates it). On an existing
  // dataset the manifest wins unless these were given explicitly (then they must match).
  int64_t samples = 256;
  uint64_t sample_size = 128 * 1024;
  bool samples_explicit = false;
  bool sample_size_explicit = false;

  ReaderKind reader = ReaderKind::kPosix;
  IoMode io_mode = IoMode::kDirect;
  int queue_depth = 8;
  uint64_t read_block = 1024 * 1024;
  int threads = 2;   // loader threads per rank (DataLoader num_workers)
  int prefetch = 4;  // batches decoded ahead of the training loop, per rank
  int batch_size = 32;
  int decode_work = 2;    // decode passes over each sample; 0 = no decode stage
  int64_t h2d_size = -1;  // bytes per step; -1 = the batch's bytes; 0 = no h2d stage
  int gemm_dim = 384;
  int gemm_count = 3;       // GEMMs per step; 0 = no compute stage
  int compute_threads = 1;  // CPU GEMM threads (host fallback only)
  int ranks = 1;
  uint64_t allreduce_size = 4 * 1024 * 1024;
  CommKind comm = CommKind::kShm;
  // --comm tcp: this process's rank of world_size, and where rank 0 listens (master_host is
  // only dialled by the other ranks). From RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT unless
  // --rank/--world-size/--master were given.
  int rank = 0;
  int world_size = 1;
  std::string master_host;
  int master_port = 29500;
  double connect_timeout_s = 60;  // ranks > 0 retry connecting for this long; rank 0 waits
  DeviceChoice device = DeviceChoice::kAuto;
  int steps = 30;
  int warmup_steps = 2;
  uint64_t seed = 1;
};

// A parse outcome: options, or "print this help and exit 0", or an error (exit 2).
template <class T>
struct Parsed {
  T options;
  bool help = false;
};

Result<Parsed<GenDataOptions>> ParseGenDataArgs(const std::vector<std::string>& args);
// `env` looks up the torch.distributed variables (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)
// for --comm tcp; nullptr when unset. The one-argument form reads the process environment.
using EnvLookup = std::function<const char*(const char*)>;
Result<Parsed<RunOptions>> ParseRunArgs(const std::vector<std::string>& args);
Result<Parsed<RunOptions>> ParseRunArgs(const std::vector<std::string>& args, const EnvLookup& env);

// Ranks in all and a rank's place among them: the --ranks threads of this process (shm), or
// this process among --world-size processes (tcp; it runs one rank, thread 0).
int WorldSize(const RunOptions& o);
int GlobalRank(const RunOptions& o, int thread_rank);

// The bytes one step copies host-to-device under `o` (resolves -1 to the batch size).
uint64_t EffectiveH2dBytes(const RunOptions& o, uint64_t sample_size);

// The flags each command accepts (its option table's names, plus the --data alias).
std::vector<std::string> GenDataFlags();
std::vector<std::string> RunFlags();

std::string TopLevelHelp();
std::string RunHelp();
std::string GenDataHelp();

}  // namespace codl::victim
