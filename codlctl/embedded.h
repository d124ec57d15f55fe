// EmbeddedCluster: what `codlctl run` starts when no controller is configured — a controller
// and one local agent inside the codlctl process, talking real gRPC over private Unix sockets
// in a fresh temporary directory. Results go to the given database (codl-results.db).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/common/result.h"

namespace codl::controller {
class Controller;
}
namespace codl::agent {
class Agent;
}

namespace codl::cli {

class EmbeddedCluster {
 public:
  EmbeddedCluster();
  ~EmbeddedCluster();
  Status Start(const std::string& db_path, double lease_s,
               const std::vector<std::string>& scratch_roots);
  void Shutdown();
  const std::string& controller_address() const { return controller_address_; }

 private:
  std::string dir_;
  std::string controller_address_;
  std::unique_ptr<controller::Controller> controller_;
  std::unique_ptr<agent::Agent> agent_;
};

}  // namespace codl::cli
