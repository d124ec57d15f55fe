// codlctl's live progress: a redrawn bar on a terminal (a real pty here), plain lines otherwise,
// colour only on a terminal and never with NO_COLOR. What is highlighted or kept in the bar is
// decided by the event's kind, never by its text.
#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "codlctl/progress_view.h"
#include "lib/rpc/records_proto.h"

namespace codl::cli {
namespace {

// An event without a kind: a status update, or (with a message) what a controller older than
// typed events sends.
v1::ExperimentEvent Event(int done, int total, const std::string& pairing, const std::string& msg) {
  v1::ExperimentEvent ev;
  ev.mutable_status()->set_completed_trials(done);
  ev.mutable_status()->set_total_trials(total);
  ev.mutable_status()->set_current_pairing(pairing);
  rpc::SetState(ExperimentState::kRunning, ev.mutable_status());
  ev.mutable_status()->set_eta_s(75);
  ev.set_message(msg);
  return ev;
}

v1::ExperimentEvent Started(int done, int total, const std::string& pairing,
                            const std::string& msg) {
  auto ev = Event(done, total, pairing, msg);
  ev.mutable_trial_started()->set_pairing(pairing);
  return ev;
}

v1::ExperimentEvent Failed(int done, int total, const std::string& pairing,
                           const std::string& msg) {
  auto ev = Event(done, total, pairing, msg);
  ev.mutable_trial_failed()->set_state(v1::TRIAL_FAILED);
  return ev;
}

v1::ExperimentEvent Calibrating(int done, int total, const std::string& msg) {
  auto ev = Event(done, total, "", msg);
  ev.mutable_calibrating()->set_antagonist("membw");
  return ev;
}

v1::ExperimentEvent WarmUp(int done, int total, const std::string& msg) {
  auto ev = Event(done, total, "", msg);
  ev.mutable_warm_up()->set_run(1);
  return ev;
}

v1::ExperimentEvent Note(v1::Note::Severity severity, const std::string& msg) {
  auto ev = Event(0, 4, "", msg);
  ev.mutable_note()->set_severity(severity);
  ev.mutable_note()->set_text(msg);
  return ev;
}

std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, n);
  return out;
}

// Runs `events` through the view on a pty and returns what the terminal received.
std::string OnTerminal(const std::vector<v1::ExperimentEvent>& events, bool no_color = true) {
  int master, slave;
  EXPECT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  if (no_color) setenv("NO_COLOR", "1", 1);
  else unsetenv("NO_COLOR");
  FILE* f = fdopen(slave, "w");
  {
    ProgressView view(f);
    for (const auto& ev : events) view.OnEvent(ev);
    view.Finish();
  }
  fclose(f);
  fcntl(master, F_SETFL, O_NONBLOCK);
  std::string out = Drain(master);
  close(master);
  unsetenv("NO_COLOR");
  return out;
}

// The routine trial start and a failure, on a terminal.
std::string OnTerminal(bool no_color) {
  return OnTerminal({Started(3, 12, "membw@0.5", "trial 4/12 membw@0.5 started"),
                     Failed(4, 12, "membw@0.5", "trial 4/12 membw@0.5: failed, metric 0 s")},
                    no_color);
}

