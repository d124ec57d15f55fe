#include "lib/rpc/records_proto.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace codl::rpc {

v1::ExperimentState ToProto(ExperimentState s) {
  switch (s) {
    case ExperimentState::kQueued: return v1::EXPERIMENT_QUEUED;
    case ExperimentState::kRunning: return v1::EXPERIMENT_RUNNING;
    case ExperimentState::kDone: return v1::EXPERIMENT_DONE;
    case ExperimentState::kFailed: return v1::EXPERIMENT_FAILED;
    case ExperimentState::kCancelled: return v1::EXPERIMENT_CANCELLED;
    case ExperimentState::kInterrupted: return v1::EXPERIMENT_INTERRUPTED;
  }
  return v1::EXPERIMENT_STATE_UNSPECIFIED;
}

Result<ExperimentState> FromProto(v1::ExperimentState s) {
  switch (s) {
    case v1::EXPERIMENT_QUEUED: return ExperimentState::kQueued;
    case v1::EXPERIMENT_RUNNING: return ExperimentState::kRunning;
    case v1::EXPERIMENT_DONE: return ExperimentState::kDone;
    case v1::EXPERIMENT_FAILED: return ExperimentState::kFailed;
    case v1::EXPERIMENT_CANCELLED: return ExperimentState::kCancelled;
    case v1::EXPERIMENT_INTERRUPTED: return ExperimentState::kInterrupted;
    default: return Internal("unknown experiment state " + std::to_string(static_cast<int>(s)));
  }
}

v1::TrialState ToProto(TrialState s) {
  switch (s) {
    case TrialState::kPending: return v1::TRIAL_PENDING;
    case TrialState::kRunning: return v1::TRIAL_RUNNING;
    case TrialState::kDone: return v1::TRIAL_DONE;
    case TrialState::kFailed: return v1::TRIAL_FAILED;
    case TrialState::kFlagged: return v1::TRIAL_FLAGGED;
    case TrialState::kCancelled: return v1::TRIAL_CANCELLED;
  }
  return v1::TRIAL_STATE_UNSPECIFIED;
}

Result<TrialState> FromProto(v1::TrialState s) {
  switch (s) {
    case v1::TRIAL_PENDING: return TrialState::kPending;
    case v1::TRIAL_RUNNING: return TrialState::kRunning;
    case v1::TRIAL_DONE: return TrialState::kDone;
    case v1::TRIAL_FAILED: return TrialState::kFailed;
    case v1::TRIAL_FLAGGED: return TrialState::kFlagged;
    case v1::TRIAL_CANCELLED: return TrialState::kCancelled;
    default: return Internal("unknown trial state " + std::to_string(static_cast<int>(s)));
  }
}

v1::FlagReason ToProto(const FlagReason& r) {
  v1::FlagReason p;
  switch (r.code) {
    case FlagCode::kMissedTarget: p.set_code(v1::FlagReason::MISSED_TARGET); break;
    case FlagCode::kDidNotSettle: p.set_code(v1::FlagReason::DID_NOT_SETTLE); break;
    case FlagCode::kTooFewSamples: p.set_code(v1::FlagReason::TOO_FEW_SAMPLES); break;
    case FlagCode::kMetricLooksWrong: p.set_code(v1::FlagReason::METRIC_LOOKS_WRONG); break;
    case FlagCode::kNeighbourEnded: p.set_code(v1::FlagReason::NEIGHBOUR_ENDED); break;
    case FlagCode::kUnknown: p.set_code(v1::FlagReason::CODE_UNSPECIFIED); break;
  }
  p.set_detail(r.detail);
  return p;
}

FlagReason FromProto(const v1::FlagReason& p) {
  FlagReason r;
  switch (p.code()) {
    case v1::FlagReason::MISSED_TARGET: r.code = FlagCode::kMissedTarget; break;
    case v1::FlagReason::DID_NOT_SETTLE: r.code = FlagCode::kDidNotSettle; break;
    case v1::FlagReason::TOO_FEW_SAMPLES: r.code = FlagCode::kTooFewSamples; break;
    case v1::FlagReason::METRIC_LOOKS_WRONG: r.code = FlagCode::kMetricLooksWrong; break;
    case v1::FlagReason::NEIGHBOUR_ENDED: r.code = FlagCode::kNeighbourEnded; break;
    default: r.code = FlagCode::kUnknown;
  }
  r.detail = p.detail();
  return r;
}

