// How long the victim is likely to run, for `codlctl validate --plan`: from the latest earlier
// run of an experiment with the same name in a results database, when there is one.
#pragma once

#include <optional>
#include <string>

namespace codl::cli {

// The median wall time of the measured trials of the newest experiment named `name` in `db`;
// nullopt when the file does not exist (it is never created), cannot be read, or has none.
std::optional<double> PreviousVictimSeconds(const std::string& db, const std::string& name);

}  // namespace codl::cli
