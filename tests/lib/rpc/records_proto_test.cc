// Records <-> proto: every field survives the trip (the CLI's statistics depend on all of them),
// and a record with a state this build does not know is refused, not guessed.
#include "lib/rpc/records_proto.h"

#include <cmath>

#include <gtest/gtest.h>

namespace codl::rpc {
namespace {

ExperimentRecord SampleExperiment() {
  ExperimentRecord e;
  e.id = "20260101-000000-abcd";
  e.name = "membw";
  e.source_path = "exp.yaml";
  e.yaml = "name: membw\n";
  e.state = ExperimentState::kInterrupted;
  e.error = "controller restarted";
  e.seed = 18446744073709551615ull;
  e.total_trials = 12;
  e.created_unix_ms = 1700000000000;
  e.finished_unix_ms = 1700000001234;
  return e;
}

TrialRecord SampleTrial() {
  TrialRecord t;
  t.experiment_id = "20260101-000000-abcd";
  t.index = 3;
  t.repetition = 1;
  t.baseline = false;
  t.pairing = "membw@0.5+storage@1";
  t.state = TrialState::kFlagged;
  t.flag_reasons = {{FlagCode::kDidNotSettle, "did not settle: storage held 0.3 s of 1 s"},
                    {FlagCode::kMissedTarget, "storage missed its target"}};
  t.error = JoinFlagReasons(t.flag_reasons);
  t.exit_code = -9;
  t.stderr_tail = "killed";
  t.victim_node = "node-a";
  t.value_s = 0.125;
  t.wall_s = 12.5;
  t.phase_medians = {{"read_s", 0.01}, {"compute_s", 0.1}};
  t.started_unix_ms = 1700000000100;
  t.finished_unix_ms = 1700000000900;
  t.steps.push_back({7, 0.12, {{"read_s", 0.02}}, 1.5, true});
  t.steps.push_back({8, 0.13, {}, 1.63, false});
  RankRecord zero, one;
  zero.node = "node-a";
  zero.step_median_s = 0.125;
  zero.busy_median_s = 0.05;
  one.rank = 1;
  one.node = "node-c";
  one.exit_code = 3;
  one.wall_s = 12.75;
  one.step_median_s = 0.126;
  one.busy_median_s = 0.12;
  one.phase_medians = {{"comm_s", 0.006}};
  one.steps.push_back({7, 0.126, {{"comm_s", 0.006}}, 1.49, false});
  t.ranks = {zero, one};
  AntagonistResult a;
  a.name = "storage";
  a.injector = "io_uring";
  a.node = "node-b";
  a.level = 0.5;
  a.target_rate = 1e9;
  a.achieved_rate = 9e8;
  a.achieved_cov = 0.05;
  a.peak_rate = 2e9;
  a.unit = "bytes/s";
  a.reached_target = false;
  a.start_skew_s = -0.002;
  a.samples = {{0.5, 8e8, 1e9}, {1.0, 1e9, 1e9}};
  t.antagonists.push_back(a);
  return t;
}

TEST(RecordsProto, ExperimentRoundTrip) {
  ExperimentRecord in = SampleExperiment();
  auto out = FromProto(ToProto(in));
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->id, in.id);
  EXPECT_EQ(out->name, in.name);
  EXPECT_EQ(out->source_path, in.source_path);
  EXPECT_EQ(out->yaml, in.yaml);
  EXPECT_EQ(out->state, in.state);
  EXPECT_EQ(out->error, in.error);
  EXPECT_EQ(out->seed, in.seed);
  EXPECT_EQ(out->total_trials, in.total_trials);
  EXPECT_EQ(out->created_unix_ms, in.created_unix_ms);
  EXPECT_EQ(out->finished_unix_ms, in.finished_unix_ms);
}

TEST(RecordsProto, TrialRoundTripKeepsStepsAndSamples) {
  TrialRecord in = SampleTrial();
  // Through the wire bytes, as GetResults does.
  v1::TrialRecord parsed;
  ASSERT_TRUE(parsed.ParseFromString(ToProto(in).SerializeAsString()));
  auto out = FromProto(parsed);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->experiment_id, in.experiment_id);
  EXPECT_EQ(out->index, in.index);
  EXPECT_EQ(out->repetition, in.repetition);
  EXPECT_EQ(out->baseline, in.baseline);
  EXPECT_EQ(out->pairing, in.pairing);
  EXPECT_EQ(out->state, in.state);
  EXPECT_EQ(out->error, in.error);
  EXPECT_EQ(out->flag_reasons, in.flag_reasons);
  EXPECT_EQ(out->exit_code, in.exit_code);
  EXPECT_EQ(out->stderr_tail, in.stderr_tail);
  EXPECT_EQ(out->victim_node, in.victim_node);
  EXPECT_EQ(out->value_s, in.value_s);
  EXPECT_EQ(out->wall_s, in.wall_s);
  EXPECT_EQ(out->phase_medians, in.phase_medians);
  ASSERT_EQ(out->ranks.size(), 2u);
  EXPECT_EQ(out->ranks[0].node, "node-a");
  EXPECT_EQ(out->ranks[1].rank, 1);
  EXPECT_EQ(out->ranks[1].node, "node-c");
  EXPECT_EQ(out->ranks[1].exit_code, 3);
  EXPECT_EQ(out->ranks[1].wall_s, 12.75);
  EXPECT_EQ(out->ranks[1].busy_median_s, 0.12);
  EXPECT_EQ(out->ranks[1].phase_medians, in.ranks[1].phase_medians);
  ASSERT_EQ(out->ranks[1].steps.size(), 1u);
  EXPECT_EQ(out->ranks[1].steps[0].phases, in.ranks[1].steps[0].phases);
  EXPECT_EQ(out->started_unix_ms, in.started_unix_ms);
  EXPECT_EQ(out->finished_unix_ms, in.finished_unix_ms);
  ASSERT_EQ(out->steps.size(), 2u);
  EXPECT_EQ(out->steps[0].step, 7);
  EXPECT_EQ(out->steps[0].step_time_s, 0.12);
  EXPECT_EQ(out->steps[0].phases, in.steps[0].phases);
  EXPECT_EQ(out->steps[0].t_s, 1.5);
  EXPECT_TRUE(out->steps[0].warmup);
  EXPECT_FALSE(out->steps[1].warmup);
  ASSERT_EQ(out->antagonists.size(), 1u);
  const AntagonistResult& a = out->antagonists[0];
  const AntagonistResult& want = in.antagonists[0];
  EXPECT_EQ(a.name, want.name);
  EXPECT_EQ(a.injector, want.injector);
  EXPECT_EQ(a.node, want.node);
  EXPECT_EQ(a.level, want.level);
  EXPECT_EQ(a.target_rate, want.target_rate);
  EXPECT_EQ(a.achieved_rate, want.achieved_rate);
  EXPECT_EQ(a.achieved_cov, want.achieved_cov);
  EXPECT_EQ(a.peak_rate, want.peak_rate);
  EXPECT_EQ(a.unit, want.unit);
  EXPECT_EQ(a.reached_target, want.reached_target);
  EXPECT_EQ(a.start_skew_s, want.start_skew_s);
  ASSERT_EQ(a.samples.size(), 2u);
  EXPECT_EQ(a.samples[0].t_s, 0.5);
  EXPECT_EQ(a.samples[0].achieved, 8e8);
  EXPECT_EQ(a.samples[0].target, 1e9);
}