void SetState(ExperimentState state, v1::ExperimentStatus* s) {
  s->set_state(ToProto(state));
  s->set_state_name(ToString(state));
}

Result<ExperimentState> StateOf(const v1::ExperimentStatus& s) {
  if (s.state() != v1::EXPERIMENT_STATE_UNSPECIFIED) return FromProto(s.state());
  ExperimentState state;
  if (ParseExperimentState(s.state_name(), &state)) return state;
  return Internal("unknown experiment state '" + s.state_name() + "'");
}

std::string StateName(const v1::ExperimentStatus& s) {
  auto state = StateOf(s);
  return state.ok() ? ToString(*state) : s.state_name();
}

std::string StateName(const v1::CancelExperimentReply& r) {
  if (r.experiment_state() == v1::EXPERIMENT_STATE_UNSPECIFIED) return r.state();
  if (r.stopping()) return "cancelling";
  auto state = FromProto(r.experiment_state());
  return state.ok() ? ToString(*state) : r.state();
}

namespace {

v1::AntagonistResult ToProto(const AntagonistResult& a) {
  v1::AntagonistResult p;
  p.set_name(a.name);
  p.set_injector(a.injector);
  p.set_node(a.node);
  p.set_level(a.level);
  p.set_target_rate(a.target_rate);
  p.set_achieved_rate(a.achieved_rate);
  p.set_achieved_cov(a.achieved_cov);
  p.set_peak_rate(a.peak_rate);
  p.set_unit(a.unit);
  p.set_reached_target(a.reached_target);
  p.set_start_skew_s(a.start_skew_s);
  p.set_cpu_s(a.cpu_s);
  p.set_run_s(a.run_s);
  p.set_effective_cpus(a.effective_cpus);
  for (const auto& s : a.samples) {
    auto* q = p.add_samples();
    q->set_t_s(s.t_s);
    q->set_achieved(s.achieved);
    q->set_target(s.target);
    q->set_steps(s.steps);
  }
  return p;
}

AntagonistResult FromProto(const v1::AntagonistResult& p) {
  AntagonistResult a;
  a.name = p.name();
  a.injector = p.injector();
  a.node = p.node();
  a.level = p.level();
  a.target_rate = p.target_rate();
  a.achieved_rate = p.achieved_rate();
  a.achieved_cov = p.achieved_cov();
  a.peak_rate = p.peak_rate();
  a.unit = p.unit();
  a.reached_target = p.reached_target();
  a.start_skew_s = p.start_skew_s();
  a.cpu_s = p.cpu_s();
  a.run_s = p.run_s();
  a.effective_cpus = p.effective_cpus();
  for (const auto& q : p.samples())
    a.samples.push_back({q.t_s(), q.achieved(), q.target(), q.steps()});
  return a;
}

}  // namespace

v1::VictimStep ToProto(const VictimStep& s) {
  v1::VictimStep p;
  p.set_step(s.step);
  p.set_step_time_s(s.step_time_s);
  p.mutable_phases()->insert(s.phases.begin(), s.phases.end());
  p.set_t_s(s.t_s);
  p.set_warmup(s.warmup);
  return p;
}

VictimStep FromProto(const v1::VictimStep& p) {
  VictimStep s;
  s.step = p.step();
  s.step_time_s = p.step_time_s();
  s.phases.insert(p.phases().begin(), p.phases().end());
  s.t_s = p.t_s();
  s.warmup = p.warmup();
  return s;
}

namespace {

v1::RankRecord ToProto(const RankRecord& r) {
  v1::RankRecord p;
  p.set_rank(r.rank);
  p.set_node(r.node);
  p.set_exit_code(r.exit_code);
  p.set_wall_s(r.wall_s);
  p.set_step_median_s(r.step_median_s);
  p.set_busy_median_s(r.busy_median_s);
  p.mutable_phase_medians()->insert(r.phase_medians.begin(), r.phase_medians.end());
  for (const auto& s : r.steps) *p.add_steps() = rpc::ToProto(s);
  return p;
}

RankRecord FromProto(const v1::RankRecord& p) {
  RankRecord r;
  r.rank = p.rank();
  r.node = p.node();
  r.exit_code = p.exit_code();
  r.wall_s = p.wall_s();
  r.step_median_s = p.step_median_s();
  r.busy_median_s = p.busy_median_s();
  r.phase_medians.insert(p.phase_medians().begin(), p.phase_medians().end());
  for (const auto& s : p.steps()) r.steps.push_back(rpc::FromProto(s));
  return r;
}

}  // namespace

