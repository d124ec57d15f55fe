// Store: the GPUs of a trial's node telemetry (table trial_gpu_telemetry and the column
// trial_node_telemetry.gpu_note, schema version 16), a row per trial, node and GPU. A store
// older than the table saves and reads trials without them.
#include <algorithm>

#include "lib/store/sqlite_util.h"
#include "lib/store/store_internal.h"

namespace codl::store {

Status InsertGpuTelemetry(sql::Db db, int64_t trial_id, const TrialRecord& t,
                          const std::string& what) {
  if (t.node_telemetry.empty()) return Status::Ok();
  auto has = HasTable(db, "trial_gpu_telemetry", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  auto note = sql::Stmt::Prepare(
      db, "UPDATE trial_node_telemetry SET gpu_note = ?3 WHERE trial_id = ?1 AND seq = ?2");
  if (!note) return note.status();
  auto insert = sql::Stmt::Prepare(
      db,
      "INSERT INTO trial_gpu_telemetry (trial_id, seq, gpu_index, name, samples, util_mean, "
      "util_max, mem_util_mean, mem_used_max_bytes, mem_total_bytes, pcie_tx_bytes, "
      "pcie_rx_bytes, nvlink_tx_bytes, nvlink_rx_bytes, sm_clock_min_mhz, sm_clock_mean_mhz, "
      "mem_clock_min_mhz, mem_clock_mean_mhz, clock_reasons, notes) VALUES (?1, ?2, ?3, ?4, ?5, "
      "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
  if (!insert) return insert.status();
  for (size_t i = 0; i < t.node_telemetry.size(); ++i) {
    const NodeTelemetry& n = t.node_telemetry[i];
    if (!n.gpu_note.empty()) {
      note->BindInt(1, trial_id);
      note->BindInt(2, static_cast<int64_t>(i));
      note->BindText(3, n.gpu_note);
      if (Status s = note->Run(what); !s) return s;
    }
    for (const GpuTelemetry& g : n.gpus) {
      insert->BindInt(1, trial_id);
      insert->BindInt(2, static_cast<int64_t>(i));
      insert->BindInt(3, g.index);
      insert->BindText(4, g.name);
      insert->BindInt(5, g.samples);
      insert->BindReal(6, g.util_mean);
      insert->BindReal(7, g.util_max);
      insert->BindReal(8, g.mem_util_mean);
      insert->BindInt(9, g.mem_used_max_bytes);
      insert->BindInt(10, g.mem_total_bytes);
      insert->BindReal(11, g.pcie_tx_bytes);
      insert->BindReal(12, g.pcie_rx_bytes);
      insert->BindReal(13, g.nvlink_tx_bytes);
      insert->BindReal(14, g.nvlink_rx_bytes);
      insert->BindReal(15, g.sm_clock_min_mhz);
      insert->BindReal(16, g.sm_clock_mean_mhz);
      insert->BindReal(17, g.mem_clock_min_mhz);
      insert->BindReal(18, g.mem_clock_mean_mhz);
      insert->BindInt(19, g.clock_reasons);
      insert->BindText(20, g.notes);
      if (Status s = insert->Run(what); !s) return s;
    }
  }
  return Status::Ok();
}

Status LoadGpuTelemetry(sql::Db db, const std::string& experiment_id,
                        const std::unordered_map<int64_t, size_t>& trial_pos,
                        std::vector<TrialRecord>* trials, const std::string& what) {
  auto has = HasTable(db, "trial_gpu_telemetry", what);
  if (!has) return has.status();
  if (!*has) return Status::Ok();
  // The node a row belongs to: its trial's node_telemetry[seq] (LoadNodeTelemetry kept seq order).
  auto node_of = [&](int64_t trial_id, int64_t seq) -> NodeTelemetry* {
    auto it = trial_pos.find(trial_id);
    if (it == trial_pos.end()) return nullptr;
    auto& nodes = (*trials)[it->second].node_telemetry;
    if (seq < 0 || seq >= static_cast<int64_t>(nodes.size())) return nullptr;
    return &nodes[static_cast<size_t>(seq)];
  };
  auto notes = sql::Stmt::Prepare(
      db,
      "SELECT n.trial_id, n.seq, n.gpu_note FROM trial_node_telemetry n JOIN trials t ON t.id = "
      "n.trial_id WHERE t.experiment_id = ?1 AND n.gpu_note != ''");
  if (!notes) return notes.status();
  notes->BindText(1, experiment_id);
  while (true) {
    auto row = notes->Next(what);
    if (!row) return row.status();
    if (!*row) break;
    if (NodeTelemetry* n = node_of(notes->Int(0), notes->Int(1))) n->gpu_note = notes->Text(2);
  }
  auto rows = sql::Stmt::Prepare(
      db,
      "SELECT g.trial_id, g.seq, g.gpu_index, g.name, g.samples, g.util_mean, g.util_max, "
      "g.mem_util_mean, g.mem_used_max_bytes, g.mem_total_bytes, g.pcie_tx_bytes, "
      "g.pcie_rx_bytes, g.nvlink_tx_bytes, g.nvlink_rx_bytes, g.sm_clock_min_mhz, "
      "g.sm_clock_mean_mhz, g.mem_clock_min_mhz, g.mem_clock_mean_mhz, g.clock_reasons, g.notes "
      "FROM trial_gpu_telemetry g JOIN trials t ON t.id = g.trial_id "
      "WHERE t.experiment_id = ?1 ORDER BY t.idx, g.seq, g.gpu_index");
  if (!rows) return rows.status();
  rows->BindText(1, experiment_id);
  while (true) {
    auto row = rows->Next(what);
    if (!row) return row.status();
    if (!*row) return Status::Ok();
    const sql::Stmt& r = *rows;
    NodeTelemetry* n = node_of(r.Int(0), r.Int(1));
    if (n == nullptr) {
      rows->Reset();
      return Err(what + ": GPU telemetry of a trial or node that is not there");
    }
    GpuTelemetry g;
    g.index = static_cast<int>(std::clamp<int64_t>(r.Int(2), 0, INT32_MAX));
    g.name = r.Text(3);
    g.samples = static_cast<int>(std::clamp<int64_t>(r.Int(4), 0, INT32_MAX));
    g.util_mean = r.Real(5);
    g.util_max = r.Real(6);
    g.mem_util_mean = r.Real(7);
    g.mem_used_max_bytes = r.Int(8);
    g.mem_total_bytes = r.Int(9);
    g.pcie_tx_bytes = r.Real(10);
    g.pcie_rx_bytes = r.Real(11);
    g.nvlink_tx_bytes = r.Real(12);
    g.nvlink_rx_bytes = r.Real(13);
    g.sm_clock_min_mhz = r.Real(14);
    g.sm_clock_mean_mhz = r.Real(15);
    g.mem_clock_min_mhz = r.Real(16);
    g.mem_clock_mean_mhz = r.Real(17);
    g.clock_reasons = r.Int(18);
    g.notes = r.Text(19);
    n->gpus.push_back(std::move(g));
  }
}

}  // namespace codl::store
