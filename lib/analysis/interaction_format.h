// Renderings of the interaction figures for results_format.cc (table lines) and results_json.cc
// (JSON array). The names are a public interface, documented in docs/results.md ("Interaction").
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/analysis/interaction.h"

namespace codl::experiment {

// The table's interaction section; "" when the experiment has no combinations.
std::string FormatInteractionTable(const std::vector<InteractionSummary>& interactions,
                                   double confidence);
// The JSON field `interactions`: one object per combination.
nlohmann::ordered_json InteractionsJson(const std::vector<InteractionSummary>& interactions);

}  // namespace codl::experiment