v1::ExperimentRecord ToProto(const ExperimentRecord& e) {
  v1::ExperimentRecord p;
  p.set_id(e.id);
  p.set_name(e.name);
  p.set_source_path(e.source_path);
  p.set_yaml(e.yaml);
  p.set_state(ToProto(e.state));
  p.set_error(e.error);
  p.set_seed(e.seed);
  p.set_total_trials(e.total_trials);
  p.set_created_unix_ms(e.created_unix_ms);
  p.set_finished_unix_ms(e.finished_unix_ms);
  p.set_provenance_json(e.provenance_json);
  p.set_stop_reason(e.stop_reason);
  p.set_submitter(e.submitter);
  return p;
}

Result<ExperimentRecord> FromProto(const v1::ExperimentRecord& p) {
  auto state = FromProto(p.state());
  if (!state.ok()) return Internal("experiment " + p.id() + ": " + state.error());
  ExperimentRecord e;
  e.id = p.id();
  e.name = p.name();
  e.source_path = p.source_path();
  e.yaml = p.yaml();
  e.state = *state;
  e.error = p.error();
  e.seed = p.seed();
  e.total_trials = p.total_trials();
  e.created_unix_ms = p.created_unix_ms();
  e.finished_unix_ms = p.finished_unix_ms();
  // An older controller sends none: keep the record's "no provenance" object.
  if (!p.provenance_json().empty()) e.provenance_json = p.provenance_json();
  e.stop_reason = p.stop_reason();
  e.submitter = p.submitter();
  return e;
}

v1::NodeTelemetry ToProto(const NodeTelemetry& t) {
  v1::NodeTelemetry p;
  p.set_node(t.node);
  p.set_window_s(t.window_s);
  p.set_psi_cpu_some(t.psi_cpu_some);
  p.set_psi_cpu_full(t.psi_cpu_full);
  p.set_psi_io_some(t.psi_io_some);
  p.set_psi_io_full(t.psi_io_full);
  p.set_psi_memory_some(t.psi_memory_some);
  p.set_psi_memory_full(t.psi_memory_full);
  for (const DiskTelemetry& d : t.disks) {
    v1::DiskCounters* c = p.add_disks();
    c->set_device(d.device);
    c->set_read_bytes(d.read_bytes);
    c->set_write_bytes(d.write_bytes);
    c->set_reads(d.reads);
    c->set_writes(d.writes);
  }
  for (const NicTelemetry& n : t.nics) {
    v1::NicCounters* c = p.add_nics();
    c->set_interface(n.interface);
    c->set_rx_bytes(n.rx_bytes);
    c->set_tx_bytes(n.tx_bytes);
  }
  p.set_mem_available_start_bytes(t.mem_available_start_bytes);
  p.set_mem_available_end_bytes(t.mem_available_end_bytes);
  p.set_mem_available_min_bytes(t.mem_available_min_bytes);
  p.set_cached_start_bytes(t.cached_start_bytes);
  p.set_cached_end_bytes(t.cached_end_bytes);
  p.set_membw_bytes(t.membw_bytes);
  p.set_membw_note(t.membw_note);
  p.set_notes(t.notes);
  for (const GpuTelemetry& g : t.gpus) {
    v1::GpuCounters* c = p.add_gpus();
    c->set_index(g.index);
    c->set_name(g.name);
    c->set_samples(g.samples);
    c->set_util_mean(g.util_mean);
    c->set_util_max(g.util_max);
    c->set_mem_util_mean(g.mem_util_mean);
    c->set_mem_used_max_bytes(g.mem_used_max_bytes);
    c->set_mem_total_bytes(g.mem_total_bytes);
    c->set_pcie_tx_bytes(g.pcie_tx_bytes);
    c->set_pcie_rx_bytes(g.pcie_rx_bytes);
    c->set_nvlink_tx_bytes(g.nvlink_tx_bytes);
    c->set_nvlink_rx_bytes(g.nvlink_rx_bytes);
    c->set_sm_clock_min_mhz(g.sm_clock_min_mhz);
    c->set_sm_clock_mean_mhz(g.sm_clock_mean_mhz);
    c->set_mem_clock_min_mhz(g.mem_clock_min_mhz);
    c->set_mem_clock_mean_mhz(g.mem_clock_mean_mhz);
    c->set_clock_reasons(g.clock_reasons);
    c->set_notes(g.notes);
  }
  p.set_gpu_note(t.gpu_note);
  return p;
}