TEST(RecordsProto, EveryStateSurvives) {
  for (auto s :
       {ExperimentState::kQueued, ExperimentState::kRunning, ExperimentState::kDone,
        ExperimentState::kFailed, ExperimentState::kCancelled, ExperimentState::kInterrupted}) {
    ExperimentRecord e;
    e.state = s;
    auto out = FromProto(ToProto(e));
    ASSERT_TRUE(out.ok()) << ToString(s);
    EXPECT_EQ(out->state, s);
  }
  for (auto s : {TrialState::kPending, TrialState::kRunning, TrialState::kDone, TrialState::kFailed,
                 TrialState::kFlagged, TrialState::kCancelled}) {
    TrialRecord t;
    t.state = s;
    auto out = FromProto(ToProto(t));
    ASSERT_TRUE(out.ok()) << ToString(s);
    EXPECT_EQ(out->state, s);
  }
}

TEST(RecordsProto, FlagReasonsKeepTheirCodesAndAnUnknownCodeItsDetail) {
  v1::TrialRecord p = ToProto(SampleTrial());
  ASSERT_EQ(p.flag_reasons_size(), 2);
  EXPECT_EQ(p.flag_reasons(0).code(), v1::FlagReason::DID_NOT_SETTLE);
  EXPECT_EQ(p.flag_reasons(1).code(), v1::FlagReason::MISSED_TARGET);
  EXPECT_EQ(p.error(), "did not settle: storage held 0.3 s of 1 s; storage missed its target")
      << "the joined text stays for older readers";
  p.mutable_flag_reasons(0)->set_code(static_cast<v1::FlagReason::Code>(99));  // a newer code
  auto out = FromProto(p);
  ASSERT_TRUE(out.ok()) << out.error();
  const std::vector<FlagReason> want = {
      {FlagCode::kUnknown, "did not settle: storage held 0.3 s of 1 s"},
      {FlagCode::kMissedTarget, "storage missed its target"}};
  EXPECT_EQ(out->flag_reasons, want);
  EXPECT_EQ(FromProto(ToProto(FlagReason{FlagCode::kTooFewSamples, "x"})).code,
            FlagCode::kTooFewSamples);
}

