#include "agent/antagonist_manager.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "agent/placement.h"
#include "injectors/core/protocol.h"
#include "injectors/core/registry.h"
#include "lib/common/tunables.h"

namespace codl::agent {
namespace {

// One synchronized-start setup measurement per injector and option set.
std::string SetupKey(const std::string& injector,
                     const std::map<std::string, std::string>& options) {
  nlohmann::json j = {{"injector", injector}, {"options", options}};
  return j.dump();
}

std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

injectors::Capabilities CapabilitiesOf(const std::string& injector) {
  const injectors::Descriptor* d = injectors::FindDescriptor(injector);
  return d != nullptr ? d->capabilities : injectors::Capabilities{};
}

}  // namespace

AntagonistManager::AntagonistManager(AntagonistPolicy policy, const LeaseMonitor* lease,
                                     const Clock* clock)
    : policy_(std::move(policy)), lease_(lease), clock_(clock) {}

AntagonistManager::~AntagonistManager() { StopAll("agent shutting down"); }

// Rank 0 publishes its value as soon as it has started; fetch it through the controller and
// pass it as the injector's rendezvous_option. The option names are the collective contract
// (injector.h).
Status AntagonistManager::FetchRendezvous(const std::string& id,
                                          const injectors::Capabilities& caps,
                                          std::map<std::string, std::string>* options) const {
  auto opt = [&](const std::string& k) {
    auto it = options->find(k);
    return it == options->end() ? std::string() : it->second;
  };
  const std::string& target = caps.rendezvous_option;
  const std::string key = opt("rendezvous_key");
  if (!caps.collective || key.empty() || !opt(target).empty() || opt("rank").empty() ||
      opt("rank") == "0") {
    return Status::Ok();
  }
  if (!policy_.relay.fetch) {
    return Err("antagonist '" + id + "': no controller link for the rendezvous");
  }
  auto v = policy_.relay.fetch(key, 10.0);
  // Classified here on purpose: the relay's own code (a deadline, an unavailable controller)
  // must not reach the controller as if this agent were the one it could not reach.
  if (!v.ok()) {
    return FailedPrecondition("antagonist '" + id + "': rendezvous '" + key + "': " + v.error());
  }
  (*options)[target] = injectors::protocol::RendezvousFetch{target, *v}.OptionValue();
  return Status::Ok();
}

std::vector<std::string> AntagonistManager::BaseArgs(
    const std::string& injector, const std::map<std::string, std::string>& options) const {
  std::vector<std::string> argv = {policy_.inject_binary, injector};
  for (const auto& [k, v] : options) {
    argv.push_back("--set");
    argv.push_back(k + "=" + v);
  }
  for (const auto& root : policy_.scratch_roots) {
    argv.push_back("--scratch-root");
    argv.push_back(root);
  }
  argv.push_back("--json");
  return argv;
}

std::vector<std::string> AntagonistManager::RunArgs(const InjectorRequest& req,
                                                    bool deferred) const {
  std::vector<std::string> argv = BaseArgs(req.injector, req.options);
  if (req.max) {
    argv.push_back("--max");
  } else {
    argv.push_back("--rate");
    argv.push_back(FormatNumber(req.rate));
  }
  double duration = std::min(req.max_duration_s > 0 ? req.max_duration_s : policy_.max_duration_s,
                             policy_.max_duration_s);
  argv.push_back("--duration");
  argv.push_back(FormatNumber(duration) + "s");
  if (deferred) {
    argv.push_back("--start-at");
    argv.push_back(std::to_string(req.start_at_unix_ns));
  }
  return argv;
}

Result<std::shared_ptr<InjectChild>> AntagonistManager::Launch(InjectChild::Spec spec,
                                                               double lease_s, double max_run_s) {
  const std::string id = spec.id;
  const std::string injector = spec.injector;
  auto child = InjectChild::Spawn(std::move(spec));
  if (!child.ok()) return child.status();
  std::shared_ptr<InjectChild> c = std::move(*child);
  std::lock_guard<std::mutex> l(mu_);
  antagonists_[id] = Antagonist{c, injector, lease_s, max_run_s};
  return c;
}

void AntagonistManager::Unregister(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  antagonists_.erase(id);
}

std::vector<AntagonistManager::Antagonist> AntagonistManager::Entries() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Antagonist> out;
  out.reserve(antagonists_.size());
  for (const auto& [id, a] : antagonists_) out.push_back(a);
  return out;
}

