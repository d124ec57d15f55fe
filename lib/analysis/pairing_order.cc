#include "lib/analysis/pairing_order.h"

#include <algorithm>
#include <tuple>

#include "lib/common/units.h"

namespace codl::experiment {
namespace {

// An intensity as a sort key: levels (plain numbers) ascending, then rates ascending, then
// `max`, then anything else by its text.
struct IntensityKey {
  int kind = 3;
  double value = 0;
  std::string text;
  auto Tie() const { return std::tie(kind, value, text); }
};

IntensityKey KeyOf(const AntagonistSummary& a) {
  if (a.max || a.intensity == "max") return {2, 0, a.intensity};
  if (auto n = ParseNumber(a.intensity); n.ok()) return {0, *n, a.intensity};
  if (auto r = ParseRate(a.intensity); r.ok()) return {1, r->value, a.intensity};
  return {3, 0, a.intensity};
}

// The antagonists of a pairing as (name, intensity) keys, in the summary's (name) order.
std::vector<std::pair<std::string, IntensityKey>> Keys(const PairingSummary& p) {
  std::vector<std::pair<std::string, IntensityKey>> keys;
  for (const auto& a : p.antagonists) keys.push_back({a.name, KeyOf(a)});
  return keys;
}

}  // namespace

bool PairingBefore(const PairingSummary& a, const PairingSummary& b) {
  if (a.baseline != b.baseline) return a.baseline;
  // Singles before combinations, and pairs before triples.
  if (a.antagonists.size() != b.antagonists.size()) {
    return a.antagonists.size() < b.antagonists.size();
  }
  const auto ka = Keys(a), kb = Keys(b);
  for (size_t i = 0; i < ka.size(); ++i) {  // names first, so one antagonist's levels group
    if (ka[i].first != kb[i].first) return ka[i].first < kb[i].first;
  }
  for (size_t i = 0; i < ka.size(); ++i) {
    if (ka[i].second.Tie() != kb[i].second.Tie()) return ka[i].second.Tie() < kb[i].second.Tie();
  }
  return a.pairing < b.pairing;
}

std::vector<const PairingSummary*> SortedPairings(const ExperimentResults& results) {
  std::vector<const PairingSummary*> sorted;
  for (const auto& p : results.pairings) sorted.push_back(&p);
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const PairingSummary* a, const PairingSummary* b) { return PairingBefore(*a, *b); });
  return sorted;
}

}  // namespace codl::experiment
