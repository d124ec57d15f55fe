// `codl-victim run`: sets up the dataset, devices, loaders and ranks from RunOptions, runs the
// training loop on every rank and prints the JSON lines (docs/victim.md has the schema).
#pragma once

#include <cstdio>

#include "victim/options.h"

namespace codl::victim {

// Returns the process exit status: 0 done, 1 runtime failure (I/O, device), 2 options that do
// not fit the dataset. Step lines go to `out` (flushed per line), diagnostics to stderr.
int RunVictim(const RunOptions& options, std::FILE* out);

}  // namespace codl::victim