NodeTelemetry FromProto(const v1::NodeTelemetry& p) {
  auto share = [](double v) { return v >= 0 && v <= 1 ? v : std::nan(""); };
  auto count = [](int64_t v) { return std::max<int64_t>(0, v); };
  auto memory = [](int64_t v) { return std::max<int64_t>(-1, v); };
  NodeTelemetry t;
  t.node = p.node();
  t.window_s = std::isfinite(p.window_s()) && p.window_s() > 0 ? p.window_s() : 0;
  t.psi_cpu_some = share(p.psi_cpu_some());
  t.psi_cpu_full = share(p.psi_cpu_full());
  t.psi_io_some = share(p.psi_io_some());
  t.psi_io_full = share(p.psi_io_full());
  t.psi_memory_some = share(p.psi_memory_some());
  t.psi_memory_full = share(p.psi_memory_full());
  for (const auto& c : p.disks()) {
    if (static_cast<int>(t.disks.size()) >= kMaxTelemetryDevices) break;
    t.disks.push_back({c.device(), count(c.read_bytes()), count(c.write_bytes()), count(c.reads()),
                       count(c.writes())});
  }
  for (const auto& c : p.nics()) {
    if (static_cast<int>(t.nics.size()) >= kMaxTelemetryDevices) break;
    t.nics.push_back({c.interface(), count(c.rx_bytes()), count(c.tx_bytes())});
  }
  t.mem_available_start_bytes = memory(p.mem_available_start_bytes());
  t.mem_available_end_bytes = memory(p.mem_available_end_bytes());
  t.mem_available_min_bytes = memory(p.mem_available_min_bytes());
  t.cached_start_bytes = memory(p.cached_start_bytes());
  t.cached_end_bytes = memory(p.cached_end_bytes());
  t.membw_bytes =
      std::isfinite(p.membw_bytes()) && p.membw_bytes() >= 0 ? p.membw_bytes() : std::nan("");
  t.membw_note = p.membw_note();
  t.notes = p.notes();
  auto percent = [](double v) { return v >= 0 && v <= 100 ? v : std::nan(""); };
  auto bytes = [](double v) { return std::isfinite(v) && v >= 0 ? v : std::nan(""); };
  auto mhz = [](double v) { return std::isfinite(v) && v >= 0 && v < 1e6 ? v : std::nan(""); };
  for (const auto& c : p.gpus()) {
    if (static_cast<int>(t.gpus.size()) >= kMaxTelemetryDevices) break;
    GpuTelemetry g;
    g.index = std::max(0, c.index());
    g.name = c.name();
    g.samples = std::max(0, c.samples());
    g.util_mean = percent(c.util_mean());
    g.util_max = percent(c.util_max());
    g.mem_util_mean = percent(c.mem_util_mean());
    g.mem_used_max_bytes = memory(c.mem_used_max_bytes());
    g.mem_total_bytes = memory(c.mem_total_bytes());
    g.pcie_tx_bytes = bytes(c.pcie_tx_bytes());
    g.pcie_rx_bytes = bytes(c.pcie_rx_bytes());
    g.nvlink_tx_bytes = bytes(c.nvlink_tx_bytes());
    g.nvlink_rx_bytes = bytes(c.nvlink_rx_bytes());
    g.sm_clock_min_mhz = mhz(c.sm_clock_min_mhz());
    g.sm_clock_mean_mhz = mhz(c.sm_clock_mean_mhz());
    g.mem_clock_min_mhz = mhz(c.mem_clock_min_mhz());
    g.mem_clock_mean_mhz = mhz(c.mem_clock_mean_mhz());
    g.clock_reasons = std::max<int64_t>(-1, c.clock_reasons());
    g.notes = c.notes();
    t.gpus.push_back(std::move(g));
  }
  t.gpu_note = p.gpu_note();
  return t;
}

