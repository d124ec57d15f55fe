#include "injectors/codl-inject/output.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "injectors/core/registry.h"
#include "injectors/core/victim_env.h"
#include "injectors/gpu/gpu_info.h"
#include "lib/common/units.h"

namespace codl::inject {
namespace {

std::string Pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", x * 100);
  return buf;
}

namespace protocol = injectors::protocol;

// One record, one line, flushed: the agent acts on each as it arrives.
template <class R>
void Write(const R& record) {
  std::fputs((record.Format() + "\n").c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void JsonReporter::Report(const injectors::Sample& s) {
  Write(protocol::Interval{s.t_s, s.achieved, s.target, unit_, phase_, s.saturated, s.extra});
}

Status StdoutHostServices::PublishRendezvous(std::string_view value) {
  const std::string key = options_ != nullptr && descriptor_.capabilities.collective
                              ? options_->String("rendezvous_key")
                              : "";
  if (key.empty()) {
    return FailedPrecondition(descriptor_.name +
                              ": a rendezvous needs a collective injector and its rendezvous_key");
  }
  Write(protocol::RendezvousPublish{key, std::string(value)});
  return Status::Ok();
}

Status StdoutHostServices::ExportVictimEnv(const std::map<std::string, std::string>& env) {
  if (!descriptor_.capabilities.exports_victim_env) {
    return Internal(descriptor_.name +
                    " exports victim variables but does not declare "
                    "exports_victim_env");
  }
  for (const auto& [name, value] : env) {
    if (!injectors::IsExportableEnvName(name)) {
      return Internal(descriptor_.name + ": '" + name + "' may not be exported to a victim");
    }
  }
  Write(protocol::VictimEnv{env});
  return Status::Ok();
}

void StdoutHostServices::Note(std::string_view text) {
  if (json_) {
    Write(protocol::Note{std::string(text)});
  } else {
    std::fprintf(stderr, "codl-inject %s: %.*s\n", descriptor_.name.c_str(),
                 static_cast<int>(text.size()), text.data());
  }
}

void StdoutHostServices::ReportMps(const protocol::MpsStatus& status) { Write(status); }

void StartAccountReporter::Finish() {
  account_.started_unix_ns = gate_.started_unix_ns.load(std::memory_order_relaxed);
  if (account_.started_unix_ns == 0) return;  // stopped before the start: no load, no account
  if (!account_printed_) {
    account_printed_ = true;
    Write(account_);
  }
  if (!first_load_printed_) {
    const injectors::Injector::FirstLoad f = inj_.FirstLoadTimes();
    if (f.submitted_unix_ns > 0) {
      first_load_printed_ = true;
      Write(protocol::FirstLoad{f.submitted_unix_ns, f.completed_unix_ns});
    }
  }
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
  protocol::Summary s;
  s.injector = f.injector;
  s.unit = f.unit;
  s.mode = f.mode;
  s.target_rate = f.target_rate;
  s.achieved_rate = f.run.achieved_rate;
  s.peak_rate = f.peak_rate;
  s.cov = f.run.cov;
  s.seconds = f.run.seconds;
  s.level = f.level;
  s.saturated = f.run.saturated;
  s.stopped_by_signal = f.stopped_by_signal;
  s.extra = f.run.extra;
  s.notes = f.run.notes;
  Write(s);
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
  std::vector<protocol::ListEntry> rows;
  for (const auto& name : injectors::InjectorNames()) {
    auto inj = injectors::CreateInjector(name);
    const auto& d = inj->descriptor();
    const std::string reason = inj->Unsupported(host).message();
    rows.push_back(protocol::ListEntry{d.name, d.resource, d.unit, reason.empty(), reason});
  }
  // Each column as wide as its widest cell: a resource text that names what the host has
  // (net's RDMA note) must not push the rows below it out of line.
  size_t name_w = 0, resource_w = 0, unit_w = 0;
  for (const auto& r : rows) {
    name_w = std::max(name_w, r.name.size());
    resource_w = std::max(resource_w, r.resource.size());
    unit_w = std::max(unit_w, r.unit.size());
  }
  for (const auto& r : rows) {
    if (json) {
      std::printf("%s\n", r.Format().c_str());
    } else {
      std::printf("%-*s  %-*s  %-*s  %s\n", static_cast<int>(name_w), r.name.c_str(),
                  static_cast<int>(resource_w), r.resource.c_str(), static_cast<int>(unit_w),
                  r.unit.c_str(), r.available ? "available" : ("unavailable: " + r.reason).c_str());
    }
  }
  // The agent's GPU registration labels, after the injectors (the agent links no CUDA library,
  // so it asks codl-inject).
  if (json) std::printf("%s\n", protocol::GpuLabels{injectors::DetectGpuLabels()}.Format().c_str());
  std::fflush(stdout);
}

void PrintInjectorHelp(const injectors::Injector& inj, const injectors::HostInfo& host) {
  const auto& d = inj.descriptor();
  std::printf("%s: %s\n", d.name.c_str(), d.summary.c_str());
  std::printf("resource: %s\n", d.resource.c_str());
  std::printf("unit: %s — %s\n", d.unit.c_str(), d.unit_help.c_str());
  const std::string reason = inj.Unsupported(host).message();
  std::printf("available here: %s\n\n", reason.empty() ? "yes" : ("no — " + reason).c_str());
  std::printf("options (--set KEY=VALUE):\n");
  std::fputs(RenderOptionTable(d.options, "  ").c_str(), stdout);
  std::printf(
      "\nrates (--rate, --peak): a bare number is in %s; units like 2GiB/s or 50kIOPS are "
      "converted when they apply.\n",
      d.unit.c_str());
}

}  // namespace codl::inject
