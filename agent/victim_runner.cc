#include "agent/victim_runner.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <mutex>

#include <spdlog/spdlog.h>

#include "agent/child_process.h"
#include "agent/placement.h"

namespace codl::agent {
namespace {
bool HoldsCodlPackage(const std::string& dir) {
  struct stat st {};
  return !dir.empty() && stat((dir + "/codl/__init__.py").c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
}  // namespace

std::string CodlPythonDir() {
  if (const char* env = getenv("CODL_PYTHON_DIR"); env != nullptr && HoldsCodlPackage(env))
    return env;
  const std::string self = SelfDirectory();
  const std::string installed = self + "/../share/codl/python";
  if (HoldsCodlPackage(installed)) return installed;
  std::ifstream in(self + "/codl-python-path");
  std::string tree;
  if (std::getline(in, tree) && HoldsCodlPackage(tree)) return tree;
  return "";
}

std::string VictimPythonPath(const std::string& dir,
                             const std::map<std::string, std::string>& victim_env) {
  std::string rest;
  if (auto it = victim_env.find("PYTHONPATH"); it != victim_env.end()) {
    rest = it->second;
  } else if (const char* env = getenv("PYTHONPATH"); env != nullptr) {
    rest = env;
  }
  return rest.empty() ? dir : dir + ":" + rest;
}

VictimOutcome VictimRunner::Run(const experiment::VictimSpec& spec, const std::atomic<bool>* cancel,
                                const std::function<void(const VictimStep&)>& on_step,
                                const std::function<void(const DatasetProgress&)>& on_dataset) {
  VictimOutcome out;
  ProgressParser parser(spec.progress, spec.warmup_steps);
  // The progress channel (CODL_PROGRESS_FD) carries CoDL jsonl records whatever stdout's
  // format is; once it has said anything, stdout is the job's own and no longer parsed.
  experiment::ProgressSpec channel_spec;
  if (spec.progress.format == experiment::ProgressSpec::Format::kJsonl)
    channel_spec = spec.progress;
  ProgressParser channel(channel_spec, spec.warmup_steps);
  bool channel_used = false;
  std::mutex parser_mu;
  const double t0 = clock_->MonotonicSeconds();
  out.started_unix_ns = clock_->UnixNanos();

  ChildProcess::Options o;
  o.argv = spec.command;
  o.env = spec.env;
  if (const std::string py = CodlPythonDir(); !py.empty())
    o.env["PYTHONPATH"] = VictimPythonPath(py, spec.env);
  o.workdir = spec.workdir;
  o.run_as = run_as_;
  o.stderr_tail_bytes = 4096;
  auto on_line = [&](ProgressParser& p, std::string_view line) {
    const auto kind = p.OnStdoutLine(line, clock_->MonotonicSeconds() - t0);
    if (on_step && kind == ProgressParser::LineKind::kStep) on_step(p.steps().back());
    if (on_dataset && kind == ProgressParser::LineKind::kDataset && p.dataset().total > 0)
      on_dataset(p.dataset());
  };
  o.on_stdout = [&](std::string_view line) {
    std::lock_guard<std::mutex> l(parser_mu);
    if (!channel_used) on_line(parser, line);
  };
  if (spec.progress.format != experiment::ProgressSpec::Format::kWall) {
    o.on_progress = [&](std::string_view line) {
      std::lock_guard<std::mutex> l(parser_mu);
      channel_used = true;
      on_line(channel, line);
    };
  }
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
  out.progress = (channel_used ? channel : parser)
                     .Finish(out.exit_code, out.timed_out, out.wall_s, out.stderr_tail);
  if (cancelled) {
    out.progress.ok = false;
    out.progress.error = "victim cancelled";
  }
  spdlog::info("victim {} finished: exit {}, wall {:.2f} s, {:.2f} cores on CPUs {}, {}",
               spec.command.front(), out.exit_code, out.wall_s,
               out.wall_s > 0 ? out.cpu_s / out.wall_s : 0.0, out.effective_cpus,
               out.progress.ok ? "ok" : FailureWithStderr(out.progress.error, out.stderr_tail));
  return out;
}

}  // namespace codl::agent
