#include "agent/antagonist_manager.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "agent/placement.h"
#include "agent/telemetry_hub.h"
#include "injectors/registry.h"
#include "injectors/victim_env.h"
#include "lib/common/tunables.h"
#include "lib/common/utf8.h"

namespace codl::agent {

struct AntagonistManager::Antagonist {
  std::string id;
  InjectorRequest request;
  double lease_s = 10;
  std::unique_ptr<ChildProcess> child;
  mutable std::mutex mu;
  std::vector<RateSample> samples;
  std::string unit;
  bool have_summary = false;
  double summary_achieved = 0;
  double summary_target = 0;
  double summary_cov = 0;
  std::string error;             // set when stopped by the lease or when the child failed
  injectors::Capabilities caps;  // what the injector declares (from the catalog)
  std::map<std::string, std::string> victim_env;  // from a {"victim_env":{...}} line
  const RendezvousRelay* relay = nullptr;
  const Clock* clock = nullptr;
  int64_t started_unix_ns = 0;  // when the child was spawned (agent clock)
  TelemetryHub* telemetry = nullptr;
  std::condition_variable started_cv;
  bool load_started = false;  // codl-inject said {"started_unix_ns":…} (or no --start-at)
  int64_t ready_unix_ns = 0;  // the rest of its started line (0: an older codl-inject)
  double setup_s = 0;
  int64_t first_load_unix_ns = 0;  // its {"first_load_unix_ns":…} line
  int64_t first_done_unix_ns = 0;
  void Publish(const nlohmann::json& p);
  void TakeVictimEnv(const nlohmann::json& env);

  void OnLine(std::string_view line) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return;  // human text on stdout is tolerated, not telemetry
    if (j.contains("rendezvous_publish")) {
      Publish(j["rendezvous_publish"]);
      return;
    }
    std::lock_guard<std::mutex> l(mu);
    if (j.contains("started_unix_ns")) {
      // The load began now (codl-inject waited for the common start after its setup).
      started_unix_ns = j.value("started_unix_ns", int64_t{0});
      ready_unix_ns = j.value("ready_unix_ns", int64_t{0});
      setup_s = j.value("setup_s", 0.0);
      load_started = true;
      started_cv.notify_all();
      return;
    }
    if (j.contains("first_load_unix_ns")) {
      first_load_unix_ns = j.value("first_load_unix_ns", int64_t{0});
      first_done_unix_ns = j.value("first_done_unix_ns", int64_t{0});
      return;
    }
    if (j.contains("victim_env")) {
      TakeVictimEnv(j["victim_env"]);
      return;
    }
    if (j.value("summary", false)) {
      have_summary = true;
      summary_achieved = j.value("achieved_rate", 0.0);
      summary_target = j.value("target_rate", 0.0);
      summary_cov = j.value("cov", 0.0);
      if (j.contains("unit")) unit = j.value("unit", unit);
      return;
    }
    if (!j.contains("achieved")) return;
    RateSample s;
    // Time stamped on arrival, relative to the spawn: codl-inject's own t_s starts after its
    // setup (file preallocation can take seconds), which would shift the series.
    s.t_s = clock && started_unix_ns > 0 ? (clock->UnixNanos() - started_unix_ns) / 1e9
                                         : j.value("t_s", 0.0);
    s.achieved = j.value("achieved", 0.0);
    s.target = j.value("target", 0.0);
    if (j.contains("unit")) unit = j.value("unit", unit);
    samples.push_back(s);
    if (telemetry) {
      v1::TelemetryEvent ev;
      ev.set_agent_unix_ns(clock ? clock->UnixNanos() : 0);
      auto* a = ev.mutable_antagonist();
      a->set_antagonist_id(id);
      a->set_unit(unit);
      a->mutable_sample()->set_t_s(s.t_s);
      a->mutable_sample()->set_achieved(s.achieved);
      a->mutable_sample()->set_target(s.target);
      telemetry->Publish(id, ev);
    }
  }
};