Result<AntagonistManager::Started> AntagonistManager::Start(const std::string& id,
                                                            const InjectorRequest& req,
                                                            double lease_s) {
  {
    // An entry whose process has ended (a lease, a cancel, its own exit) is kept for the
    // controller's Stop to collect, but it never blocks a new start under its id: a resumed
    // study re-runs a cut-off trial under the same id, and that new attempt starts fresh.
    std::lock_guard<std::mutex> l(mu_);
    auto it = antagonists_.find(id);
    if (it != antagonists_.end() && !it->second.child->exited()) {
      return AlreadyExists("antagonist '" + id + "' is already running");
    }
    if (it != antagonists_.end()) {
      spdlog::info("antagonist {}: a new start replaces the ended one", id);
      antagonists_.erase(it);
    }
  }
  if (req.workload) return StartWorkload(id, req, lease_s);
  if (!req.max && !(req.rate > 0)) {
    return Err("antagonist '" + id + "': target rate must be > 0 (got " + FormatNumber(req.rate) +
               ")");
  }
  InjectChild::Spec spec;
  spec.id = id;
  spec.injector = req.injector;
  spec.caps = CapabilitiesOf(req.injector);
  InjectorRequest run = req;
  if (Status s = FetchRendezvous(id, spec.caps, &run.options); !s.ok()) return s;
  // Synchronized start: spawn now and let codl-inject begin its load at the common time, so
  // process creation and setup (file preallocation, buffers) stay out of the start skew.
  const bool deferred = req.start_at_unix_ns > clock_->UnixNanos();
  spec.argv = RunArgs(run, deferred);
  if (Status s = Place(id, req, &spec); !s.ok()) return s;
  spec.relay = &policy_.relay;
  spec.telemetry = policy_.telemetry;
  spec.clock = clock_;
  // Registered before the wait: a lease expiry or StopAll during setup reaches it too.
  auto child = Launch(std::move(spec), lease_s > 0 ? lease_s : policy_.default_lease_s);
  if (!child.ok()) return child.status().WithContext("antagonist '" + id + "'");
  std::shared_ptr<InjectChild> c = *child;
  {
    std::lock_guard<std::mutex> l(mu_);
    ++started_;
  }
  // How long a deferred start may take until codl-inject says its load began (its setup, file
  // preallocation and buffers, comes first): what the request carries, else the default.
  const double start_timeout_s =
      req.start_timeout_s > 0 ? req.start_timeout_s : tunables::kAntagonistStartTimeoutS;
  if (deferred && !c->AwaitLoadStart(start_timeout_s)) {
    // Exited by itself with a failure, or stopped (a lease, StopAll) or timed out: say which.
    const bool failed = c->exited() && c->exit_code() > 0;
    Unregister(id);
    c->Terminate(1.0);
    return Err(
        "antagonist '" + id + "': codl-inject did not start its load" +
        (failed ? ": exited with status " + std::to_string(c->exit_code()) + ": " + c->StderrTail()
                : " (stopped, or no start within " + FormatNumber(start_timeout_s) + " s)"));
  }
  const InjectChild::Start start = c->start();
  Started s;
  s.pid = c->pid();
  s.started_unix_ns = start.started_unix_ns;
  s.ready_unix_ns = start.ready_unix_ns;
  s.setup_s = start.setup_s;
  if (s.ready_unix_ns > 0) {  // learn from it: the next estimate for this setup (EstimateSetupS)
    std::lock_guard<std::mutex> l(mu_);
    measured_setup_s_[SetupKey(req.injector, req.options)] = s.setup_s;
  }
  spdlog::info("antagonist {} started: {} pid {}", id, req.injector, s.pid);
  return s;
}

Status AntagonistManager::Place(const std::string& id, const InjectorRequest& req,
                                InjectChild::Spec* spec) const {
  if (policy_.placer) {
    auto placement = policy_.placer->Prepare(req.placement, id);
    if (!placement.ok()) return placement.status().WithContext("antagonist '" + id + "'");
    spec->placement = *placement;
  } else if (!req.placement.empty()) {
    return Err("antagonist '" + id + "': this agent cannot place children (cpus/numa)");
  }
  return Status::Ok();
}

