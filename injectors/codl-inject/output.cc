#include "injectors/codl-inject/output.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "injectors/gpu/gpu_info.h"
#include "injectors/registry.h"
#include "lib/common/json_line.h"
#include "lib/common/units.h"

namespace codl::inject {
namespace {

std::string Pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", x * 100);
  return buf;
}

// The agent's GPU registration labels, one line after the injectors (the agent links no CUDA
// library, so it asks codl-inject): {"gpu_labels":{"gpu_count":"2",...}}.
void PrintGpuLabelsJson() {
  std::printf("%s\n",
              JsonLine().AddObject("gpu_labels", injectors::DetectGpuLabels()).str().c_str());
}

}  // namespace

void JsonReporter::Report(const injectors::Sample& s) {
  JsonLine line;
  line.Add("t_s", s.t_s).Add("achieved", s.achieved).Add("target", s.target).Add("unit", unit_);
  line.Add("phase", phase_).Add("saturated", s.saturated);
  for (const auto& [k, v] : s.extra) line.Add(k, v);
  std::fputs((line.str() + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void StartAccountReporter::Finish() {
  account_.started_unix_ns = gate_.started_unix_ns.load(std::memory_order_relaxed);
  if (account_.started_unix_ns == 0) return;  // stopped before the start: no load, no account
  if (!account_printed_) {
    account_printed_ = true;
    JsonLine line;
    line.Add("started_unix_ns", account_.started_unix_ns);
    line.Add("start_at_unix_ns", account_.start_at_unix_ns);
    line.Add("ready_unix_ns", account_.ready_unix_ns).Add("setup_s", account_.setup_s);
    line.Add("setup_estimate_s", account_.setup_estimate_s);
    std::fputs((line.str() + "\n").c_str(), stdout);
  }
  if (!first_load_printed_) {
    const injectors::Injector::FirstLoad f = inj_.FirstLoadTimes();
    if (f.submitted_unix_ns > 0) {
      first_load_printed_ = true;
      JsonLine line;
      line.Add("first_load_unix_ns", f.submitted_unix_ns);
      if (f.completed_unix_ns > 0) line.Add("first_done_unix_ns", f.completed_unix_ns);
      std::fputs((line.str() + "\n").c_str(), stdout);
    }
  }
  std::fflush(stdout);
}

void StartAccountReporter::Report(const injectors::Sample& s) {
  Finish();
  inner_->Report(s);
}

HumanReporter::HumanReporter(std::string unit, std::string phase)
    : unit_(std::move(unit)), phase_(std::move(phase)), tty_(isatty(STDOUT_FILENO) == 1) {}

HumanReporter::~HumanReporter() {
  if (dirty_) std::fputs("\n", stdout);
  std::fflush(stdout);
}

void HumanReporter::Report(const injectors::Sample& s) {
  if (!tty_ && s.t_s - last_print_ < 1.0) return;  // logs: one line per second is plenty
  last_print_ = s.t_s;
  std::string line =
      "[" + phase_ + "] " + FormatDuration(s.t_s) + "  achieved " + FormatRate(s.achieved, unit_);
  if (s.target > 0) {
    line += "  target " + FormatRate(s.target, unit_) + " (" + Pct(s.achieved / s.target) + ")";
  }
  for (const auto& [k, v] : s.extra) line += "  " + FormatRate(v, k == "iops" ? "IOPS" : k);
  if (s.saturated) line += "  SATURATED";
  if (tty_) {
    line.resize(std::max<size_t>(line.size(), 100), ' ');
    std::fputs(("\r" + line).c_str(), stdout);
    dirty_ = true;
  } else {
    std::fputs((line + "\n").c_str(), stdout);
  }
  std::fflush(stdout);
}

void PrintSummaryJson(const SummaryFields& f) {
  JsonLine line;
  line.Add("summary", true).Add("injector", f.injector).Add("unit", f.unit).Add("mode", f.mode);
  line.Add("target_rate", f.target_rate).Add("achieved_rate", f.run.achieved_rate);
  line.Add("peak_rate", f.peak_rate).Add("cov", f.run.cov).Add("seconds", f.run.seconds);
  if (f.level >= 0) line.Add("level", f.level);
  line.Add("saturated", f.run.saturated).Add("stopped_by_signal", f.stopped_by_signal);
  for (const auto& [k, v] : f.run.extra) line.Add(k, v);
  if (!f.run.notes.empty()) {
    std::string notes = "[";
    for (const auto& n : f.run.notes) notes += (notes.size() > 1 ? "," : "") + JsonEscape(n);
    line.AddRaw("notes", notes + "]");
  }
  std::fputs((line.str() + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void PrintSummaryHuman(const SummaryFields& f) {
  std::string s = "codl-inject " + f.injector + " (" + f.mode + "): achieved " +
                  FormatRate(f.run.achieved_rate, f.unit);
  if (f.target_rate > 0) {
    s += ", target " + FormatRate(f.target_rate, f.unit) + " (" +
         Pct(f.run.achieved_rate / f.target_rate) + ")";
  }
  if (f.peak_rate > 0) s += ", peak " + FormatRate(f.peak_rate, f.unit);
  for (const auto& [k, v] : f.run.extra) s += ", " + FormatRate(v, k == "iops" ? "IOPS" : k);
  char buf[96];
  std::snprintf(buf, sizeof buf, ", CoV %.1f%% over %s", f.run.cov * 100,
                FormatDuration(f.run.seconds).c_str());
  s += buf;
  if (f.run.saturated) s += "  [SATURATED: the resource delivered less than the target]";
  std::printf("%s\n", s.c_str());
  for (const auto& n : f.run.notes) std::printf("  note: %s\n", n.c_str());
  std::fflush(stdout);
}

void PrintUsage(std::FILE* out) {
  std::fputs(
      "codl-inject: run one calibrated antagonist (injector) in the foreground.\n"
      "\n"
      "usage:\n"
      "  codl-inject --list [--json]             injectors, their resource, unit, availability\n"
      "  codl-inject INJECTOR --help             the injector's options and unit\n"
      "  codl-inject INJECTOR [--set K=V]... --calibrate [--duration D] [--json]\n"
      "  codl-inject INJECTOR [--set K=V]... (--max | --rate R | --level F [--peak R])\n"
      "              [--duration D] [--calibrate-duration D] [--json]\n"
      "  codl-inject --cleanup-stale [--json]    remove run dirs left by killed runs\n"
      "\n"
      "  --set KEY=VALUE        injector option (repeatable); sizes 4KiB/1MiB, durations 500ms/2s\n"
      "  --calibrate            measure the peak rate alone (default 2s, or --duration)\n"
      "  --max                  as fast as possible\n"
      "  --rate R               hold an absolute rate: 2GiB/s, 500MB/s, 50kIOPS; a bare number is\n"
      "                         in the injector's unit\n"
      "  --level F              hold F x peak (0..1); calibrates first unless --peak R is given\n"
      "  --calibrate-duration D calibration length for --level (default 2s)\n"
      "  --start-at UNIX_NS     prepare first (files, buffers, calibration), then begin the load\n"
      "                         at this wall-clock time; --json prints {\"started_unix_ns\":N}\n"
      "  --duration D           hard limit on the pressure phase (default: until SIGINT/SIGTERM)\n"
      "  --json                 JSON lines: one per 200 ms interval, then a summary line\n"
      "  --scratch-root DIR     where injectors may write (repeatable); default\n"
      "                         $CODL_SCRATCH_ROOTS (colon-separated), else $TMPDIR or /tmp\n"
      "\n"
      "Rates are closed-loop: achieved rate is measured from completed work and fed back.\n"
      "Exit codes: 0 ok (also when stopped by SIGINT/SIGTERM), 1 runtime failure,\n"
      "2 bad usage or options.\n"
      "\n"
      "injectors:\n",
      out);
  for (const auto& name : injectors::InjectorNames()) {
    const auto* d = injectors::FindDescriptor(name);
    std::fprintf(out, "  %-14s %s (%s)\n", name.c_str(), d->summary.c_str(), d->unit.c_str());
  }
}

void PrintList(bool json, const injectors::HostInfo& host) {
  for (const auto& name : injectors::InjectorNames()) {
    auto inj = injectors::CreateInjector(name);
    const auto& d = inj->descriptor();
    const std::string reason = inj->Unsupported(host);
    if (json) {
      JsonLine line;
      line.Add("name", d.name).Add("resource", d.resource).Add("unit", d.unit);
      line.Add("available", reason.empty()).Add("reason", reason);
      std::printf("%s\n", line.str().c_str());
    } else {
      std::printf("%-12s %-28s %-14s %s\n", d.name.c_str(), d.resource.c_str(), d.unit.c_str(),
                  reason.empty() ? "available" : ("unavailable: " + reason).c_str());
    }
  }
  if (json) PrintGpuLabelsJson();
  std::fflush(stdout);
}

void PrintInjectorHelp(const injectors::Injector& inj, const injectors::HostInfo& host) {
  const auto& d = inj.descriptor();
  std::printf("%s: %s\n", d.name.c_str(), d.summary.c_str());
  std::printf("resource: %s\n", d.resource.c_str());
  std::printf("unit: %s — %s\n", d.unit.c_str(), d.unit_help.c_str());
  const std::string reason = inj.Unsupported(host);
  std::printf("available here: %s\n\n", reason.empty() ? "yes" : ("no — " + reason).c_str());
  std::printf("options (--set KEY=VALUE):\n");
  std::fputs(RenderOptionTable(d.options, "  ").c_str(), stdout);
  std::printf(
      "\nrates (--rate, --peak): a bare number is in %s; units like 2GiB/s or 50kIOPS are "
      "converted when they apply.\n",
      d.unit.c_str());
}

}  // namespace codl::inject