TEST(RecordsProto, AFlaggedTrialFromAnOlderControllerHasItsTextAsOneReason) {
  v1::TrialRecord p = ToProto(SampleTrial());
  p.clear_flag_reasons();
  auto out = FromProto(p);
  ASSERT_TRUE(out.ok()) << out.error();
  ASSERT_EQ(out->flag_reasons.size(), 1u);
  EXPECT_EQ(out->flag_reasons[0].code, FlagCode::kUnknown);
  EXPECT_EQ(out->flag_reasons[0].detail, p.error());
  p.set_state(v1::TRIAL_FAILED);  // a failure's error is not a flag reason
  EXPECT_TRUE(FromProto(p)->flag_reasons.empty());
}

TEST(RecordsProto, StatusCarriesItsStateAsEnumAndAsName) {
  const std::vector<std::pair<ExperimentState, v1::ExperimentState>> all = {
      {ExperimentState::kQueued, v1::EXPERIMENT_QUEUED},
      {ExperimentState::kRunning, v1::EXPERIMENT_RUNNING},
      {ExperimentState::kDone, v1::EXPERIMENT_DONE},
      {ExperimentState::kFailed, v1::EXPERIMENT_FAILED},
      {ExperimentState::kCancelled, v1::EXPERIMENT_CANCELLED},
      {ExperimentState::kInterrupted, v1::EXPERIMENT_INTERRUPTED}};
  for (const auto& [state, wire] : all) {
    v1::ExperimentStatus s;
    SetState(state, &s);
    EXPECT_EQ(s.state(), wire) << ToString(state);
    EXPECT_EQ(s.state_name(), ToString(state)) << "for readers older than the enum";
    EXPECT_EQ(*StateOf(s), state);
    // From an older controller: the name only.
    v1::ExperimentStatus old;
    old.set_state_name(ToString(state));
    ASSERT_TRUE(StateOf(old).ok()) << ToString(state);
    EXPECT_EQ(*StateOf(old), state);
    EXPECT_EQ(StateName(old), ToString(state));
  }
  // The enum wins over a disagreeing name.
  v1::ExperimentStatus both;
  both.set_state(v1::EXPERIMENT_DONE);
  both.set_state_name("running");
  EXPECT_EQ(*StateOf(both), ExperimentState::kDone);
  v1::ExperimentStatus unknown;
  unknown.set_state_name("paused");
  EXPECT_FALSE(StateOf(unknown).ok());
  EXPECT_EQ(StateName(unknown), "paused") << "shown as sent";
}

TEST(RecordsProto, CancelReplyIsReadFromItsTypesAndFromAnOlderController) {
  v1::CancelExperimentReply stopping;
  stopping.set_experiment_state(v1::EXPERIMENT_RUNNING);
  stopping.set_stopping(true);
  stopping.set_state("something else");
  EXPECT_EQ(StateName(stopping), "cancelling") << "the types win over the name";
  v1::CancelExperimentReply ended;
  ended.set_experiment_state(v1::EXPERIMENT_DONE);
  EXPECT_EQ(StateName(ended), "done");
  v1::CancelExperimentReply old;  // a controller older than experiment_state
  old.set_state("cancelling");
  EXPECT_EQ(StateName(old), "cancelling");
}