v1::TrialRecord ToProto(const TrialRecord& t) {
  v1::TrialRecord p;
  p.set_experiment_id(t.experiment_id);
  p.set_index(t.index);
  p.set_repetition(t.repetition);
  p.set_baseline(t.baseline);
  p.set_solo(t.solo);
  p.set_pairing(t.pairing);
  p.set_state(ToProto(t.state));
  p.set_error(t.error);
  p.set_exit_code(t.exit_code);
  p.set_stderr_tail(t.stderr_tail);
  p.set_victim_node(t.victim_node);
  p.set_metric(t.value_s);
  p.set_wall_s(t.wall_s);
  p.mutable_phase_medians()->insert(t.phase_medians.begin(), t.phase_medians.end());
  p.set_started_unix_ms(t.started_unix_ms);
  p.set_finished_unix_ms(t.finished_unix_ms);
  for (const auto& s : t.steps) *p.add_steps() = ToProto(s);
  for (const auto& a : t.antagonists) *p.add_antagonists() = ToProto(a);
  p.set_victim_cpu_s(t.victim_cpu_s);
  p.set_victim_effective_cpus(t.victim_effective_cpus);
  p.set_cache_measured(t.cache_total_bytes >= 0);
  p.set_cache_total_bytes(t.cache_total_bytes);
  p.set_cache_resident_bytes(t.cache_resident_bytes);
  for (const auto& name : t.phase_order) p.add_phase_order(name);
  for (const auto& r : t.flag_reasons) *p.add_flag_reasons() = ToProto(r);
  for (const auto& r : t.ranks) *p.add_ranks() = ToProto(r);
  for (const auto& n : t.node_telemetry) *p.add_node_telemetry() = ToProto(n);
  p.set_attempt(t.attempt);
  p.set_failure_kind(ToString(t.failure));
  for (FailureKind k : t.earlier_failures) p.add_earlier_failures(ToString(k));
  return p;
}

Result<TrialRecord> FromProto(const v1::TrialRecord& p) {
  auto state = FromProto(p.state());
  if (!state.ok()) {
    return Internal("trial " + std::to_string(p.index() + 1) + ": " + state.error());
  }
  TrialRecord t;
  t.experiment_id = p.experiment_id();
  t.index = p.index();
  t.repetition = p.repetition();
  t.baseline = p.baseline();
  t.solo = p.solo();
  t.pairing = p.pairing();
  t.state = *state;
  t.error = p.error();
  t.exit_code = p.exit_code();
  t.stderr_tail = p.stderr_tail();
  t.victim_node = p.victim_node();
  t.value_s = p.metric();
  t.wall_s = p.wall_s();
  t.phase_medians.insert(p.phase_medians().begin(), p.phase_medians().end());
  t.started_unix_ms = p.started_unix_ms();
  t.finished_unix_ms = p.finished_unix_ms();
  for (const auto& s : p.steps()) t.steps.push_back(FromProto(s));
  for (const auto& a : p.antagonists()) t.antagonists.push_back(FromProto(a));
  t.victim_cpu_s = p.victim_cpu_s();
  t.victim_effective_cpus = p.victim_effective_cpus();
  if (p.cache_measured()) {
    t.cache_total_bytes = std::max<int64_t>(0, p.cache_total_bytes());
    t.cache_resident_bytes = std::clamp<int64_t>(p.cache_resident_bytes(), 0, t.cache_total_bytes);
  }
  t.phase_order.assign(p.phase_order().begin(), p.phase_order().end());
  for (const auto& r : p.flag_reasons()) t.flag_reasons.push_back(FromProto(r));
  for (const auto& r : p.ranks()) t.ranks.push_back(FromProto(r));
  for (const auto& n : p.node_telemetry()) t.node_telemetry.push_back(FromProto(n));
  t.attempt = std::max(1, p.attempt());
  if (!ParseFailureKind(p.failure_kind(), &t.failure)) t.failure = FailureKind::kNone;
  for (const auto& name : p.earlier_failures()) {
    FailureKind k = FailureKind::kNone;
    t.earlier_failures.push_back(ParseFailureKind(name, &k) ? k : FailureKind::kNone);
  }
  RestoreFlagReasons(&t);  // from a controller older than typed reasons
  return t;
}

void ToProto(const ExperimentRecord& e, const std::vector<TrialRecord>& trials,
             v1::GetResultsReply* reply) {
  *reply->mutable_experiment() = ToProto(e);
  for (const auto& t : trials) *reply->add_trials() = ToProto(t);
}

Result<std::pair<ExperimentRecord, std::vector<TrialRecord>>> FromProto(
    const v1::GetResultsReply& reply) {
  auto e = FromProto(reply.experiment());
  if (!e.ok()) return e.status();
  std::vector<TrialRecord> trials;
  for (const auto& p : reply.trials()) {
    auto t = FromProto(p);
    if (!t.ok()) return t.status();
    trials.push_back(std::move(t.value()));
  }
  return std::make_pair(std::move(e.value()), std::move(trials));
}

}  // namespace codl::rpc
