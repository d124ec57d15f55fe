#include "codlctl/progress_view.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "lib/common/utf8.h"
#include "lib/daemon/logging.h"
#include "lib/rpc/records_proto.h"

namespace codl::cli {
namespace {

// The bar a ProgressView last drew, and where; guarded by BarMutex(). Log lines from other
// threads go above it (WriteAboveBar).
std::mutex& BarMutex() {
  static std::mutex mu;
  return mu;
}
FILE* g_bar_out = nullptr;
std::string g_bar;  // without the leading "\r\033[K"

}  // namespace

void WriteAboveBar(FILE* out, std::string_view text) {
  std::lock_guard<std::mutex> l(BarMutex());
  const bool bar = out == g_bar_out && !g_bar.empty();
  if (bar) fputs("\r\033[K", out);
  fwrite(text.data(), 1, text.size(), out);
  if (!text.empty() && text.back() != '\n') fputc('\n', out);
  if (bar) fputs(("\r\033[K" + g_bar).c_str(), out);
  fflush(out);
}

std::string FormatEta(double s) {
  if (!(s > 0) || !std::isfinite(s)) return "--";
  char buf[32];
  int t = static_cast<int>(std::lround(s));
  if (t >= 3600) snprintf(buf, sizeof buf, "%dh%02dm", t / 3600, (t % 3600) / 60);
  else if (t >= 60) snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  else snprintf(buf, sizeof buf, "%ds", t);
  return buf;
}

std::string DatasetNote(const v1::ExperimentStatus& s) {
  if (s.dataset_total() <= 0 || s.dataset_generated() >= s.dataset_total()) return "";
  return "dataset " + std::to_string(s.dataset_generated()) + "/" +
         std::to_string(s.dataset_total()) + " samples";
}

std::string JsonNote(const std::string& level, const std::string& message) {
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  return codl::daemon::JsonLogLine(ms, level, message, "codlctl");
}

ProgressView::ProgressView(FILE* out, bool json_lines) : out_(out), json_lines_(json_lines) {
  tty_ = !json_lines && isatty(fileno(out)) != 0;
  const char* no_color = getenv("NO_COLOR");
  color_ = tty_ && !(no_color && *no_color);
}

std::string ProgressView::Bar(int done, int total) const {
  const int width = 24;
  int filled = total > 0 ? done * width / total : 0;
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

// Adaptive repetitions, at the end of the bar: why the blocks stopped, or else how precise the
// last checked block was ("widest half-width 3.1% at membw@0.5, target 2%", without the block
// numbers printed above the bar with it).
std::string AdaptiveNote(const v1::ExperimentStatus& s) {
  if (!s.stop_reason().empty()) return "  stopped: " + s.stop_reason();
  const std::string& p = s.precision();
  if (p.empty()) return "";
  const size_t colon = p.find("): ");
  return "  " + (colon == std::string::npos ? p : p.substr(colon + 3));
}

EventLook LookOf(const v1::ExperimentEvent& ev) {
  using E = v1::ExperimentEvent;
  EventLook look;
  switch (ev.kind_case()) {
    case E::KIND_NOT_SET:
      // A status update; or, from a controller older than typed events, a message: shown as is.
      look.above_bar = !ev.message().empty();
      break;
    case E::kWatchStarted:
    case E::kTrialStarted: break;  // routine: the bar says it
    case E::kExperiment:
      look.above_bar = true;
      look.bad = ev.experiment().state() == v1::EXPERIMENT_FAILED;
      break;
    case E::kTrialFlagged:
    case E::kTrialFailed: look.above_bar = look.bad = true; break;
    case E::kCalibrating:
    case E::kWarmUp: look.above_bar = look.activity = true; break;
    case E::kNote:
      look.above_bar = true;
      look.bad =
          ev.note().severity() == v1::Note::WARNING || ev.note().severity() == v1::Note::ERROR;
      break;
    default: look.above_bar = true;  // done, cancelled, dataset
  }
  return look;
}

void ProgressView::OnEvent(const v1::ExperimentEvent& ev) {
  const auto& s = ev.status();
  if (json_lines_) {
    if (ev.message().empty()) return;
    char where[32];
    snprintf(where, sizeof where, "[%d/%d] ", s.completed_trials(), s.total_trials());
    // A failure, a flag or a warning is a "warn" line, by its kind as on the terminal.
    const char* level = LookOf(ev).bad ? "warn" : "info";
    fprintf(out_, "%s\n", JsonNote(level, where + ev.message()).c_str());
    fflush(out_);
    return;
  }
  if (!tty_) {
    if (ev.message().empty()) return;  // live step updates: only the terminal view redraws
    fprintf(out_, "[%d/%d] %s\n", s.completed_trials(), s.total_trials(),
            codl::TerminalSafe(ev.message()).c_str());
    fflush(out_);
    return;
  }
  std::lock_guard<std::mutex> l(BarMutex());
  const EventLook look = LookOf(ev);
  if (look.above_bar && !ev.message().empty()) {
    const char* on = "";
    const char* off = "";
    if (color_) {
      on = look.bad ? "\033[33m" : "\033[2m";
      off = "\033[0m";
    }
    fprintf(out_, "\r\033[K%s%s%s\n", on, codl::TerminalSafe(ev.message()).c_str(), off);
  }
  if (look.activity) activity_ = ev.message();
  if (!s.current_pairing().empty()) activity_.clear();
  std::string where = s.current_pairing();
  if (where.empty()) where = activity_.empty() ? rpc::StateName(s) : activity_;
  if (!s.waiting_for().empty()) where = "queued: " + s.waiting_for();
  // The victim generating its dataset: in place of what runs before the trials (the warm-up
  // run), after the pairing when it happens in a trial (warmup_trials: 0).
  if (std::string d = DatasetNote(s); !d.empty()) {
    where = s.current_pairing().empty() ? d : where + "  " + d;
  }
  std::string step;
  if (s.victim_step() > 0 && !s.current_pairing().empty()) {
    char buf[64];
    snprintf(buf, sizeof buf, "  step %lld (%.1f ms)", static_cast<long long>(s.victim_step()),
             s.victim_step_time_s() * 1e3);
    step = buf;
  }
  char counts[64];
  snprintf(counts, sizeof counts, " %d/%d trials  ", s.completed_trials(), s.total_trials());
  g_bar = Bar(s.completed_trials(), s.total_trials()) + counts + codl::TerminalSafe(where) + step +
          "  ETA " + FormatEta(s.eta_s()) + codl::TerminalSafe(AdaptiveNote(s));
  g_bar_out = out_;
  fputs(("\r\033[K" + g_bar).c_str(), out_);
  fflush(out_);
  drawn_ = true;
}

void ProgressView::Finish() {
  std::lock_guard<std::mutex> l(BarMutex());
  if (tty_ && drawn_) fprintf(out_, "\r\033[K");
  if (g_bar_out == out_) {
    g_bar_out = nullptr;
    g_bar.clear();
  }
  fflush(out_);
}

}  // namespace codl::cli