TEST(RecordsProto, ReplyCarriesTheExperimentAndItsTrialsInOrder) {
  v1::GetResultsReply reply;
  TrialRecord second = SampleTrial();
  second.index = 4;
  ToProto(SampleExperiment(), {SampleTrial(), second}, &reply);
  auto out = FromProto(reply);
  ASSERT_TRUE(out.ok()) << out.error();
  EXPECT_EQ(out->first.id, "20260101-000000-abcd");
  ASSERT_EQ(out->second.size(), 2u);
  EXPECT_EQ(out->second[0].index, 3);
  EXPECT_EQ(out->second[1].index, 4);
}

TEST(RecordsProto, AnUnknownStateIsRefused) {
  v1::GetResultsReply reply;
  ToProto(SampleExperiment(), {SampleTrial()}, &reply);
  reply.mutable_trials(0)->set_state(v1::TRIAL_STATE_UNSPECIFIED);
  auto out = FromProto(reply);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.code(), StatusCode::kInternal);
  EXPECT_EQ(out.error(), "trial 4: unknown trial state 0");

  v1::ExperimentRecord e = ToProto(SampleExperiment());
  e.set_state(static_cast<v1::ExperimentState>(42));  // a state from a newer build
  auto bad = FromProto(e);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "experiment 20260101-000000-abcd: unknown experiment state 42");
}

TEST(RecordsProto, NodeTelemetryRoundTripsInATrial) {
  TrialRecord t = SampleTrial();
  NodeTelemetry n;
  n.node = "gpu-1";
  n.window_s = 4.5;
  n.psi_cpu_some = 0.5;
  n.psi_io_full = 0.01;  // the other shares: NaN
  n.disks = {{"vda", 1, 2, 3, 4}};
  n.nics = {{"lo", 5, 6}};
  n.mem_available_min_bytes = 1 << 30;
  n.cached_end_bytes = 1 << 20;
  n.membw_note = "memory bandwidth: unavailable (no uncore PMU in this VM)";
  n.notes = "x";
  t.node_telemetry = {n};
  auto back = FromProto(ToProto(t));
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->node_telemetry.size(), 1u);
  const NodeTelemetry& g = back->node_telemetry[0];
  EXPECT_EQ(g.node, "gpu-1");
  EXPECT_DOUBLE_EQ(g.window_s, 4.5);
  EXPECT_DOUBLE_EQ(g.psi_cpu_some, 0.5);
  EXPECT_DOUBLE_EQ(g.psi_io_full, 0.01);
  EXPECT_TRUE(std::isnan(g.psi_cpu_full));
  ASSERT_EQ(g.disks.size(), 1u);
  EXPECT_EQ(g.disks[0].device, "vda");
  EXPECT_EQ(g.disks[0].writes, 4);
  ASSERT_EQ(g.nics.size(), 1u);
  EXPECT_EQ(g.nics[0].tx_bytes, 6);
  EXPECT_EQ(g.mem_available_min_bytes, 1 << 30);
  EXPECT_EQ(g.mem_available_start_bytes, -1);
  EXPECT_EQ(g.cached_end_bytes, 1 << 20);
  EXPECT_TRUE(std::isnan(g.membw_bytes));
  EXPECT_EQ(g.membw_note, n.membw_note);
  EXPECT_EQ(g.notes, "x");
}

TEST(RecordsProto, NodeTelemetryFromAPeerIsKeptInBounds) {
  v1::NodeTelemetry p;
  p.set_window_s(-3);
  p.set_psi_cpu_some(1.5);
  p.set_psi_io_some(-0.1);
  p.set_psi_memory_some(0.2);
  p.set_mem_available_min_bytes(-99);
  p.set_membw_bytes(-1);
  auto* d = p.add_disks();
  d->set_device("vda");
  d->set_write_bytes(-5);
  for (int i = 0; i < kMaxTelemetryDevices + 10; ++i) p.add_nics()->set_rx_bytes(i);
  const NodeTelemetry t = FromProto(p);
  EXPECT_EQ(t.window_s, 0);
  EXPECT_TRUE(std::isnan(t.psi_cpu_some));
  EXPECT_TRUE(std::isnan(t.psi_io_some));
  EXPECT_DOUBLE_EQ(t.psi_memory_some, 0.2);
  EXPECT_EQ(t.mem_available_min_bytes, -1);
  EXPECT_TRUE(std::isnan(t.membw_bytes));
  ASSERT_EQ(t.disks.size(), 1u);
  EXPECT_EQ(t.disks[0].write_bytes, 0);
  EXPECT_EQ(t.nics.size(), static_cast<size_t>(kMaxTelemetryDevices));
  EXPECT_TRUE(t.gpus.empty());
  EXPECT_EQ(t.gpu_note, "");  // an older agent says nothing about GPUs
}

