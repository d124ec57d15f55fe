// The protocol between codl-inject and whoever runs it (codl-agent, scripts, a person): what
// codl-inject writes on stdout, one JSON object per line, and the one value it is given back (a
// collective's rendezvous value, as a --set option). One struct per record, each with Format
// (the line, without '\n') and Parse; codl-inject writes only through Format, the agent reads
// only through Parse, so the two cannot drift apart.
//
// A record's FIRST key names it (Format always writes it first): "t_s" an interval, "summary"
// the summary, "started_unix_ns" a synchronized start's account, ... (kFirstKey of each
// struct). Any other line (human text, an unknown record) fails Parse and is skipped by readers.
// Unknown keys inside a known record are ignored, so a record may gain fields. Numbers that
// Format cannot write (NaN, inf) travel as null and parse back as NaN.
//
// std-only (with lib/common): compiled into codl-inject on bare GPU boxes (CODL_TOOLS_ONLY).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lib/common/result.h"

namespace codl::injectors::protocol {

// ---- the hex codec (opaque rendezvous values travel as lowercase hex) -----------------------

std::string HexEncode(std::string_view bytes);
// Upper or lower case; exact messages (tested):
//   "odd number of hex characters (11)"
//   "invalid hex character 'g' at offset 5"      (0-based; unprintable bytes shown as \xNN)
Result<std::string> HexDecode(std::string_view hex);
// The same, for a value of a known size: "expected 256 hex characters (128 bytes), got 10".
Result<std::string> HexDecode(std::string_view hex, size_t expected_bytes);

// ---- codl-inject -> reader (stdout) ----------------------------------------------------------

// One telemetry interval (--json, every ~200 ms):
//   {"t_s":0.2,"achieved":1e9,"target":0,"unit":"bytes/s","phase":"run","saturated":false[,"iops":…]}
// `extra`: the injector's secondary rates (Sample::extra), one numeric key each.
struct Interval {
  static constexpr const char* kFirstKey = "t_s";
  double t_s = 0;
  double achieved = 0;
  double target = 0;
  std::string unit;
  std::string phase;  // "calibrate" | "run"
  bool saturated = false;
  std::map<std::string, double> extra;
  std::string Format() const;
  static Result<Interval> Parse(std::string_view line);
};

// The last line of a run (--json):
//   {"summary":true,"injector":…,"unit":…,"mode":…,"target_rate":…,"achieved_rate":…,
//    "peak_rate":…,"cov":…,"seconds":…[,"level":…],"saturated":…,"stopped_by_signal":…
//    [,extra…][,"notes":["…"]]}
struct Summary {
  static constexpr const char* kFirstKey = "summary";
  std::string injector, unit;
  std::string mode;  // "calibrate" | "max" | "rate" | "level"
  double target_rate = 0;
  double achieved_rate = 0;
  double peak_rate = 0;  // calibrated or --peak; 0 when not measured
  double cov = 0;
  double seconds = 0;
  double level = -1;  // --level only; < 0: absent
  bool saturated = false;
  bool stopped_by_signal = false;
  std::map<std::string, double> extra;
  std::vector<std::string> notes;
  std::string Format() const;
  static Result<Summary> Parse(std::string_view line);
};

// A synchronized start's (--start-at --json) account of itself, with its first interval:
//   {"started_unix_ns":W,"start_at_unix_ns":S,"ready_unix_ns":R,"setup_s":X,"setup_estimate_s":E}
// W: the load began; S: the common start asked for; R: setup and calibration were done and the
// wait began (R > S: the preparation overran the start); X: Setup()'s measured duration; E: the
// injector's own estimate of it (Injector::SetupEstimateS), what the agent learns from.
struct StartAccount {
  static constexpr const char* kFirstKey = "started_unix_ns";
  int64_t started_unix_ns = 0;
  int64_t start_at_unix_ns = 0;
  int64_t ready_unix_ns = 0;
  double setup_s = 0;
  double setup_estimate_s = 0;
  std::string Format() const;
  static Result<StartAccount> Parse(std::string_view line);
};

// When the load first reached its resource (Injector::FirstLoadTimes), after StartAccount:
//   {"first_load_unix_ns":N[,"first_done_unix_ns":M]}          (M omitted when 0: not tracked)
struct FirstLoad {
  static constexpr const char* kFirstKey = "first_load_unix_ns";
  int64_t first_load_unix_ns = 0;
  int64_t first_done_unix_ns = 0;
  std::string Format() const;
  static Result<FirstLoad> Parse(std::string_view line);
};

// Rank 0 of a collective hands its rendezvous value (raw bytes) to the other ranks:
//   {"rendezvous_publish":{"key":"<rendezvous_key>","value_hex":"<hex of value>"}}
// The agent relays it through the controller; the other ranks get it as a RendezvousFetch.
struct RendezvousPublish {
  static constexpr const char* kFirstKey = "rendezvous_publish";
  std::string key;
  std::string value;  // raw bytes
  std::string Format() const;
  static Result<RendezvousPublish> Parse(std::string_view line);
};

// Variables for the victims started while the injector runs (Capabilities::exports_victim_env):
//   {"victim_env":{"CUDA_MPS_PIPE_DIRECTORY":"/tmp/x/pipe",...}}
// Parse keeps string values only; which names a reader accepts is its own rule
// (IsExportableEnvName).
struct VictimEnv {
  static constexpr const char* kFirstKey = "victim_env";
  std::map<std::string, std::string> env;
  std::string Format() const;
  static Result<VictimEnv> Parse(std::string_view line);
};

// The host's GPU registration labels, after the injectors of `--list --json` (the agent links
// no CUDA library, so it asks codl-inject):  {"gpu_labels":{"gpu_count":"2",...}}
struct GpuLabels {
  static constexpr const char* kFirstKey = "gpu_labels";
  std::map<std::string, std::string> labels;
  std::string Format() const;
  static Result<GpuLabels> Parse(std::string_view line);
};

// An MPS co-tenant's control daemon, for people and logs (the agent only logs it):
//   {"mps":{"pipe_dir":"...","log_dir":"...","started":true}}
// started = this process started the daemon (and will quit it when done).
struct MpsStatus {
  static constexpr const char* kFirstKey = "mps";
  std::string pipe_dir, log_dir;
  bool started = false;
  std::string Format() const;
  static Result<MpsStatus> Parse(std::string_view line);
};

// Something the injector wants the person or the log to know (HostServices::Note):
//   {"note":"listening on 127.0.0.1:5201"}
struct Note {
  static constexpr const char* kFirstKey = "note";
  std::string text;
  std::string Format() const;
  static Result<Note> Parse(std::string_view line);
};

// One row of `--list --json`:
//   {"name":"io_uring","resource":…,"unit":…,"available":true,"reason":""}
struct ListEntry {
  static constexpr const char* kFirstKey = "name";
  std::string name, resource, unit;
  bool available = false;
  std::string reason;  // why not, when !available
  std::string Format() const;
  static Result<ListEntry> Parse(std::string_view line);
};

// One stale run directory `--cleanup-stale --json` removed:  {"removed":"/tmp/codl-inject.1234"}
struct Removed {
  static constexpr const char* kFirstKey = "removed";
  std::string path;
  std::string Format() const;
  static Result<Removed> Parse(std::string_view line);
};

using Record = std::variant<Interval, Summary, StartAccount, FirstLoad, RendezvousPublish,
                            VictimEnv, GpuLabels, MpsStatus, Note, ListEntry, Removed>;

// Any record, told apart by its first key. Errors: kNotFound for a line that is no record
// (human text, an unknown first key: readers skip it), kInvalidArgument for a record of a known
// kind that is malformed ("rendezvous_publish record: ..."). `kind`, when given, receives the
// record's first key whenever the line is of a known kind, malformed or not.
Result<Record> ParseRecord(std::string_view line, std::string* kind = nullptr);
std::string FormatRecord(const Record& record);

// ---- reader -> codl-inject (command line) ----------------------------------------------------

// A rendezvous value for a non-zero rank, as the --set argument the agent passes:
//   <rendezvous_option>=<hex of value>
// The injector receives the hex as that option's text and decodes it with DecodeValue.
struct RendezvousFetch {
  std::string option;  // Capabilities::rendezvous_option
  std::string value;   // raw bytes
  std::string Format() const;
  std::string OptionValue() const;  // what follows the '=': the hex of value
  static Result<RendezvousFetch> Parse(std::string_view set_argument);
  // The option's text back to the bytes; expected_bytes 0: any length.
  static Result<std::string> DecodeValue(std::string_view hex, size_t expected_bytes = 0);
};

}  // namespace codl::injectors::protocol
