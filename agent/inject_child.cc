#include "agent/inject_child.h"

#include <chrono>
#include <cmath>

#include <spdlog/spdlog.h>

#include "agent/telemetry_hub.h"
#include "injectors/core/victim_env.h"
#include "lib/common/statistics.h"
#include "lib/common/utf8.h"

namespace codl::agent {

namespace protocol = injectors::protocol;

namespace {

// The end of a child's stderr, for error messages (at most 600 bytes, valid UTF-8).
std::string Tail(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.size() > 600 ? "..." + Utf8Tail(t, 600) : ValidUtf8(t);
}

}  // namespace

Result<std::unique_ptr<InjectChild>> InjectChild::Spawn(Spec spec) {
  std::unique_ptr<InjectChild> c(new InjectChild(std::move(spec)));
  ChildProcess::Options o;
  o.argv = c->spec_.argv;
  o.placement = c->spec_.placement;
  InjectChild* raw = c.get();
  if (const auto& w = c->spec_.workload) {
    // A real command: its progress is a victim's (both channels), its load begins now.
    c->parser_ = std::make_unique<ProgressParser>(w->progress, w->warmup_steps,
                                                  /*keep_steps=*/false);
    o.env = w->env;
    o.inherit_env = w->inherit_env;
    o.workdir = w->workdir;
    o.run_as = w->run_as;
    // As for victims: once the progress channel (CODL_PROGRESS_FD) has said anything, stdout is
    // the job's own and no longer parsed. Both run on the reader thread, never at once.
    o.on_stdout = [raw](std::string_view line) {
      if (!raw->channel_used_) raw->OnWorkloadLine(line);
    };
    o.on_progress = [raw](std::string_view line) {
      raw->channel_used_ = true;
      raw->OnWorkloadLine(line);
    };
    c->unit_ = kWorkloadUnit;
    c->load_started_ = true;
  } else {
    o.on_stdout = [raw](std::string_view line) { raw->OnLine(line); };
  }
  {
    // Sample times count from the spawn until codl-inject says when its load began.
    std::lock_guard<std::mutex> l(c->mu_);
    c->start_.started_unix_ns = c->spec_.clock->UnixNanos();
  }
  auto child = ChildProcess::Spawn(std::move(o));
  if (!child.ok()) return child.status();
  c->child_ = std::move(*child);
  return c;
}

InjectChild::~InjectChild() {
  child_.reset();  // joins the reader thread, the only caller of OnLine, before members go
}

void InjectChild::OnLine(std::string_view line) {
  std::string kind;
  auto record = protocol::ParseRecord(line, &kind);
  if (!record.ok()) {
    if (record.code() == StatusCode::kNotFound) return;  // human text on stdout is tolerated
    // A broken rendezvous leaves the other ranks waiting for nothing: fail this one now.
    const bool fatal = kind == protocol::RendezvousPublish::kFirstKey;
    if (fatal) {
      spdlog::error("antagonist {}: {}", spec_.id, record.error());
      Fail(record.error());
    } else {
      spdlog::warn("antagonist {}: {}", spec_.id, record.error());
    }
    return;
  }
  std::visit([this](const auto& r) { Take(r); }, *record);
}

// A workload's line: a measured step joins the open group, which becomes a sample once it
// spans kWorkloadSampleS (so a job of 1 ms steps sends 5 samples a second, not 1000).
void InjectChild::OnWorkloadLine(std::string_view line) {
  int64_t started_ns = 0;
  {
    std::lock_guard<std::mutex> l(mu_);
    started_ns = start_.started_unix_ns;
  }
  const double t_s = static_cast<double>(spec_.clock->UnixNanos() - started_ns) / 1e9;
  if (parser_->OnStdoutLine(line, t_s) != ProgressParser::LineKind::kStep) return;
  const VictimStep& step = parser_->steps().back();
  if (step.warmup) {
    group_start_s_ = t_s;  // the first sample covers measured steps only
    return;
  }
  ++group_steps_;
  group_sum_s_ += step.step_time_s;
  if (t_s - group_start_s_ < kWorkloadSampleS) return;
  RateSample s;
  s.t_s = t_s;
  s.achieved = group_sum_s_ / group_steps_;
  s.steps = group_steps_;
  group_steps_ = 0;
  group_sum_s_ = 0;
  group_start_s_ = t_s;
  AddSample(s);
}

void InjectChild::Take(const protocol::Interval& r) {
  RateSample s;
  {
    std::lock_guard<std::mutex> l(mu_);
    // Stamped on arrival, relative to the spawn (or the load's start): codl-inject's own t_s
    // starts after its setup (file preallocation can take seconds), which would shift the series.
    s.t_s = start_.started_unix_ns > 0
                ? static_cast<double>(spec_.clock->UnixNanos() - start_.started_unix_ns) / 1e9
                : r.t_s;
    s.achieved = r.achieved;
    s.target = r.target;
    if (!r.unit.empty()) unit_ = r.unit;
  }
  AddSample(s);
}

void InjectChild::AddSample(const RateSample& s) {
  std::string unit;
  {
    std::lock_guard<std::mutex> l(mu_);
    unit = unit_;
    samples_.push_back(s);
  }
  if (spec_.telemetry != nullptr) {
    v1::TelemetryEvent ev;
    ev.set_agent_unix_ns(spec_.clock->UnixNanos());
    auto* a = ev.mutable_antagonist();
    a->set_antagonist_id(spec_.id);
    a->set_unit(unit);
    a->mutable_sample()->set_t_s(s.t_s);
    a->mutable_sample()->set_achieved(s.achieved);
    a->mutable_sample()->set_target(s.target);
    a->mutable_sample()->set_steps(s.steps);
    spec_.telemetry->Publish(spec_.id, ev);
  }
}

void InjectChild::Take(const protocol::Summary& r) {
  std::lock_guard<std::mutex> l(mu_);
  if (!r.unit.empty()) unit_ = r.unit;
  summary_ = r;
}

void InjectChild::Take(const protocol::StartAccount& r) {
  std::lock_guard<std::mutex> l(mu_);
  // The load began now (codl-inject waited for the common start after its setup).
  start_.started_unix_ns = r.started_unix_ns;
  start_.ready_unix_ns = r.ready_unix_ns;
  start_.setup_s = r.setup_s;
  load_started_ = true;
  started_cv_.notify_all();
}

void InjectChild::Take(const protocol::FirstLoad& r) {
  std::lock_guard<std::mutex> l(mu_);
  first_load_unix_ns_ = r.first_load_unix_ns;
  first_done_unix_ns_ = r.first_done_unix_ns;
}

// Rank 0 of a collective published its rendezvous value: relay it (as raw bytes) through the
// controller to the other ranks' agents.
void InjectChild::Take(const protocol::RendezvousPublish& r) {
  const RendezvousRelay* relay = spec_.relay;
  std::string problem;
  if (relay == nullptr || !relay->publish) {
    problem = "this agent has no controller link to relay the rendezvous";
  } else if (Status s = relay->publish(r.key, r.value); !s.ok()) {
    problem = "relaying rendezvous '" + r.key + "': " + s.error();
  }
  if (!problem.empty()) {
    spdlog::error("antagonist {}: {}", spec_.id, problem);
    Fail(std::move(problem));
  } else {
    spdlog::info("antagonist {}: relayed rendezvous '{}' ({} bytes)", spec_.id, r.key,
                 r.value.size());
  }
}

// Only an injector that declares exports_victim_env may set victim variables, and only under
// safe names (IsExportableEnvName: never LD_*, PATH, ...): the child is not trusted.
void InjectChild::Take(const protocol::VictimEnv& r) {
  if (!spec_.caps.exports_victim_env) {
    spdlog::warn(
        "antagonist {}: ignoring a victim_env record: injector '{}' does not declare "
        "exports_victim_env",
        spec_.id, spec_.injector);
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [name, value] : r.env) {
    if (injectors::IsExportableEnvName(name)) {
      victim_env_[name] = value;
    } else {
      spdlog::warn("antagonist {}: not exporting '{}' to the victim (unsafe name)", spec_.id, name);
    }
  }
}

void InjectChild::Take(const protocol::Note& r) {
  spdlog::info("antagonist {}: {}", spec_.id, ValidUtf8(r.text));
}

void InjectChild::Take(const protocol::MpsStatus& r) {
  spdlog::info("antagonist {}: MPS control daemon in {} ({})", spec_.id, ValidUtf8(r.pipe_dir),
               r.started ? "started by it" : "already running");
}

void InjectChild::Fail(std::string why) {
  std::lock_guard<std::mutex> l(mu_);
  error_ = std::move(why);
}

bool InjectChild::AwaitLoadStart(double timeout_s) {
  const double give_up = spec_.clock->MonotonicSeconds() + timeout_s;
  std::unique_lock<std::mutex> l(mu_);
  while (!load_started_ && !child_->exited() && spec_.clock->MonotonicSeconds() < give_up) {
    started_cv_.wait_for(l, std::chrono::milliseconds(100));
  }
  return load_started_;
}

InjectChild::Start InjectChild::start() const {
  std::lock_guard<std::mutex> l(mu_);
  return start_;
}

InjectChild::Live InjectChild::live() const {
  Live s;
  s.running = !child_->exited();
  const std::string exit_problem = s.running ? "" : ExitProblem();
  std::lock_guard<std::mutex> l(mu_);
  s.unit = unit_;
  s.samples = static_cast<int>(samples_.size());
  if (!samples_.empty()) {
    s.last_achieved = samples_.back().achieved;
    s.target = samples_.back().target;
  }
  s.error = error_.empty() ? exit_problem : error_;
  return s;
}

void InjectChild::Terminate(double grace_s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!stopping_) exited_before_stop_ = child_->exited();
    stopping_ = true;
  }
  child_->Terminate(grace_s);
}

