// stream_copy: the STREAM "Copy" kernel (c[j] = a[j] over double arrays), one array pair per
// thread, used by bench/run_injector_bench.sh as the reference for codl-inject memcpy --max.
// Same threads and per-thread buffer size as the injector, same allocation (mmap + THP hint,
// first touch by the copying thread), so the comparison is about the copy loop alone.
// Prints one JSON line. Bandwidth is reported both as bytes copied/s (CoDL's convention: each
// byte once) and as STREAM reports it (read + write: 2x).
//
// build: c++ -O3 -march=native -pthread stream_copy.cc -o stream_copy
// usage: stream_copy THREADS BUFFER_BYTES SECONDS [WARMUP_SECONDS]
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double* Allocate(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("mmap");
    std::exit(1);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  return static_cast<double*>(p);
}

// The STREAM Copy loop, kept out of line so the compiler treats it exactly as STREAM's.
__attribute__((noinline)) void Copy(double* __restrict c, const double* __restrict a, size_t n) {
  for (size_t j = 0; j < n; ++j) c[j] = a[j];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s THREADS BUFFER_BYTES SECONDS [WARMUP_SECONDS]\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const size_t bytes = std::strtoull(argv[2], nullptr, 10) / sizeof(double) * sizeof(double);
  const double seconds = std::atof(argv[3]);
  const double warmup = argc > 4 ? std::atof(argv[4]) : 1.0;
  const size_t n = bytes / sizeof(double);

  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> measured_bytes(threads, 0);
  double t_start = 0, t_end = 0;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      double* a = Allocate(bytes);
      double* c = Allocate(bytes);
      for (size_t j = 0; j < n; ++j) a[j] = 1.0 + t, c[j] = 0.0;  // first touch, like STREAM
      ready.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      // Whole passes only; a pass counts if it ends inside the measured window.
      while (true) {
        Copy(c, a, n);
        const double now = Now();
        if (now >= t_end) break;
        if (now >= t_start) measured_bytes[t] += static_cast<double>(bytes);
      }
      if (c[n / 2] != 1.0 + t) std::fprintf(stderr, "stream_copy: wrong result\n");
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const double t0 = Now();
  t_start = t0 + warmup;
  t_end = t_start + seconds;
  go = true;
  for (auto& th : pool) th.join();
  double total = 0;
  for (double b : measured_bytes) total += b;
  const double copied_per_s = total / seconds;
  std::printf(
      "{\"threads\":%d,\"buffer_bytes\":%zu,\"seconds\":%.3f,"
      "\"copy_bytes_per_s\":%.6g,\"stream_convention_bytes_per_s\":%.6g}\n",
      threads, bytes, seconds, copied_per_s, 2 * copied_per_s);
  return 0;
}