namespace {
std::string HexDecode(const std::string& hex, bool* ok) {
  *ok = hex.size() % 2 == 0;
  std::string out;
  for (size_t i = 0; *ok && i < hex.size(); i += 2) {
    auto nib = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      *ok = false;
      return 0;
    };
    out.push_back(static_cast<char>(nib(hex[i]) << 4 | nib(hex[i + 1])));
  }
  return out;
}

// One synchronized-start setup measurement per injector and option set.
std::string SetupKey(const std::string& injector,
                     const std::map<std::string, std::string>& options) {
  nlohmann::json j = {{"injector", injector}, {"options", options}};
  return j.dump();
}

std::string HexEncode(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}
}  // namespace

// Rank 0 of a collective printed its rendezvous value: relay it (as raw bytes) through the
// controller to the other ranks' agents.
void AntagonistManager::Antagonist::Publish(const nlohmann::json& p) {
  std::string key = p.value("key", "");
  bool ok = false;
  std::string value = HexDecode(p.value("value_hex", ""), &ok);
  std::string problem;
  if (key.empty() || !ok || !relay || !relay->publish) {
    problem = key.empty() ? "rendezvous_publish without a key"
              : !ok       ? "rendezvous_publish value_hex is not hex"
                          : "this agent has no controller link to relay the rendezvous";
  } else if (Status s = relay->publish(key, value); !s.ok()) {
    problem = "relaying rendezvous '" + key + "': " + s.error();
  }
  if (!problem.empty()) {
    spdlog::error("antagonist {}: {}", id, problem);
    std::lock_guard<std::mutex> l(mu);
    error = problem;
  } else {
    spdlog::info("antagonist {}: relayed rendezvous '{}' ({} bytes)", id, key, value.size());
  }
}

// An injector that declares exports_victim_env asked for variables in the victim's environment.
// Only string values under safe names are taken (IsExportableEnvName: never LD_*, PATH, ...).
// Called with mu held.
void AntagonistManager::Antagonist::TakeVictimEnv(const nlohmann::json& env) {
  if (!caps.exports_victim_env) {
    spdlog::warn(
        "antagonist {}: ignoring a victim_env line: injector '{}' does not declare "
        "exports_victim_env",
        id, request.injector);
    return;
  }
  if (!env.is_object()) return;
  for (const auto& [name, value] : env.items()) {
    if (value.is_string() && injectors::IsExportableEnvName(name)) {
      victim_env[name] = value.get<std::string>();
    } else {
      spdlog::warn(
          "antagonist {}: not exporting '{}' to the victim (unsafe name or not a "
          "string)",
          id, name);
    }
  }
}

AntagonistManager::AntagonistManager(AntagonistPolicy policy, const LeaseMonitor* lease,
                                     const Clock* clock)
    : policy_(std::move(policy)), lease_(lease), clock_(clock) {}

AntagonistManager::~AntagonistManager() { StopAll("agent shutting down"); }

