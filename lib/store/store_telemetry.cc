// Store: a trial's node telemetry (table trial_node_telemetry, schema version 15), one row per
// node; the disks and interfaces as JSON arrays. A store older than the table has none.
#include <exception>
#include <nlohmann/json.hpp>

#include "lib/store/sqlite_util.h"
#include "lib/store/store_internal.h"

namespace codl::store {
namespace {

std::string EncodeTelemetryDisks(const NodeTelemetry& n) {
  nlohmann::json a = nlohmann::json::array();
  for (const DiskTelemetry& d : n.disks) {
    a.push_back({{"device", d.device},
                 {"read_bytes", d.read_bytes},
                 {"write_bytes", d.write_bytes},
                 {"reads", d.reads},
                 {"writes", d.writes}});
  }
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string EncodeTelemetryNics(const NodeTelemetry& n) {
  nlohmann::json a = nlohmann::json::array();
  for (const NicTelemetry& c : n.nics)
    a.push_back({{"interface", c.interface}, {"rx_bytes", c.rx_bytes}, {"tx_bytes", c.tx_bytes}});
  return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A counter from a stored object; 0 when absent or not a whole number >= 0.
int64_t TelemetryCount(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer()) return 0;
  const int64_t v = it->get<int64_t>();
  return v < 0 ? 0 : v;
}

std::string TelemetryText(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Entries that are not objects are skipped: a damaged row loses detail, never the trial.
template <class F>
void ForEachTelemetryEntry(const std::string& text, F&& on_entry) {
  try {
    nlohmann::json a = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!a.is_array()) return;
    for (const auto& o : a) {
      if (o.is_object()) on_entry(o);
    }
  } catch (const std::exception&) {
  }
}

}  // namespace

Status InsertNodeTelemetry(sql::Db db, int64_t trial_id, const TrialRecord& t,
                           const std::string& what) {
  if (t.node_telemetry.empty()) return Status::Ok();
  auto has = HasTable(db, "trial_node_telemetry", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto insert = sql::Stmt::Prepare(
      db,
      "INSERT INTO trial_node_telemetry (trial_id, seq, node, window_s, psi_cpu_some, "
      "psi_cpu_full, psi_io_some, psi_io_full, psi_memory_some, psi_memory_full, disks, nics, "
      "mem_available_start_bytes, mem_available_end_bytes, mem_available_min_bytes, "
      "cached_start_bytes, cached_end_bytes, membw_bytes, membw_note, notes) VALUES (?1, ?2, ?3, "
      "?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
  if (!insert) return insert.status();
  for (size_t i = 0; i < t.node_telemetry.size(); ++i) {
    const NodeTelemetry& n = t.node_telemetry[i];
    insert->BindInt(1, trial_id);
    insert->BindInt(2, static_cast<int64_t>(i));
    insert->BindText(3, n.node);
    insert->BindReal(4, n.window_s);
    insert->BindReal(5, n.psi_cpu_some);
    insert->BindReal(6, n.psi_cpu_full);
    insert->BindReal(7, n.psi_io_some);
    insert->BindReal(8, n.psi_io_full);
    insert->BindReal(9, n.psi_memory_some);
    insert->BindReal(10, n.psi_memory_full);
    insert->BindText(11, EncodeTelemetryDisks(n));
    insert->BindText(12, EncodeTelemetryNics(n));
    insert->BindInt(13, n.mem_available_start_bytes);
    insert->BindInt(14, n.mem_available_end_bytes);
    insert->BindInt(15, n.mem_available_min_bytes);
    insert->BindInt(16, n.cached_start_bytes);
    insert->BindInt(17, n.cached_end_bytes);
    insert->BindReal(18, n.membw_bytes);
    insert->BindText(19, n.membw_note);
    insert->BindText(20, n.notes);
    if (Status s = insert->Run(what); !s) return s;
  }
  return Status::Ok();
}

Status LoadNodeTelemetry(sql::Db db, const std::string& experiment_id,
                         const std::unordered_map<int64_t, size_t>& trial_pos,
                         std::vector<TrialRecord>* trials, const std::string& what) {
  auto has = HasTable(db, "trial_node_telemetry", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto rows = sql::Stmt::Prepare(
      db,
      "SELECT n.trial_id, n.node, n.window_s, n.psi_cpu_some, n.psi_cpu_full, n.psi_io_some, "
      "n.psi_io_full, n.psi_memory_some, n.psi_memory_full, n.disks, n.nics, "
      "n.mem_available_start_bytes, n.mem_available_end_bytes, n.mem_available_min_bytes, "
      "n.cached_start_bytes, n.cached_end_bytes, n.membw_bytes, n.membw_note, n.notes "
      "FROM trial_node_telemetry n JOIN trials t ON t.id = n.trial_id "
      "WHERE t.experiment_id = ?1 ORDER BY t.idx, n.seq");
  if (!rows) return rows.status();
  rows->BindText(1, experiment_id);
  while (true) {
    auto row = rows->Next(what);
    if (!row) return row.status();
    if (!*row) return Status::Ok();
    const sql::Stmt& r = *rows;
    auto it = trial_pos.find(r.Int(0));
    if (it == trial_pos.end()) {
      rows->Reset();
      return Err(what + ": node telemetry of a trial that is not there");
    }
    NodeTelemetry n;
    n.node = r.Text(1);
    n.window_s = r.Real(2);
    n.psi_cpu_some = r.Real(3);
    n.psi_cpu_full = r.Real(4);
    n.psi_io_some = r.Real(5);
    n.psi_io_full = r.Real(6);
    n.psi_memory_some = r.Real(7);
    n.psi_memory_full = r.Real(8);
    ForEachTelemetryEntry(r.Text(9), [&](const nlohmann::json& o) {
      n.disks.push_back({TelemetryText(o, "device"), TelemetryCount(o, "read_bytes"),
                         TelemetryCount(o, "write_bytes"), TelemetryCount(o, "reads"),
                         TelemetryCount(o, "writes")});
    });
    ForEachTelemetryEntry(r.Text(10), [&](const nlohmann::json& o) {
      n.nics.push_back({TelemetryText(o, "interface"), TelemetryCount(o, "rx_bytes"),
                        TelemetryCount(o, "tx_bytes")});
    });
    n.mem_available_start_bytes = r.Int(11);
    n.mem_available_end_bytes = r.Int(12);
    n.mem_available_min_bytes = r.Int(13);
    n.cached_start_bytes = r.Int(14);
    n.cached_end_bytes = r.Int(15);
    n.membw_bytes = r.Real(16);
    n.membw_note = r.Text(17);
    n.notes = r.Text(18);
    (*trials)[it->second].node_telemetry.push_back(std::move(n));
  }
}

}  // namespace codl::store
