// What an injector may ask of its host during Setup(). The host (codl-inject) owns stdout, which
// carries the protocol (protocol.h): an injector never prints, it asks here.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "injectors/core/protocol.h"
#include "lib/common/result.h"

namespace codl::injectors {

class HostServices {
 public:
  virtual ~HostServices() = default;

  // Rank 0 of a collective (Capabilities::collective): hands `value` (raw bytes) to the other
  // ranks. codl-inject writes a RendezvousPublish record under the injector's rendezvous_key
  // option; the agent relays it through the controller, and every other rank is started with
  // --set <rendezvous_option>=<hex> (protocol::RendezvousFetch). Fails for an injector that is
  // not collective or has no rendezvous_key.
  virtual Status PublishRendezvous(std::string_view value) = 0;

  // Variables the victims started while this injector runs need (an MPS pipe directory, ...).
  // Only for an injector declaring Capabilities::exports_victim_env; every name must pass
  // IsExportableEnvName (victim_env.h). The agent checks both again: it trusts no child.
  virtual Status ExportVictimEnv(const std::map<std::string, std::string>& env) = 0;

  // One line for the person or the log watching the run ("listening on 127.0.0.1:5201").
  virtual void Note(std::string_view text) = 0;

  // An MPS co-tenant's control daemon (protocol::MpsStatus), for people and logs.
  virtual void ReportMps(const protocol::MpsStatus& status) = 0;
};

// Keeps what was asked and prints nothing: for hosts other than codl-inject (tests, benches).
class CollectingHostServices final : public HostServices {
 public:
  Status PublishRendezvous(std::string_view value) override {
    published.emplace_back(value);
    return Status::Ok();
  }
  Status ExportVictimEnv(const std::map<std::string, std::string>& env) override {
    for (const auto& [k, v] : env) victim_env[k] = v;
    return Status::Ok();
  }
  void Note(std::string_view text) override { notes.emplace_back(text); }
  void ReportMps(const protocol::MpsStatus& status) override { mps.push_back(status); }

  std::vector<std::string> published;
  std::map<std::string, std::string> victim_env;
  std::vector<std::string> notes;
  std::vector<protocol::MpsStatus> mps;
};

}  // namespace codl::injectors