// A non-zero rank of a collective injector needs rank 0's rendezvous value: fetch it through the
// controller before starting (rank 0 publishes it as soon as it has started) and pass it as the
// injector's rendezvous_option. The option names are the collective contract (injector.h).
Status AntagonistManager::FetchRendezvous(Antagonist* a) const {
  auto& options = a->request.options;
  auto opt = [&](const std::string& k) {
    auto it = options.find(k);
    return it == options.end() ? std::string() : it->second;
  };
  const std::string& target = a->caps.rendezvous_option;
  const std::string key = opt("rendezvous_key");
  if (!a->caps.collective || key.empty() || !opt(target).empty() || opt("rank").empty() ||
      opt("rank") == "0") {
    return Status::Ok();
  }
  if (!policy_.relay.fetch) {
    return Err("antagonist '" + a->id + "': no controller link for the rendezvous");
  }
  auto v = policy_.relay.fetch(key, 10.0);
  if (!v.ok()) return Err("antagonist '" + a->id + "': rendezvous '" + key + "': " + v.error());
  options[target] = HexEncode(*v);
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

namespace {
std::string FormatNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The end of a child's stderr, for error messages (at most 600 bytes, valid UTF-8).
std::string Tail(const std::string& s) {
  std::string t = s;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t.size() > 600 ? "..." + Utf8Tail(t, 600) : ValidUtf8(t);
}
}  // namespace

std::vector<std::string> AntagonistManager::RunArgs(const Antagonist& a, bool deferred) const {
  const InjectorRequest& req = a.request;
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

Status AntagonistManager::AwaitLoadStart(const std::shared_ptr<Antagonist>& a) {
  // Setup may take a while: files are preallocated first.
  const double timeout_s = a->request.start_timeout_s > 0 ? a->request.start_timeout_s
                                                          : tunables::kAntagonistStartTimeoutS;
  const double give_up = clock_->MonotonicSeconds() + timeout_s;
  std::unique_lock<std::mutex> l(a->mu);
  while (!a->load_started && !a->child->exited() && clock_->MonotonicSeconds() < give_up) {
    a->started_cv.wait_for(l, std::chrono::milliseconds(100));
  }
  if (a->load_started) return Status::Ok();
  l.unlock();
  {
    std::lock_guard<std::mutex> g(mu_);
    antagonists_.erase(a->id);
  }
  a->child->Terminate(1.0);
  return Err("antagonist '" + a->id + "': codl-inject did not start its load" +
             (a->child->exited() && a->child->exit_code() > 0
                  ? ": exited with status " + std::to_string(a->child->exit_code()) + ": " +
                        Tail(a->child->stderr_tail())
                  : " (stopped, or no start within " + FormatNumber(timeout_s) + " s)"));
}

Result<AntagonistManager::Started> AntagonistManager::Start(const std::string& id,
                                                            const InjectorRequest& req,
                                                            double lease_s) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (antagonists_.count(id)) return Err("antagonist '" + id + "' is already running");
  }
  if (!req.max && !(req.rate > 0)) {
    return Err("antagonist '" + id + "': target rate must be > 0 (got " + FormatNumber(req.rate) +
               ")");
  }
  auto a = std::make_shared<Antagonist>();
  a->id = id;
  a->request = req;
  a->relay = &policy_.relay;
  if (const injectors::Descriptor* d = injectors::FindDescriptor(req.injector)) {
    a->caps = d->capabilities;
  }
  if (Status s = FetchRendezvous(a.get()); !s.ok()) return Err(s.error());
  a->lease_s = lease_s > 0 ? lease_s : policy_.default_lease_s;
  // Synchronized start: spawn now and let codl-inject begin its load at the common time, so
  // process creation and setup (file preallocation, buffers) stay out of the start skew.
  const bool deferred = req.start_at_unix_ns > clock_->UnixNanos();

  ChildProcess::Options o;
  o.argv = RunArgs(*a, deferred);
  if (policy_.placer) {
    auto placement = policy_.placer->Prepare(req.placement, id);
    if (!placement.ok()) return Err("antagonist '" + id + "': " + placement.error());
    o.placement = *placement;
  } else if (!req.placement.empty()) {
    return Err("antagonist '" + id + "': this agent cannot place children (cpus/numa)");
  }
  a->clock = clock_;
  a->telemetry = policy_.telemetry;
  a->started_unix_ns = clock_->UnixNanos();
  Antagonist* raw = a.get();
  o.on_stdout = [raw](std::string_view line) { raw->OnLine(line); };
  auto child = ChildProcess::Spawn(std::move(o));
  if (!child.ok()) return Err("antagonist '" + id + "': " + child.error());
  a->child = std::move(child.value());
  {
    // Registered before the wait: a lease expiry or StopAll during setup reaches it too.
    std::lock_guard<std::mutex> l(mu_);
    antagonists_[id] = a;
    ++started_;
  }
  if (deferred) {
    if (Status s = AwaitLoadStart(a); !s.ok()) return s;
  }
  Started s;
  s.pid = a->child->pid();
  {
    std::lock_guard<std::mutex> l(a->mu);
    s.started_unix_ns = a->started_unix_ns;
    s.ready_unix_ns = a->ready_unix_ns;
    s.setup_s = a->setup_s;
  }
  if (s.ready_unix_ns > 0) {  // learn from it: the next estimate for this setup (EstimateSetupS)
    std::lock_guard<std::mutex> l(mu_);
    measured_setup_s_[SetupKey(req.injector, req.options)] = s.setup_s;
  }
  spdlog::info("antagonist {} started: {} pid {}", id, req.injector, s.pid);
  return s;
}

