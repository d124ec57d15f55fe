#include "controller/distributed_victim.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "lib/analysis/rank_summary.h"
#include "lib/rpc/records_proto.h"
#include "lib/rpc/rpc_util.h"

namespace codl::controller {
namespace {

using Reply = Result<v1::RunVictimReply>;

// Why a rank's run failed, with the last line of its stderr; "" when it did not fail.
std::string Failure(const Reply& r) {
  if (!r.ok()) return r.error();
  if (r->ok()) return "";
  // With the last line of its stderr: usually the reason it gives.
  return FailureWithStderr(
      r->error().empty() ? "exit status " + std::to_string(r->exit_code()) : r->error(),
      r->stderr_tail());
}

// A rank's record from its reply; rank 0's steps are left to the trial's record.
RankRecord RankOf(size_t i, const std::string& node, const v1::RunVictimReply& r) {
  RankRecord rank;
  rank.rank = static_cast<int>(i);
  rank.node = node;
  rank.exit_code = r.exit_code();
  rank.wall_s = r.wall_s();
  for (const auto& [k, v] : r.phase_medians()) rank.phase_medians[k] = v;
  for (const auto& s : r.steps()) rank.steps.push_back(rpc::FromProto(s));
  experiment::SummarizeRankSteps(rank.steps, &rank);
  if (i == 0) rank.steps.clear();
  return rank;
}

std::string RankName(const std::vector<VictimRank>& ranks, size_t i) {
  return "victim rank " + std::to_string(i) + " (node " + ranks[i].node + ")";
}

// The ranks' calls, each on its own thread, and the order in which they finish.
class Calls {
 public:
  Calls(const std::vector<VictimRank>& ranks, double deadline_s) : replies_(ranks.size()) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      threads_.emplace_back([this, &ranks, i, deadline_s] {
        Reply r = ranks[i].client ? ranks[i].client->RunVictim(ranks[i].request, deadline_s)
                                  : Reply(Err("agent is gone"));
        std::lock_guard<std::mutex> l(mu_);
        replies_[i].emplace(std::move(r));
        finished_.push_back(i);
        changed_.notify_all();
      });
    }
  }
  ~Calls() {
    for (auto& t : threads_) t.join();
  }
  // The next rank to finish (blocks until one does).
  size_t Next() {
    std::unique_lock<std::mutex> l(mu_);
    changed_.wait(l, [&] { return !finished_.empty(); });
    const size_t i = finished_.front();
    finished_.pop_front();
    return i;
  }
  bool Finished(size_t i) {
    std::lock_guard<std::mutex> l(mu_);
    return replies_[i].has_value();
  }
  Reply& reply(size_t i) { return *replies_[i]; }  // once Next() returned i

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::optional<Reply>> replies_;
  std::deque<size_t> finished_;
  std::vector<std::thread> threads_;  // last: joined before the rest goes
};

}  // namespace

Result<std::string> MasterAddress(const std::string& agent_id, const std::string& registered) {
  std::string host = registered;
  const size_t colon = registered.rfind(':');
  const bool bracketed = !host.empty() && host.front() == '[';
  if (bracketed) {
    const size_t close = host.find(']');
    host = close == std::string::npos ? "" : host.substr(1, close - 1);
  } else if (colon != std::string::npos && registered.find(':') == colon) {
    host = registered.substr(0, colon);  // host:port (a bare IPv6 address has more colons)
  }
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
    return Err("victim.distributed: rank 0's agent " + agent_id + " registered the address '" +
               registered +
               "', which the other ranks cannot dial as MASTER_ADDR; start it with "
               "--advertise HOST:PORT (its address on the network the ranks share)");
  }
  return host;
}

std::vector<VictimRank> VictimRanks(const v1::RunVictimRequest& base,
                                    const std::vector<std::string>& nodes,
                                    const std::vector<std::shared_ptr<AgentClient>>& clients,
                                    bool distributed, const std::string& master_addr,
                                    int master_port) {
  std::vector<VictimRank> ranks;
  const int world = static_cast<int>(nodes.size());
  for (int r = 0; r < world; ++r) {
    VictimRank v{nodes[static_cast<size_t>(r)], clients[static_cast<size_t>(r)], base};
    v.request.set_idempotency_key(rpc::NewIdempotencyKey());
    if (distributed) {
      auto& env = *v.request.mutable_victim()->mutable_env();
      for (const auto& [k, val] :
           experiment::DistributedEnvironment(r, world, master_addr, master_port)) {
        env[k] = val;
      }
    }
    ranks.push_back(std::move(v));
  }
  return ranks;
}

Result<VictimRun> RunVictimRanks(std::vector<VictimRank> ranks, double deadline_s) {
  if (ranks.size() == 1) {
    if (!ranks[0].client) return Err("victim agent is gone");
    CODL_ASSIGN_OR_RETURN(v1::RunVictimReply reply,
                          ranks[0].client->RunVictim(ranks[0].request, deadline_s));
    return VictimRun{std::move(reply), {}, {}};
  }
  Calls calls(ranks, deadline_s);
  std::optional<size_t> failed;
  for (size_t left = ranks.size(); left > 0; --left) {
    const size_t i = calls.Next();
    if (failed || Failure(calls.reply(i)).empty()) continue;
    failed = i;
    // The others would wait on the failed rank until their timeout: stop them now.
    const std::string why = RankName(ranks, i) + " failed";
    for (size_t j = 0; j < ranks.size(); ++j) {
      if (j != i && ranks[j].client && !calls.Finished(j)) (void)ranks[j].client->StopAll(why);
    }
  }
  Reply& zero = calls.reply(0);
  std::vector<RankRecord> records;
  std::vector<NodeTelemetry> telemetry;
  std::set<std::string> measured = {ranks[0].node};
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (!calls.reply(i).ok()) continue;
    records.push_back(RankOf(i, ranks[i].node, *calls.reply(i)));
    if (calls.reply(i)->has_telemetry() && measured.insert(ranks[i].node).second) {
      telemetry.push_back(rpc::FromProto(calls.reply(i)->telemetry()));
      telemetry.back().node = ranks[i].node;
    }
  }
  if (!failed) return VictimRun{std::move(*zero), std::move(records), std::move(telemetry)};
  const size_t f = *failed;
  const std::string error = RankName(ranks, f) + " failed: " + Failure(calls.reply(f)) +
                            " (the other ranks were stopped)";
  if (!zero.ok()) return Err(error);
  v1::RunVictimReply r = std::move(*zero);
  r.set_ok(false);
  r.set_error(error);
  if (const Reply& bad = calls.reply(f); f != 0 && bad.ok()) {
    r.set_exit_code(bad->exit_code());
    r.set_stderr_tail(bad->stderr_tail());
  }
  return VictimRun{std::move(r), std::move(records), std::move(telemetry)};
}

}  // namespace codl::controller