TEST(RecordsProto, GpuTelemetryRoundTripsWithItsNote) {
  NodeTelemetry n;
  GpuTelemetry g;
  g.index = 3;
  g.name = "NVIDIA H100 80GB HBM3";
  g.samples = 12;
  g.util_mean = 55.5;
  g.util_max = 100;
  g.mem_used_max_bytes = 1ll << 34;
  g.mem_total_bytes = 80ll << 30;
  g.pcie_tx_bytes = 1e9;
  g.pcie_rx_bytes = 2e9;  // NVLink: NaN (no NVLink)
  g.sm_clock_min_mhz = 1755;
  g.sm_clock_mean_mhz = 1900.5;
  g.clock_reasons = 0x24;
  g.notes = "NVLink bytes: Not Supported (no NVLink)";
  n.gpus = {g};
  n.gpu_note = "NVML, driver 550.54.15";
  const NodeTelemetry back = FromProto(ToProto(n));
  EXPECT_EQ(back.gpu_note, n.gpu_note);
  ASSERT_EQ(back.gpus.size(), 1u);
  const GpuTelemetry& b = back.gpus[0];
  EXPECT_EQ(b.index, 3);
  EXPECT_EQ(b.name, g.name);
  EXPECT_EQ(b.samples, 12);
  EXPECT_DOUBLE_EQ(b.util_mean, 55.5);
  EXPECT_DOUBLE_EQ(b.util_max, 100);
  EXPECT_TRUE(std::isnan(b.mem_util_mean));
  EXPECT_EQ(b.mem_used_max_bytes, 1ll << 34);
  EXPECT_EQ(b.mem_total_bytes, 80ll << 30);
  EXPECT_DOUBLE_EQ(b.pcie_tx_bytes, 1e9);
  EXPECT_DOUBLE_EQ(b.pcie_rx_bytes, 2e9);
  EXPECT_TRUE(std::isnan(b.nvlink_tx_bytes));
  EXPECT_DOUBLE_EQ(b.sm_clock_min_mhz, 1755);
  EXPECT_DOUBLE_EQ(b.sm_clock_mean_mhz, 1900.5);
  EXPECT_TRUE(std::isnan(b.mem_clock_min_mhz));
  EXPECT_EQ(b.clock_reasons, 0x24);
  EXPECT_EQ(b.notes, g.notes);
}

TEST(RecordsProto, GpuTelemetryFromAPeerIsKeptInBounds) {
  v1::NodeTelemetry p;
  for (int i = 0; i < kMaxTelemetryDevices + 5; ++i) {
    v1::GpuCounters* c = p.add_gpus();
    c->set_index(-4);
    c->set_util_mean(250);
    c->set_util_max(-1);
    c->set_pcie_tx_bytes(-10);
    c->set_mem_used_max_bytes(-7);
    c->set_clock_reasons(-9);
    c->set_sm_clock_min_mhz(1e12);
  }
  const NodeTelemetry t = FromProto(p);
  ASSERT_EQ(t.gpus.size(), static_cast<size_t>(kMaxTelemetryDevices));
  const GpuTelemetry& g = t.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_TRUE(std::isnan(g.util_mean));
  EXPECT_TRUE(std::isnan(g.util_max));
  EXPECT_TRUE(std::isnan(g.pcie_tx_bytes));
  EXPECT_EQ(g.mem_used_max_bytes, -1);
  EXPECT_EQ(g.clock_reasons, -1);
  EXPECT_TRUE(std::isnan(g.sm_clock_min_mhz));
}

}  // namespace
}  // namespace codl::rpc
