#include "agent/victim_runner.h"

#include <mutex>

#include <spdlog/spdlog.h>

#include "agent/child_process.h"
#include "agent/placement.h"

namespace codl::agent {
VictimOutcome VictimRunner::Run(const experiment::VictimSpec& spec, const std::atomic<bool>* cancel,
                                const std::function<void(const VictimStep&)>& on_step,
                                const std::function<void(const DatasetProgress&)>& on_dataset) {
  VictimOutcome out;
  ProgressParser parser(spec.progress, spec.warmup_steps);
  std::mutex parser_mu;
  const double t0 = clock_->MonotonicSeconds();
  out.started_unix_ns = clock_->UnixNanos();

  ChildProcess::Options o;
  o.argv = spec.command;
  o.env = spec.env;
  o.workdir = spec.workdir;
  o.run_as = run_as_;
  o.stderr_tail_bytes = 4096;
  o.on_stdout = [&](std::string_view line) {
    std::lock_guard<std::mutex> l(parser_mu);
    const auto kind = parser.OnStdoutLine(line, clock_->MonotonicSeconds() - t0);
    if (on_step && kind == ProgressParser::LineKind::kStep) on_step(parser.steps().back());
    if (on_dataset && kind == ProgressParser::LineKind::kDataset && parser.dataset().total > 0)
      on_dataset(parser.dataset());
  };
  auto NotStarted = [&out](const std::string& why) {
    out.exit_code = 127;
    out.progress.ok = false;
    out.progress.error = "victim could not start: " + why;
    return out;
  };
  if (placer_) {
    auto placement = placer_->Prepare(spec.placement, "victim");
    if (!placement.ok()) return NotStarted(placement.error());
    o.placement = *placement;
  } else if (!spec.placement.empty()) {
    return NotStarted("this agent cannot place children (cpus/numa)");
  }
  auto child = ChildProcess::Spawn(std::move(o));
  if (!child.ok()) return NotStarted(child.error());
  const double timeout = spec.timeout_s > 0 ? spec.timeout_s : 600;
  bool cancelled = false;
  while (!(*child)->WaitFor(0.1)) {
    double elapsed = clock_->MonotonicSeconds() - t0;
    if (elapsed > timeout) {
      out.timed_out = true;
      break;
    }
    if (cancel && cancel->load()) {
      cancelled = true;
      break;
    }
  }
  if (out.timed_out || cancelled) (*child)->Terminate(2.0);
  out.wall_s = clock_->MonotonicSeconds() - t0;
  out.exit_code = (*child)->exit_code();
  out.stderr_tail = (*child)->stderr_tail();
  out.cpu_s = (*child)->cpu_seconds();
  out.effective_cpus = (*child)->effective_cpus();
  child->reset();  // joins the reader: no more OnStdoutLine calls after this
  out.progress = parser.Finish(out.exit_code, out.timed_out, out.wall_s, out.stderr_tail);
  if (cancelled) {
    out.progress.ok = false;
    out.progress.error = "victim cancelled";
  }
  spdlog::info("victim {} finished: exit {}, wall {:.2f} s, {:.2f} cores on CPUs {}, {}",
               spec.command.front(), out.exit_code, out.wall_s,
               out.wall_s > 0 ? out.cpu_s / out.wall_s : 0.0, out.effective_cpus,
               out.progress.ok ? "ok" : out.progress.error);
  return out;
}

}  // namespace codl::agent
