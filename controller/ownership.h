// Experiments belong to their submitter (docs/security.md, "Ownership"): the controller records
// who submitted each one; only that caller or an admin may change it (cancel, resume), and
// "latest" means the caller's own latest. Pure rules over the store, tested without gRPC.
#pragma once

#include <string>

#include "lib/common/records.h"
#include "lib/common/result.h"
#include "lib/store/store.h"

namespace codl::controller {

// The caller of an RPC as far as ownership goes.
struct Caller {
  std::string submitter;  // rpc::Identity::ToString(): "user-submit/alice", "admin/root"
  bool admin = false;
};

enum class Access { kRead, kChange };

// The experiment `id` names for `caller`. An id is itself. "latest" (or "") is the caller's
// newest submission; when the caller has none, reads get the newest of all (a user-read caller
// submits nothing), and so do admins, while another caller's change is refused (NotFound naming
// the caller): `codlctl cancel latest` never reaches someone else's experiment.
Result<std::string> ResolveExperimentFor(store::Store& store, const Caller& caller,
                                         const std::string& id, Access access);

// OK when `caller` may `action` ("cancel", "resume") experiment `e`: an admin, or its submitter
// (SameSubmitter). PERMISSION_DENIED naming the experiment, its submitter and the caller
// otherwise; an experiment whose submitter is unknown (stored before they were recorded) is an
// admin's only.
Status MayChange(const Caller& caller, const ExperimentRecord& e, const std::string& action);

}  // namespace codl::controller