std::string InjectChild::ExitProblem() const {
  if (!child_->exited() || child_->exit_code() == 0) return "";
  return std::string(is_workload() ? "the workload" : "codl-inject") + " exited with status " +
         std::to_string(child_->exit_code()) + ": " + StderrTail();
}

std::string InjectChild::StderrTail() const { return Tail(child_->stderr_tail()); }

InjectChild::Outcome InjectChild::outcome(bool terminated) const {
  Outcome f;
  f.exit_code = child_->exit_code();
  f.cpu_s = child_->cpu_seconds();
  f.run_s = child_->run_seconds();
  f.effective_cpus = child_->effective_cpus();
  // Exit by our own SIGTERM is the normal end (codl-inject exits 0 after its summary).
  bool by_our_stop = terminated && f.exit_code == -15;
  std::lock_guard<std::mutex> l(mu_);
  // A workload is a real job: it may exit 0 or die of our SIGTERM or SIGKILL (after the grace)
  // when stopped, and only an exit before the stop is its own end.
  if (is_workload()) {
    f.ended_early = !stopping_ || exited_before_stop_;
    by_our_stop = !f.ended_early;
  }
  const std::string exit_problem = by_our_stop ? "" : ExitProblem();
  f.unit = unit_;
  f.samples = samples_;
  f.error = error_.empty() ? exit_problem : error_;
  f.first_load_unix_ns = first_load_unix_ns_;
  f.first_done_unix_ns = first_done_unix_ns_;
  if (summary_) {
    f.have_summary = true;
    f.achieved_rate = summary_->achieved_rate;
    f.target_rate = summary_->target_rate;
    f.cov = summary_->cov;
  } else if (!f.samples.empty()) {
    // Killed before its summary: the statistics of what it reported (lib/common/statistics.h);
    // a workload's: seconds per step over all its measured steps.
    std::vector<double> achieved;
    double steps = 0, sum = 0;
    for (const auto& s : f.samples) {
      achieved.push_back(s.achieved);
      steps += s.steps;
      sum += s.achieved * s.steps;
    }
    f.achieved_rate = is_workload() && steps > 0 ? sum / steps : Mean(achieved);
    f.cov = CoefficientOfVariationOrZero(achieved);
    f.target_rate = f.samples.back().target;
  }
  return f;
}

std::map<std::string, std::string> InjectChild::victim_env() const {
  std::lock_guard<std::mutex> l(mu_);
  return victim_env_;
}

}  // namespace codl::agent