Result<AntagonistManager::Snapshot> AntagonistManager::Get(const std::string& id) const {
  std::shared_ptr<Antagonist> a;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = antagonists_.find(id);
    if (it == antagonists_.end()) return Err("no antagonist '" + id + "' on this agent");
    a = it->second;
  }
  Snapshot s;
  s.running = !a->child->exited();
  std::lock_guard<std::mutex> l(a->mu);
  s.unit = a->unit;
  s.samples = static_cast<int>(a->samples.size());
  if (!a->samples.empty()) {
    s.last_achieved = a->samples.back().achieved;
    s.target = a->samples.back().target;
  }
  s.error = a->error;
  if (!s.running && s.error.empty() && a->child->exit_code() != 0) {
    s.error = "codl-inject exited with status " + std::to_string(a->child->exit_code()) + ": " +
              Tail(a->child->stderr_tail());
  }
  return s;
}

Result<AntagonistManager::Final> AntagonistManager::Stop(const std::string& id) {
  std::shared_ptr<Antagonist> a;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = antagonists_.find(id);
    if (it == antagonists_.end()) return Err("no antagonist '" + id + "' on this agent");
    a = it->second;
    antagonists_.erase(it);
  }
  a->child->Terminate(/*grace_s=*/3.0);
  Final f;
  f.exit_code = a->child->exit_code();
  f.cpu_s = a->child->cpu_seconds();
  f.run_s = a->child->run_seconds();
  f.effective_cpus = a->child->effective_cpus();
  std::lock_guard<std::mutex> l(a->mu);
  f.unit = a->unit;
  f.samples = a->samples;
  f.error = a->error;
  f.first_load_unix_ns = a->first_load_unix_ns;
  f.first_done_unix_ns = a->first_done_unix_ns;
  // Exit by our SIGTERM is the normal path (codl-inject exits 0 after its summary).
  if (f.error.empty() && f.exit_code != 0 && f.exit_code != -15) {
    f.error = "codl-inject exited with status " + std::to_string(f.exit_code) + ": " +
              Tail(a->child->stderr_tail());
  }
  if (a->have_summary) {
    f.achieved_rate = a->summary_achieved;
    f.target_rate = a->summary_target;
    f.cov = a->summary_cov;
  } else if (!f.samples.empty()) {
    double sum = 0, sq = 0;
    for (const auto& s : f.samples) sum += s.achieved;
    double mean = sum / f.samples.size();
    for (const auto& s : f.samples) sq += (s.achieved - mean) * (s.achieved - mean);
    f.achieved_rate = mean;
    f.cov = mean > 0 ? std::sqrt(sq / f.samples.size()) / mean : 0;
    f.target_rate = f.samples.back().target;
  }
  spdlog::info("antagonist {} stopped: achieved {:.4g} {}, {:.2f} cores on CPUs {} (exit {})", id,
               f.achieved_rate, f.unit, f.run_s > 0 ? f.cpu_s / f.run_s : 0.0, f.effective_cpus,
               f.exit_code);
  return f;
}

int AntagonistManager::StopAll(const std::string& reason) {
  std::map<std::string, std::shared_ptr<Antagonist>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    all.swap(antagonists_);
  }
  for (auto& [id, a] : all) {
    spdlog::warn("stopping antagonist {}: {}", id, reason);
    a->child->Terminate(2.0);
  }
  return static_cast<int>(all.size());
}

int AntagonistManager::Running() const {
  std::lock_guard<std::mutex> l(mu_);
  int n = 0;
  for (const auto& [id, a] : antagonists_) n += a->child->exited() ? 0 : 1;
  return n;
}

int AntagonistManager::EnforceLeases() {
  std::vector<std::shared_ptr<Antagonist>> expired;
  double silent = lease_->SecondsSinceContact();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, a] : antagonists_) {
      if (!a->child->exited() && silent > a->lease_s) expired.push_back(a);
    }
  }
  for (auto& a : expired) {
    spdlog::warn(
        "lease expired for antagonist {} (controller silent for {:.1f} s > lease {:.1f} s): "
        "stopping it",
        a->id, silent, a->lease_s);
    {
      std::lock_guard<std::mutex> l(a->mu);
      a->error = "stopped by the agent: controller silent for longer than the lease";
    }
    a->child->Terminate(1.0);
  }
  std::lock_guard<std::mutex> l(mu_);
  lease_expirations_ += static_cast<int64_t>(expired.size());
  return static_cast<int>(expired.size());
}