TEST(ProgressView, TerminalGetsABarWithPairingAndEta) {
  std::string out = OnTerminal(/*no_color=*/true);
  EXPECT_NE(out.find("[######..................] 3/12 trials  membw@0.5  ETA 1m15s"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\r\033[K"), std::string::npos) << "the line is redrawn in place";
  // Routine "started" messages are not printed above the bar; failures are.
  EXPECT_EQ(out.find("trial 4/12 membw@0.5 started"), std::string::npos) << out;
  EXPECT_NE(out.find("trial 4/12 membw@0.5: failed"), std::string::npos) << out;
}

// A log line of the embedded daemons, written while the bar is drawn, gets a line of its own:
// the bar is cleared, the line written, the bar drawn again (issue: warnings glued onto it).
TEST(ProgressView, LogLinesGoAboveTheBarNotOntoIt) {
  int master, slave;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  setenv("NO_COLOR", "1", 1);
  FILE* f = fdopen(slave, "w");
  {
    ProgressView view(f);
    view.OnEvent(Started(3, 12, "membw@0.5", "trial 4/12 membw@0.5 started"));
    WriteAboveBar(f, "[warning] trial 4: membw started late");
    view.Finish();
    WriteAboveBar(f, "after the bar\n");
  }
  fclose(f);
  fcntl(master, F_SETFL, O_NONBLOCK);
  const std::string out = Drain(master);
  close(master);
  unsetenv("NO_COLOR");
  const std::string bar = "[######..................] 3/12 trials  membw@0.5  ETA 1m15s";
  // Drawn, cleared for the log line, which ends its own line (a pty turns \n into \r\n), then
  // drawn again.
  EXPECT_NE(out.find(bar + "\r\033[K[warning] trial 4: membw started late\r\n\r\033[K" + bar),
            std::string::npos)
      << out;
  // Once the view is finished there is no bar to clear or redraw.
  EXPECT_NE(out.find("\r\033[Kafter the bar\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("after the bar\r\n\r\033[K["), std::string::npos) << out;
}

TEST(ProgressView, CalibrationShowsInTheBarUntilTheFirstTrial) {
  std::string out =
      OnTerminal({Calibrating(0, 12, "calibrating membw (memcpy) on n1 for 5 s"),
                  Event(0, 12, "", ""), Started(0, 12, "baseline", "trial 1/12 baseline started")});
  // Printed once above the bar, and kept in the bar on the next redraw.
  EXPECT_NE(out.find("0/12 trials  calibrating membw (memcpy) on n1 for 5 s  ETA"),
            std::string::npos)
      << out;
  const size_t last_bar = out.rfind("0/12 trials  ");
  EXPECT_EQ(out.compare(last_bar, 21, "0/12 trials  baseline"), 0) << out;
}

// The kind decides, whatever the text says: a note mentioning "failed" and "started" is printed
// plainly, a flagged trial whose text names neither is highlighted, and text that looks like a
// calibration is not kept in the bar unless the event is one.
TEST(ProgressView, HighlightAndActivityComeFromTheKindNotTheText) {
  auto flagged = Event(1, 4, "membw@1", "trial 1/4 membw@1: membw reached 412 of 1e3");
  flagged.mutable_trial_flagged()->add_flag_reasons()->set_code(v1::FlagReason::MISSED_TARGET);
  const std::string out = OnTerminal({Note(v1::Note::INFO, "trial 2 started; nothing failed"),
                                      flagged, Note(v1::Note::WARNING, "trial 3: did not settle"),
                                      Note(v1::Note::INFO, "calibrating nothing, just a note")},
                                     /*no_color=*/false);
  EXPECT_NE(out.find("\033[2mtrial 2 started; nothing failed\033[0m"), std::string::npos) << out;
  EXPECT_NE(out.find("\033[33mtrial 1/4 membw@1: membw reached 412 of 1e3\033[0m"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\033[33mtrial 3: did not settle\033[0m"), std::string::npos) << out;
  EXPECT_EQ(out.find("trials  calibrating nothing"), std::string::npos)
      << "a note is not an activity: " << out;
  // A routine start is not printed above the bar whatever its text.
  const std::string quiet = OnTerminal({Started(0, 4, "baseline", "trial 1/4 baseline: failed?")});
  EXPECT_EQ(quiet.find("failed?"), std::string::npos) << quiet;
}

TEST(ProgressView, LookOfEveryKind) {
  v1::ExperimentEvent ev;
  EXPECT_FALSE(LookOf(ev).above_bar) << "a status update";
  ev.set_message("from an older controller");
  EXPECT_TRUE(LookOf(ev).above_bar);
  EXPECT_FALSE(LookOf(ev).bad);
  ev.mutable_watch_started();
  EXPECT_FALSE(LookOf(ev).above_bar);
  ev.mutable_experiment()->set_state(v1::EXPERIMENT_FAILED);
  EXPECT_TRUE(LookOf(ev).bad);
  ev.mutable_experiment()->set_state(v1::EXPERIMENT_CANCELLED);
  EXPECT_TRUE(LookOf(ev).above_bar);
  EXPECT_FALSE(LookOf(ev).bad);
  ev.mutable_trial_done();
  EXPECT_TRUE(LookOf(ev).above_bar);
  EXPECT_FALSE(LookOf(ev).bad);
  ev.mutable_trial_cancelled();
  EXPECT_FALSE(LookOf(ev).bad);
  ev.mutable_trial_failed();
  EXPECT_TRUE(LookOf(ev).bad);
  ev.mutable_trial_flagged();
  EXPECT_TRUE(LookOf(ev).bad);
  ev.mutable_dataset();
  EXPECT_TRUE(LookOf(ev).above_bar);
  EXPECT_FALSE(LookOf(ev).activity);
  ev.mutable_warm_up();
  EXPECT_TRUE(LookOf(ev).activity);
  ev.mutable_calibrating();
  EXPECT_TRUE(LookOf(ev).activity);
  ev.mutable_note()->set_severity(v1::Note::ERROR);
  EXPECT_TRUE(LookOf(ev).bad);
  EXPECT_FALSE(LookOf(ev).activity);
}

// A controller older than the state enum sends the state's name only: the bar still shows it.
TEST(ProgressView, StateNameFromAnOlderControllerIsShown) {
  v1::ExperimentEvent ev;
  ev.mutable_status()->set_total_trials(3);
  ev.mutable_status()->set_state_name("queued");
  EXPECT_NE(OnTerminal({ev}).find("0/3 trials  queued  ETA"), std::string::npos);
}

TEST(ProgressView, NoColorMeansNoColourCodes) {
  EXPECT_EQ(OnTerminal(/*no_color=*/true).find("\033[33m"), std::string::npos);
  EXPECT_NE(OnTerminal(/*no_color=*/false).find("\033[33m"), std::string::npos)
      << "failures are highlighted when colour is allowed";
}

TEST(ProgressView, PipesGetOneLinePerEvent) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  FILE* f = fdopen(fds[1], "w");
  {
    ProgressView view(f);
    view.OnEvent(Event(0, 2, "", "experiment started: 2 trials"));
    view.OnEvent(Event(1, 2, "baseline", "trial 1/2 baseline: done, metric 0.01 s"));
    view.Finish();
  }
  fclose(f);
  std::string out = Drain(fds[0]);
  close(fds[0]);
  EXPECT_EQ(out,
            "[0/2] experiment started: 2 trials\n[1/2] trial 1/2 baseline: done, metric 0.01 s\n");
}

TEST(ProgressView, AdaptiveRepetitionsShowPrecisionThenTheStopReason) {
  auto block = Event(9, 30, "membw@1",
                     "block 3 (min 3, max 10): widest half-width 4.1% at "
                     "membw@1, target 2%");
  block.mutable_status()->set_precision(block.message());
  auto stopped = Event(15, 30, "", "stopped: target reached after 5 blocks");
  stopped.mutable_status()->set_stop_reason("target reached after 5 blocks");
  const std::string out = OnTerminal({block, stopped});
  EXPECT_NE(out.find("\033[Kblock 3 (min 3, max 10): widest half-width 4.1%"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ETA 1m15s  widest half-width 4.1% at membw@1, target 2%"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ETA 1m15s  stopped: target reached after 5 blocks"), std::string::npos)
      << out;
}

v1::ExperimentEvent Dataset(int64_t generated, int64_t total, const std::string& msg) {
  auto ev = Event(0, 4, "", msg);
  ev.mutable_status()->set_dataset_generated(generated);
  ev.mutable_status()->set_dataset_total(total);
  return ev;
}

// The victim generating its dataset is a phase of its own, shown like calibration.
TEST(ProgressView, DatasetGenerationShowsInTheBarWithItsProgress) {
  const std::string out = OnTerminal(
      {WarmUp(0, 4, "warm-up run 1/1 on n1"),
       Dataset(0, 256, "dataset: the victim is generating 256 samples"), Dataset(120, 256, ""),
       Dataset(256, 256, "dataset: the victim generated 256 samples"),
       Started(0, 4, "baseline", "trial 1/4 baseline started")});
  EXPECT_NE(out.find("\033[Kdataset: the victim is generating 256 samples"), std::string::npos)
      << out;
  EXPECT_NE(out.find("0/4 trials  dataset 0/256 samples  ETA"), std::string::npos) << out;
  EXPECT_NE(out.find("0/4 trials  dataset 120/256 samples  ETA"), std::string::npos) << out;
  // Done: the bar goes back to what runs (the warm-up run), then to the trial.
  EXPECT_GT(out.rfind("0/4 trials  warm-up run 1/1 on n1  ETA"),
            out.find("0/4 trials  dataset 120/256 samples"))
      << out;
  EXPECT_EQ(out.find("dataset 256/256"), std::string::npos) << out;
  EXPECT_NE(out.find("0/4 trials  baseline"), std::string::npos) << out;
  // Without a warm-up run the first trial generates it: shown after the pairing.
  auto in_trial = Dataset(5, 64, "");
  in_trial.mutable_status()->set_current_pairing("baseline");
  EXPECT_NE(OnTerminal({in_trial}).find("0/4 trials  baseline  dataset 5/64 samples  ETA"),
            std::string::npos);
}

TEST(ProgressView, DatasetNote) {
  v1::ExperimentStatus s;
  EXPECT_EQ(DatasetNote(s), "");
  s.set_dataset_total(10);
  s.set_dataset_generated(3);
  EXPECT_EQ(DatasetNote(s), "dataset 3/10 samples");
  s.set_dataset_generated(10);
  EXPECT_EQ(DatasetNote(s), "") << "a finished generation is no longer the phase";
}

// --log-format json: one JSON log line per message, nothing for silent updates, no bar.
TEST(ProgressView, JsonLinesAreLogLines) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  FILE* f = fdopen(fds[1], "w");
  {
    ProgressView view(f, /*json_lines=*/true);
    view.OnEvent(Event(0, 2, "", "calibrating membw (memcpy) on n1 for 5 s"));
    view.OnEvent(Event(0, 2, "baseline", ""));
    view.OnEvent(Event(1, 2, "baseline", "trial 1/2 baseline: done, \"quoted\""));
    view.Finish();
  }
  fclose(f);
  const std::string out = Drain(fds[0]);
  close(fds[0]);
  const size_t nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  const std::string first = out.substr(0, nl), second = out.substr(nl + 1);
  EXPECT_EQ(first.rfind("{\"ts\":\"", 0), 0u) << first;
  EXPECT_NE(first.find("\"level\":\"info\",\"msg\":\"[0/2] calibrating membw (memcpy) on n1 for "
                       "5 s\",\"component\":\"codlctl\"}"),
            std::string::npos)
      << first;
  EXPECT_NE(second.find("\"msg\":\"[1/2] trial 1/2 baseline: done, \\\"quoted\\\"\""),
            std::string::npos)
      << second;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
}

TEST(ProgressView, JsonLinesWarnForWhatTheTerminalHighlights) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  FILE* f = fdopen(fds[1], "w");
  {
    ProgressView view(f, /*json_lines=*/true);
    view.OnEvent(Failed(1, 2, "baseline", "trial 1/2 baseline: failed, metric 0 s"));
    view.OnEvent(Note(v1::Note::INFO, "nothing failed here"));
    view.Finish();
  }
  fclose(f);
  const std::string out = Drain(fds[0]);
  close(fds[0]);
  const size_t nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_NE(out.substr(0, nl).find("\"level\":\"warn\""), std::string::npos) << out;
  EXPECT_NE(out.substr(nl + 1).find("\"level\":\"info\""), std::string::npos) << out;
}

TEST(ProgressView, EtaFormatting) {
  EXPECT_EQ(FormatEta(0), "--");
  EXPECT_EQ(FormatEta(42), "42s");
  EXPECT_EQ(FormatEta(75), "1m15s");
  EXPECT_EQ(FormatEta(3725), "1h02m");
}

}  // namespace
}  // namespace codl::cli
