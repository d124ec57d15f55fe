#include "injectors/gpu/gpu_host.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace codl::injectors::gpu {
namespace {

struct OpRow {
  NcclOp op;
  const char* name;
  const char* factor_text;  // as nccl-tests' doc/PERFORMANCE.md writes it
};

// One table drives parsing, names and the --help text, so they cannot drift apart.
constexpr OpRow kOps[] = {
    {NcclOp::kAllReduce, "allreduce", "2(n-1)/n"},
    {NcclOp::kAllGather, "allgather", "(n-1)/n"},
    {NcclOp::kReduceScatter, "reducescatter", "(n-1)/n"},
    {NcclOp::kAllToAll, "alltoall", "(n-1)/n"},
    {NcclOp::kBroadcast, "broadcast", "1"},
};

}  // namespace

const std::vector<std::string>& NcclOpNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const OpRow& r : kOps) v.emplace_back(r.name);
    return v;
  }();
  return names;
}

const char* NcclOpName(NcclOp op) {
  for (const OpRow& r : kOps) {
    if (r.op == op) return r.name;
  }
  return "?";
}

Result<NcclOp> ParseNcclOp(std::string_view name) {
  for (const OpRow& r : kOps) {
    if (name == r.name) return r.op;
  }
  std::string known;
  for (const OpRow& r : kOps) known += (known.empty() ? "" : ", ") + std::string(r.name);
  return Err("unknown NCCL op '" + std::string(name) + "' (known: " + known + ")");
}

double BusBwFactor(NcclOp op, int nranks) {
  if (nranks <= 1) return 1.0;  // CoDL's definition for one rank: busbw := algbw (see header)
  const double n = nranks;
  switch (op) {
    case NcclOp::kAllReduce: return 2.0 * (n - 1) / n;
    case NcclOp::kAllGather:
    case NcclOp::kReduceScatter:
    case NcclOp::kAllToAll: return (n - 1) / n;
    case NcclOp::kBroadcast: return 1.0;
  }
  return 1.0;
}

std::string BusBwFactorHelp() {
  std::string s;
  for (const OpRow& r : kOps)
    s += (s.empty() ? "" : ", ") + std::string(r.name) + " " + r.factor_text;
  return s + "; with 1 rank the factor is 1 (algbw)";
}

Result<NcclShape> NcclShapeFor(NcclOp op, uint64_t size_bytes, int nranks, size_t elem_bytes) {
  if (nranks < 1 || elem_bytes == 0) return Err("bad NCCL shape arguments");
  const size_t n = static_cast<size_t>(nranks);
  size_t count = static_cast<size_t>(size_bytes / elem_bytes);
  const bool partitioned =
      op == NcclOp::kAllGather || op == NcclOp::kReduceScatter || op == NcclOp::kAllToAll;
  if (partitioned) count -= count % n;
  if (count == 0) {
    return Err("option 'size': " + std::to_string(size_bytes) + " bytes is too small for " +
               NcclOpName(op) + " over " + std::to_string(nranks) + " rank(s) (needs at least " +
               std::to_string((partitioned ? n : 1) * elem_bytes) + " bytes)");
  }
  NcclShape s;
  s.alg_bytes = static_cast<uint64_t>(count) * elem_bytes;
  switch (op) {
    case NcclOp::kAllReduce:
    case NcclOp::kBroadcast: s.send_count = s.recv_count = s.chunk_count = count; break;
    case NcclOp::kAllGather:  // each rank contributes count/n, receives count
      s.send_count = s.chunk_count = count / n;
      s.recv_count = count;
      break;
    case NcclOp::kReduceScatter:  // each rank sends count, keeps its reduced count/n
      s.send_count = count;
      s.recv_count = s.chunk_count = count / n;
      break;
    case NcclOp::kAllToAll:  // count/n to every peer, count/n from every peer
      s.send_count = s.recv_count = count;
      s.chunk_count = count / n;
      break;
  }
  return s;
}

DutyCycle::DutyCycle(double duty, double period_s)
    : duty_(duty <= 0 ? 0 : duty), period_s_(period_s > 0 ? period_s : 0.1) {}

double DutyCycle::WaitAt(double t) const {
  if (duty_ >= 1) return 0;
  if (t < 0) return -t;
  const double phase = std::fmod(t, period_s_);
  const double on = duty_ * period_s_;
  return phase < on ? 0 : period_s_ - phase;
}

double DutyCycle::WindowEndAt(double t) const {
  if (duty_ >= 1) return std::numeric_limits<double>::infinity();
  if (t < 0) return t;
  const double phase = std::fmod(t, period_s_);
  const double on = duty_ * period_s_;
  return phase < on ? t - phase + on : t;
}

Status CheckDutyWindow(const DutyCycle& duty, double op_s) {
  if (duty.always_on() || op_s <= 0) return Status::Ok();
  const double on = duty.duty() * duty.period();
  constexpr double kMinOpsPerPeriod = 5;
  if (duty.period() < kMinOpsPerPeriod * op_s || on < op_s) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "option 'period': %.3g ms with duty %.3g is too short for operations of "
                  "%.3g ms (need period >= 5 operations and an on-window of at least one: "
                  "period >= %.3g ms); raise period or make each operation smaller",
                  duty.period() * 1e3, duty.duty(), op_s * 1e3,
                  std::max(kMinOpsPerPeriod * op_s, op_s / duty.duty()) * 1e3);
    return InvalidArgument(text);
  }
  return Status::Ok();
}

std::string NoDeviceReason(int code, std::string_view text) {
  return "no CUDA device: cudaGetDeviceCount returned " + std::to_string(code) + " (" +
         std::string(text) + ")";
}

std::string CudaVersionString(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace codl::injectors::gpu
