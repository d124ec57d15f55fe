#include "controller/ownership.h"

#include "lib/common/utf8.h"

namespace codl::controller {

Result<std::string> ResolveExperimentFor(store::Store& store, const Caller& caller,
                                         const std::string& id, Access access) {
  if (!id.empty() && id != "latest") return id;
  auto own = store.LatestExperimentOf(caller.submitter);
  if (!own.ok()) return own.status();
  if (*own) return **own;
  if (access == Access::kRead || caller.admin) return std::string("latest");
  return NotFound(caller.submitter + " has submitted no experiment, so 'latest' names none; " +
                  "give the experiment's id");
}

Status MayChange(const Caller& caller, const ExperimentRecord& e, const std::string& action) {
  if (caller.admin || SameSubmitter(caller.submitter, e.submitter)) return Status::Ok();
  return PermissionDenied(caller.submitter + " may not " + action + " experiment " + e.id + ": " +
                          (e.submitter.empty()
                               ? std::string("its submitter is unknown (it was stored before "
                                             "submitters were recorded), so only an admin may")
                               : "it was submitted by " + TerminalSafe(e.submitter) +
                                     "; only its submitter or an admin may"));
}

}  // namespace codl::controller