// A real command as the neighbour: no codl-inject, no synchronized start (its load is the job
// itself, which begins at the spawn); the controller waits for its warmup steps instead.
Result<AntagonistManager::Started> AntagonistManager::StartWorkload(const std::string& id,
                                                                    const InjectorRequest& req,
                                                                    double lease_s) {
  if (req.command.empty() || req.command[0].empty()) {
    return InvalidArgument("antagonist '" + id + "': the workload has no command");
  }
  InjectChild::Spec spec;
  spec.id = id;
  spec.injector = experiment::kWorkloadInjector;
  spec.argv = req.command;
  spec.workload = req.workload;
  if (Status s = Place(id, req, &spec); !s.ok()) return s;
  spec.telemetry = policy_.telemetry;
  spec.clock = clock_;
  const double max_run_s = std::min(
      req.max_duration_s > 0 ? req.max_duration_s : policy_.max_duration_s, policy_.max_duration_s);
  auto child = Launch(std::move(spec), lease_s > 0 ? lease_s : policy_.default_lease_s, max_run_s);
  if (!child.ok()) return child.status().WithContext("antagonist '" + id + "'");
  {
    std::lock_guard<std::mutex> l(mu_);
    ++started_;
  }
  Started s;
  s.pid = (*child)->pid();
  s.started_unix_ns = (*child)->start().started_unix_ns;
  spdlog::info("antagonist {} started: workload {} pid {}", id, req.command[0], s.pid);
  return s;
}

Result<AntagonistManager::Snapshot> AntagonistManager::Get(const std::string& id) const {
  std::shared_ptr<InjectChild> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = antagonists_.find(id);
    if (it == antagonists_.end()) return NotFound("no antagonist '" + id + "' on this agent");
    c = it->second.child;
  }
  return c->live();
}

Result<AntagonistManager::Final> AntagonistManager::Stop(const std::string& id) {
  std::shared_ptr<InjectChild> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = antagonists_.find(id);
    if (it == antagonists_.end()) return NotFound("no antagonist '" + id + "' on this agent");
    c = it->second.child;
    antagonists_.erase(it);
  }
  c->Terminate(/*grace_s=*/3.0);
  Final f = c->outcome(/*terminated=*/true);
  spdlog::info("antagonist {} stopped: achieved {:.4g} {}, {:.2f} cores on CPUs {} (exit {})", id,
               f.achieved_rate, f.unit, f.run_s > 0 ? f.cpu_s / f.run_s : 0.0, f.effective_cpus,
               f.exit_code);
  return f;
}

int AntagonistManager::StopAll(const std::string& reason) {
  std::map<std::string, Antagonist> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    all.swap(antagonists_);
  }
  for (auto& [id, a] : all) {
    spdlog::warn("stopping antagonist {}: {}", id, reason);
    a.child->Terminate(2.0);
  }
  return static_cast<int>(all.size());
}

int AntagonistManager::Running() const {
  int n = 0;
  for (const Antagonist& a : Entries()) n += a.child->exited() ? 0 : 1;
  return n;
}

int AntagonistManager::EnforceLeases() {
  const double silent = lease_->SecondsSinceContact();
  std::vector<Antagonist> expired;
  std::vector<Antagonist> overran;  // workloads past their max_duration_s
  for (Antagonist& a : Entries()) {
    if (a.child->exited()) continue;
    if (silent > a.lease_s) {
      expired.push_back(std::move(a));
    } else if (a.max_run_s > 0 && a.child->run_seconds() > a.max_run_s) {
      overran.push_back(std::move(a));
    }
  }
  for (const Antagonist& a : overran) {
    spdlog::warn("antagonist {} ran past its max_duration_s {:.0f} s: stopping it", a.child->id(),
                 a.max_run_s);
    a.child->Fail("stopped by the agent: ran past max_duration_s");
    a.child->Terminate(1.0);
  }
  for (const Antagonist& a : expired) {
    spdlog::warn(
        "lease expired for antagonist {} (controller silent for {:.1f} s > lease {:.1f} s): "
        "stopping it",
        a.child->id(), silent, a.lease_s);
    a.child->Fail("stopped by the agent: controller silent for longer than the lease");
    a.child->Terminate(1.0);
  }
  std::lock_guard<std::mutex> l(mu_);
  lease_expirations_ += static_cast<int64_t>(expired.size());
  return static_cast<int>(expired.size());
}

