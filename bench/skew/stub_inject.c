/* A stand-in for codl-inject for the skew benchmark's ablation (--stub-injector): it speaks
 * codl-inject's stdout protocol (a JSON rate sample every 250 ms, a summary line on SIGTERM)
 * but starts in well under a millisecond (static, no libraries to load), where codl-inject
 * takes ~4.5 ms of CPU to start. With N agent "hosts" sharing 2 CPUs, N simultaneous
 * start-ups queue behind each other; this separates that machine effect from the control
 * plane's own start error. Not an injector: it generates no load.
 *   cc -O2 -static -o stub_inject stub_inject.c
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop = 0;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char** argv) {
  double rate = 100;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--list") || !strcmp(argv[i], "--cleanup-stale")) return 0;
    if (!strcmp(argv[i], "--rate") && i + 1 < argc) sscanf(argv[i + 1], "%lf", &rate);
  }
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int n = 0;
  while (!stop) {
    struct timespec ts = {0, 250000000};
    nanosleep(&ts, NULL);
    if (stop) break;
    ++n;
    printf("{\"t_s\":%.3f,\"achieved\":%g,\"target\":%g,\"unit\":\"ops/s\"}\n", n * 0.25, rate, rate);
  }
  printf("{\"summary\":true,\"achieved_rate\":%g,\"target_rate\":%g,\"cov\":0,\"unit\":\"ops/s\"}\n", rate, rate);
  return 0;
}
