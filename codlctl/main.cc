// codlctl: the CoDL command line. `codlctl --help` and `codlctl SUBCOMMAND --help` teach.
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "codlctl/commands.h"
#include "codlctl/controller_client.h"
#include "codlctl/results_output.h"
#include "lib/common/defaults.h"

using namespace codl::cli;

int main(int argc, char** argv) {
  CLI::App app{
      "codlctl: measure how much slower a training job gets when storage, memory bandwidth,\n"
      "PCIe, the interconnect or the GPU is shared with a calibrated noisy neighbour.\n\n"
      "  codlctl run experiments/quickstart.yaml      run here (embedded controller + agent)\n"
      "  codlctl validate exp.yaml --plan             check a file, print the trial plan\n"
      "  codlctl submit exp.yaml --controller H:P     send to a cluster controller\n"
      "  codlctl results latest --db codl-results.db  slowdown table from a results file\n\n"
      "Exit codes: 0 ok, 1 experiment failed, 2 bad input."};
  app.require_subcommand(1);
  GlobalOptions g;
  std::string token, log_level = "warn";
  app.add_option("--controller", g.controller,
                 "controller address (host:port or unix:/path); default $CODL_CONTROLLER; "
                 "`run` without one starts an embedded controller");
  app.add_option("--tls-ca", g.tls.ca, "PEM CA bundle (mTLS)");
  app.add_option("--tls-cert", g.tls.cert, "PEM client certificate (mTLS)");
  app.add_option("--tls-key", g.tls.key, "PEM client key (mTLS)");
  app.add_option("--token", token, "bearer token (also $CODL_TOKEN)");
  app.add_option("--log-level", log_level, "log level of the embedded controller/agent")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  std::string file, id, db, output = "table";
  bool plan = false, watch = false, json = false;

  auto* validate = app.add_subcommand("validate", "check an experiment file; --plan prints the trials");
  validate->add_option("file", file, "experiment YAML")->required();
  validate->add_flag("--plan", plan, "print the expanded trial list and an estimated duration");

  RunOptions ro;
  auto* run = app.add_subcommand(
      "run", "run an experiment and print the slowdown table (embedded controller + agent unless "
             "--controller/$CODL_CONTROLLER is set)");
  run->add_option("file", ro.file, "experiment YAML")->required();
  run->add_option("--db", ro.db, "results database of the embedded controller")->capture_default_str();
  run->add_option("-o,--output", ro.output, "table | csv | json")->capture_default_str();
  run->add_option("--report", ro.report, "also write the HTML report to this file");
  run->add_option("--csv", ro.csv, "also write the results as CSV to this file");
  run->add_option("--json", ro.json, "also write the results as JSON to this file");
  run->add_option("--lease", ro.lease, "embedded agent's dead-man lease")->capture_default_str();
  run->add_option("--scratch-root", ro.scratch_roots,
                  "embedded agent: directory injectors may write under (repeatable; default "
                  "$CODL_SCRATCH_ROOTS, else $TMPDIR or /tmp)");
  run->add_flag("-q,--quiet", ro.quiet, "no progress output");

  auto* submit = app.add_subcommand("submit", "send an experiment to the controller; prints its id");
  submit->add_option("file", file, "experiment YAML")->required();
  submit->add_flag("--watch", watch, "then follow it until it ends");

  std::string status_id;  // no default: with --db and no id, status lists every experiment
  auto* status = app.add_subcommand("status", "state of an experiment (ID or latest)");
  status->add_option("id", status_id, "experiment id or 'latest' (with --db and no id: list all)");
  status->add_option("--db", db, "read this results database instead of asking a controller");

  auto* watch_cmd = app.add_subcommand("watch", "follow an experiment's progress until it ends");
  watch_cmd->add_option("id", id, "experiment id or 'latest'")->default_val("latest");

  auto* results = app.add_subcommand("results", "slowdown per pairing, with CI and p-value");
  results->add_option("id", id, "experiment id or 'latest'")->default_val("latest");
  results->add_option("--db", db, "read this results database (e.g. codl-results.db), no controller");
  results->add_option("-o,--output", output, "table | csv | json")->capture_default_str();

  std::string report_path = "report.html";
  auto* report = app.add_subcommand("report", "write the self-contained HTML report");
  report->add_option("id", id, "experiment id or 'latest'")->default_val("latest");
  report->add_option("--db", db, "read this results database, no controller");
  report->add_option("-o,--output", report_path, "HTML file to write")->capture_default_str();

  auto* agents = app.add_subcommand("agents", "agents known to the controller");
  agents->add_flag("--json", json, "one JSON object per agent");

  auto* cancel = app.add_subcommand("cancel", "cancel an experiment (its antagonists are stopped)");
  cancel->add_option("id", id, "experiment id or 'latest'")->default_val("latest");

  std::string injector, agent_id, duration = "5s";
  std::vector<std::string> sets;
  auto* calibrate = app.add_subcommand(
      "calibrate", "measure an injector's peak on agents and refresh the cached calibration");
  calibrate->add_option("injector", injector, "injector name (see codl-inject --list)")->required();
  calibrate->add_option("--set", sets, "KEY=VALUE injector option (repeatable)");
  calibrate->add_option("--agent", agent_id, "agent id (default: every live agent)");
  calibrate->add_option("--duration", duration, "calibration length")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (token.empty() && getenv("CODL_TOKEN")) token = getenv("CODL_TOKEN");
  codl::rpc::SetBearerToken(token);

  if (*validate) return CmdValidate(file, plan);
  if (*run) return CmdRun(g, ro);
  if (*submit) return CmdSubmit(g, file, watch);
  if (*status) return CmdStatus(g, status_id.empty() && db.empty() ? "latest" : status_id, db);
  if (*watch_cmd) return CmdWatch(g, id);
  if (*results) return CmdResults(g, id, db, output);
  if (*report) {
    std::unique_ptr<ControllerClient> client;
    if (db.empty()) {
      std::string address = ConfiguredController(g.controller);
      auto c = ControllerClient::Connect(codl::rpc::Endpoint{address.empty() ? codl::kDefaultControllerAddress : address, g.tls});
      if (!c.ok()) {
        fprintf(stderr, "codlctl report: %s\n", c.error().c_str());
        return kExitBadInput;
      }
      client = std::move(c.value());
    }
    return WriteReport(client.get(), db, id, report_path);
  }
  if (*agents) return CmdAgents(g, json);
  if (*cancel) return CmdCancel(g, id);
  if (*calibrate) {
    std::map<std::string, std::string> options;
    for (const auto& kv : sets) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        fprintf(stderr, "codlctl calibrate: --set '%s': expected KEY=VALUE\n", kv.c_str());
        return kExitBadInput;
      }
      options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return CmdCalibrate(g, injector, options, agent_id, duration);
  }
  return kExitBadInput;
}