Result<double> AntagonistManager::EstimateSetupS(
    const std::string& injector, const std::map<std::string, std::string>& options) const {
  auto inj = injectors::CreateInjector(injector);
  if (!inj) return injectors::ValidateInjectorName(injector);
  auto parsed = injectors::ParseInjectorOptions(*inj, options);
  if (!parsed.ok()) return parsed.status();
  const double estimate =
      inj->SetupEstimateS(*parsed, injectors::DetectHost(policy_.scratch_roots));
  std::lock_guard<std::mutex> l(mu_);
  auto it = measured_setup_s_.find(SetupKey(injector, options));
  if (it == measured_setup_s_.end()) return estimate;
  return std::max(estimate, kLearnedSetupMargin * it->second);
}

// A calibration is a full-intensity load like any antagonist: it is registered (so StopAll, the
// lease and the agent's leftovers file reach it) under a reserved id, and its length is capped.
Result<AntagonistManager::Calibration> AntagonistManager::Calibrate(
    const std::string& injector, const std::map<std::string, std::string>& options,
    double duration_s) {
  if (!std::isfinite(duration_s) || !(duration_s > 0)) duration_s = 2;
  duration_s = std::min(duration_s, kMaxCalibrationS);
  InjectChild::Spec spec;
  {
    std::lock_guard<std::mutex> l(mu_);
    spec.id = "calibration-" + injector + "-" + std::to_string(++calibrations_);
  }
  spec.injector = injector;
  spec.caps = CapabilitiesOf(injector);
  // A collective's ranks are calibrated together (the controller's CalibrateCollective): a
  // non-zero rank fetches rank 0's rendezvous value first, as a start does.
  std::map<std::string, std::string> run_options = options;
  if (Status s = FetchRendezvous(spec.id, spec.caps, &run_options); !s.ok()) {
    return s.WithContext("calibrating " + injector);
  }
  spec.argv = BaseArgs(injector, run_options);
  spec.argv.insert(spec.argv.end(), {"--calibrate", "--duration", FormatNumber(duration_s) + "s"});
  spec.relay = &policy_.relay;
  spec.clock = clock_;
  const std::string id = spec.id;
  auto child = Launch(std::move(spec), policy_.default_lease_s);
  if (!child.ok()) return child.status().WithContext("calibrating " + injector);
  std::shared_ptr<InjectChild> c = *child;
  const bool finished = c->WaitExit(duration_s + tunables::kCalibrationSetupS);
  Unregister(id);
  if (!finished) {
    c->Kill();
    return Err("calibrating " + injector + ": codl-inject did not finish in time");
  }
  // The agent's own reason (a broken rendezvous), else how codl-inject exited.
  const InjectChild::Outcome o = c->outcome(/*terminated=*/false);
  if (!o.error.empty()) return Err("calibrating " + injector + ": " + o.error);
  if (!o.have_summary) {
    return Err("calibrating " + injector +
               ": codl-inject exited with status 0: " + c->StderrTail());
  }
  Calibration cal;
  cal.peak_rate = o.achieved_rate;
  cal.unit = o.unit;
  if (!std::isfinite(cal.peak_rate) || !(cal.peak_rate > 0)) {
    return Err("calibrating " + injector + ": measured peak is not a positive number");
  }
  std::lock_guard<std::mutex> l(mu_);
  peaks_[injector] = cal.peak_rate;
  return cal;
}

std::optional<double> AntagonistManager::CalibratedPeak(const std::string& injector) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = peaks_.find(injector);
  if (it == peaks_.end()) return std::nullopt;
  return it->second;
}

AntagonistManager::Stats AntagonistManager::GetStats() const {
  Stats st;
  for (const Antagonist& a : Entries()) {
    if (a.child->exited()) continue;
    const InjectChild::Live live = a.child->live();
    auto& slot = st.achieved_by_injector[a.injector];
    slot.first += live.samples > 0 ? live.last_achieved : 0;
    slot.second = live.unit;
  }
  std::lock_guard<std::mutex> l(mu_);
  st.started = started_;
  st.lease_expirations = lease_expirations_;
  return st;
}

std::map<std::string, std::string> AntagonistManager::VictimEnvironment() const {
  std::map<std::string, std::string> env;
  for (const Antagonist& a : Entries()) {
    if (a.child->exited()) continue;
    for (const auto& [k, v] : a.child->victim_env()) env[k] = v;
  }
  return env;
}

std::vector<std::pair<int64_t, uint64_t>> AntagonistManager::Children() const {
  std::vector<std::pair<int64_t, uint64_t>> out;
  for (const Antagonist& a : Entries()) {
    if (!a.child->exited()) out.emplace_back(a.child->pid(), a.child->start_time_ticks());
  }
  return out;
}

}  // namespace codl::agent
