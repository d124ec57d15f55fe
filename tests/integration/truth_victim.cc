// codl-truth-victim: a test victim whose slowdown is known by construction. It looks up the
// antagonist running beside it (the codl-inject process whose argv has `--scratch-root TAG`,
// TAG unique to the test) and reads its intensity x from that argv: --rate R gives x = R /
// capacity, --max gives 1, no antagonist gives 0. It then reports step times built from x,
// never measured (it sleeps each one, so that they fit in its wall time), so the truth is exact:
//   steady     step i takes base * (1 + gain * x) * {0.9, 1.0, 1.1, 1.0}[i % 4]: every metric
//              (elapsed, throughput, mean, median, pNN) has slowdown 1 + gain * x.
//   pipelined  a loader that falls behind: a step is slow (3 * base) or fast (base); the share
//              of slow steps is 40% + 20% * x, spread evenly. With x = 1 over 20 steps elapsed
//              time grows 440/360 = 1.222x while the median jumps from fast to slow (3x).
//   phases     steady's cycle on compute only, and phases whose added time is known: a step is
//              compute_s (base x cycle) + data_wait_s (base x gain x x) + h2d_s (0.2 % of base,
//              near zero) + 5 % of base it does not time; read_s (base x (1 + 3x)) is an
//              overlapped loader stage, not part of the step. So per step the antagonist adds
//              exactly base x gain x x, all of it data_wait_s, nothing untimed.
//   pair       two jobs, each slowed by the other (a workload antagonist's ground truth): with
//              --pair TAG --role victim|neighbour, a step takes base * (1 + gain) while a
//              process of the other role with the same TAG runs, else base. --steps 0 runs
//              until killed (a neighbour); --exit-after-peer S exits S seconds after it first
//              saw the other (a neighbour that ends before the victim).
// Usage: codl-truth-victim --tag DIR --capacity C [--steps N] [--warmup W] [--base S]
//                          [--gain G] [--pipelined | --phases]
//        codl-truth-victim --pair TAG --role victim|neighbour [--steps N] [--warmup W]
//                          [--base S] [--gain G] [--exit-after-peer S]
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string tag;
  double capacity = 0;
  int steps = 20;
  int warmup = 0;
  double base = 0.01;
  double gain = 0.5;
  bool pipelined = false;
  bool phases = false;
  std::string pair;  // --pair TAG: pair mode
  std::string role;  // victim | neighbour
  double exit_after_peer_s = -1;
};

// A process may exit while its cmdline is read: read(2) then fails (ESRCH), which an
// istreambuf_iterator turns into an exception. Plain reads: what was read, else nothing.
std::vector<std::string> Argv(const std::string& pid) {
  std::string raw;
  const int fd = open(("/proc/" + pid + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) raw.append(buf, static_cast<size_t>(n));
    close(fd);
  }
  std::vector<std::string> argv;
  for (size_t start = 0; start < raw.size();) {
    const size_t end = raw.find('\0', start);
    argv.push_back(raw.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return argv;
}

// The intensity of this test's running antagonist (see the header comment); -1 if ambiguous.
double AntagonistIntensity(const Options& o) {
  double x = 0;
  int found = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::vector<std::string> argv = Argv(e->d_name);
    bool ours = false, calibrating = false;
    double rate = -1;
    for (size_t i = 0; i < argv.size(); ++i) {
      const bool has_next = i + 1 < argv.size();
      if (argv[i] == "--scratch-root" && has_next && argv[i + 1] == o.tag) ours = true;
      if (argv[i] == "--calibrate") calibrating = true;
      if (argv[i] == "--max") rate = o.capacity;
      if (argv[i] == "--rate" && has_next) rate = std::strtod(argv[i + 1].c_str(), nullptr);
    }
    if (!ours || calibrating || rate < 0 || argv.empty() ||
        argv[0].find("codl-inject") == std::string::npos) {
      continue;
    }
    x = rate / o.capacity;
    ++found;
  }
  closedir(d);
  return found <= 1 ? x : -1;
}

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--pipelined") o->pipelined = true;
    else if (a == "--phases") o->phases = true;
    else if (!v) return false;
    else if (a == "--tag") o->tag = argv[++i];
    else if (a == "--capacity") o->capacity = std::atof(argv[++i]);
    else if (a == "--steps") o->steps = std::atoi(argv[++i]);
    else if (a == "--warmup") o->warmup = std::atoi(argv[++i]);
    else if (a == "--base") o->base = std::atof(argv[++i]);
    else if (a == "--gain") o->gain = std::atof(argv[++i]);
    else if (a == "--pair") o->pair = argv[++i];
    else if (a == "--role") o->role = argv[++i];
    else if (a == "--exit-after-peer") o->exit_after_peer_s = std::atof(argv[++i]);
    else return false;
  }
  if (!o->pair.empty()) {
    return (o->role == "victim" || o->role == "neighbour") && o->steps >= 0;
  }
  return !o->tag.empty() && o->capacity > 0 && o->steps > 0;
}