Result<double> AntagonistManager::EstimateSetupS(
    const std::string& injector, const std::map<std::string, std::string>& options) const {
  auto inj = injectors::CreateInjector(injector);
  if (!inj) return Err(injectors::ValidateInjectorName(injector));
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
  std::vector<std::string> argv = BaseArgs(injector, options);
  argv.push_back("--calibrate");
  argv.push_back("--duration");
  argv.push_back(FormatNumber(duration_s) + "s");
  auto a = std::make_shared<Antagonist>();
  a->request.injector = injector;
  a->lease_s = policy_.default_lease_s;
  a->clock = clock_;
  ChildProcess::Options o;
  o.argv = argv;
  Antagonist* raw = a.get();
  o.on_stdout = [raw](std::string_view line) { raw->OnLine(line); };
  auto child = ChildProcess::Spawn(std::move(o));
  if (!child.ok()) return Err("calibrating " + injector + ": " + child.error());
  a->child = std::move(child.value());
  {
    std::lock_guard<std::mutex> l(mu_);
    a->id = "calibration-" + injector + "-" + std::to_string(++calibrations_);
    antagonists_[a->id] = a;
  }
  // Setup (file preallocation) can take a while before the timed part starts.
  const bool finished = a->child->WaitFor(duration_s + 120);
  {
    std::lock_guard<std::mutex> l(mu_);
    antagonists_.erase(a->id);
  }
  if (!finished) {
    a->child->Kill();
    return Err("calibrating " + injector + ": codl-inject did not finish in time");
  }
  int code = a->child->exit_code();
  std::lock_guard<std::mutex> l(a->mu);
  if (!a->error.empty()) return Err("calibrating " + injector + ": " + a->error);
  if (code != 0 || !a->have_summary) {
    return Err("calibrating " + injector + ": codl-inject exited with status " +
               std::to_string(code) + ": " + Tail(a->child->stderr_tail()));
  }
  Calibration c;
  c.peak_rate = a->summary_achieved;
  c.unit = a->unit;
  if (!std::isfinite(c.peak_rate) || !(c.peak_rate > 0)) {
    return Err("calibrating " + injector + ": measured peak is not a positive number");
  }
  std::lock_guard<std::mutex> g(mu_);
  peaks_[injector] = c.peak_rate;
  return c;
}

std::optional<double> AntagonistManager::CalibratedPeak(const std::string& injector) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = peaks_.find(injector);
  if (it == peaks_.end()) return std::nullopt;
  return it->second;
}

AntagonistManager::Stats AntagonistManager::GetStats() const {
  std::lock_guard<std::mutex> l(mu_);
  Stats st;
  st.started = started_;
  st.lease_expirations = lease_expirations_;
  for (const auto& [id, a] : antagonists_) {
    if (a->child->exited()) continue;
    std::lock_guard<std::mutex> al(a->mu);
    auto& slot = st.achieved_by_injector[a->request.injector];
    if (!a->samples.empty()) slot.first += a->samples.back().achieved;
    slot.second = a->unit;
  }
  return st;
}

std::map<std::string, std::string> AntagonistManager::VictimEnvironment() const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, std::string> env;
  for (const auto& [id, a] : antagonists_) {
    if (a->child->exited()) continue;
    std::lock_guard<std::mutex> al(a->mu);
    for (const auto& [k, v] : a->victim_env) env[k] = v;
  }
  return env;
}

std::vector<std::pair<int64_t, uint64_t>> AntagonistManager::Children() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::pair<int64_t, uint64_t>> out;
  for (const auto& [id, a] : antagonists_) {
    if (!a->child->exited()) out.emplace_back(a->child->pid(), a->child->start_time_ticks());
  }
  return out;
}

}  // namespace codl::agent