// Pair mode: whether a process of the other role with this pair's tag runs.
bool PeerRuns(const Options& o) {
  const std::string other = o.role == "victim" ? "neighbour" : "victim";
  DIR* d = opendir("/proc");
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::vector<std::string> argv = Argv(e->d_name);
    bool tag = false, role = false;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      tag = tag || (argv[i] == "--pair" && argv[i + 1] == o.pair);
      role = role || (argv[i] == "--role" && argv[i + 1] == other);
    }
    if (tag && role) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int RunPair(const Options& o) {
  double first_seen = -1;
  for (int i = 0; o.steps == 0 || i < o.warmup + o.steps; ++i) {
    const bool peer = PeerRuns(o);
    if (peer && first_seen < 0) first_seen = Now();
    if (o.exit_after_peer_s >= 0 && first_seen >= 0 && Now() - first_seen >= o.exit_after_peer_s)
      return 0;
    const double t = o.base * (1 + (peer ? o.gain : 0));
    std::printf("{\"step\": %d, \"step_time_s\": %.9g}\n", i, t);
    std::fflush(stdout);
    usleep(static_cast<useconds_t>(t * 1e6));
  }
  return 0;
}

constexpr double kCycle[] = {0.9, 1.0, 1.1, 1.0};

// --phases: one step's phases (see the header comment) and its step time.
struct PhasedStep {
  double compute, data_wait, h2d, read, step;
};
PhasedStep Phased(const Options& o, double x, int measured_index) {
  PhasedStep s;
  s.compute = o.base * kCycle[measured_index % 4];
  s.data_wait = o.base * o.gain * x;
  s.h2d = 0.002 * o.base;
  s.read = o.base * (1 + 3 * x);
  s.step = s.compute + s.data_wait + s.h2d + 0.05 * o.base;
  return s;
}

double StepTime(const Options& o, double x, int measured_index) {
  if (o.phases) return Phased(o, x, measured_index).step;
  if (!o.pipelined) return o.base * (1 + o.gain * x) * kCycle[measured_index % 4];
  // Integer arithmetic: exactly floor(n * pct / 100) of the first n steps are slow.
  const int pct = 40 + static_cast<int>(20 * x + 0.5);
  const bool slow = (measured_index + 1) * pct / 100 > measured_index * pct / 100;
  return slow ? 3 * o.base : o.base;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: codl-truth-victim --tag DIR --capacity C [--steps N] [--warmup W] "
                 "[--base S] [--gain G] [--pipelined | --phases]\n"
                 "       codl-truth-victim --pair TAG --role victim|neighbour [--steps N] "
                 "[--warmup W] [--base S] [--gain G] [--exit-after-peer S]\n");
    return 2;
  }
  if (!o.pair.empty()) return RunPair(o);
  const double x = AntagonistIntensity(o);
  if (x < 0) {
    std::fprintf(stderr, "codl-truth-victim: more than one antagonist with tag %s\n",
                 o.tag.c_str());
    return 1;
  }
  std::fprintf(stderr, "codl-truth-victim: intensity %.6g\n", x);
  for (int i = 0; i < o.warmup + o.steps; ++i) {
    const int measured_index = i < o.warmup ? 0 : i - o.warmup;
    const double t = StepTime(o, x, measured_index);
    if (o.phases) {
      const PhasedStep s = Phased(o, x, measured_index);
      std::printf(
          "{\"step\": %d, \"step_time_s\": %.9g, \"phases\": {\"data_wait_s\": %.9g, "
          "\"read_s\": %.9g, \"h2d_s\": %.9g, \"compute_s\": %.9g}}\n",
          i, t, s.data_wait, s.read, s.h2d, s.compute);
    } else {
      std::printf("{\"step\": %d, \"step_time_s\": %.9g}\n", i, t);
    }
    std::fflush(stdout);
    // Each step takes the time it reports, as a real loop's would: the runner checks that the
    // steps fit in the victim's wall time ("metric looks wrong" otherwise).
    usleep(static_cast<useconds_t>(t * 1e6));
  }
  return 0;
}
