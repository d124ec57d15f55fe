#include "lib/report/interaction_section.h"

#include <algorithm>
#include <map>
#include <vector>

#include "lib/analysis/pairing_samples.h"
#include "lib/report/svg.h"

namespace codl::report {
namespace {

using experiment::InteractionSummary;
using experiment::InteractionVerdict;

std::string Cell(const InteractionSummary& s) {
  if (!s.missing_singles.empty()) {
    std::string missing;
    for (const auto& m : s.missing_singles) missing += (missing.empty() ? "" : ", ") + m;
    return "<td class=\"missing\">no measured trials of its singles <code>" + Escape(missing) +
           "</code></td>";
  }
  const std::string flag = s.verdict == InteractionVerdict::kNone
                               ? (s.ci_small_n ? "CI n/a (n &lt; 3)" : "no interaction shown")
                               : "<strong>" + Escape(ToString(s.verdict)) + "</strong>";
  return std::string("<td") +
         (s.verdict == InteractionVerdict::kNone ? "" : " class=\"interaction-flagged\"") +
         " data-pairing=\"" + Escape(s.pairing) + "\">measured " + Escape(Slowdown(s.slowdown)) +
         "<br>&times;-pred " + Escape(Slowdown(s.multiplicative)) + "<br>+-pred " +
         Escape(Slowdown(s.additive)) + "<br>ratio " + Escape(Fixed(s.ratio, 3)) +
         (s.ci_small_n
              ? ""
              : " <span class=\"sub\">" + Escape(CiLabel(s.ci_low, s.ci_high)) + "</span>") +
         "<br>" + flag + " <span class=\"sub\">n=" + std::to_string(s.n) + "</span></td>";
}

// Labels in first-seen order.
void AddOnce(std::vector<std::string>* v, const std::string& x) {
  if (std::find(v->begin(), v->end(), x) == v->end()) v->push_back(x);
}

struct PairMatrix {
  std::string a, b;
  std::vector<std::string> rows, columns;
  std::map<std::pair<std::string, std::string>, const InteractionSummary*> cells;
};

std::string RenderMatrix(const PairMatrix& m) {
  std::string t = "<table class=\"interaction\">\n<caption><code>" + Escape(m.a) +
                  "</code> &times; <code>" + Escape(m.b) + "</code></caption>\n<thead><tr><th>" +
                  Escape(m.a) + " \\ " + Escape(m.b) + "</th>";
  for (const auto& c : m.columns) t += "<th>" + Escape(c) + "</th>";
  t += "</tr></thead>\n<tbody>\n";
  for (const auto& r : m.rows) {
    t += "<tr><th>" + Escape(r) + "</th>";
    for (const auto& c : m.columns) {
      const auto it = m.cells.find({r, c});
      t += it == m.cells.end() ? "<td>" + std::string(kMissing) + "</td>" : Cell(*it->second);
    }
    t += "</tr>\n";
  }
  return t + "</tbody>\n</table>\n";
}

}  // namespace

std::string RenderInteractions(const experiment::ExperimentResults& results) {
  std::vector<PairMatrix> matrices;
  std::vector<const InteractionSummary*> larger;
  for (const auto& s : results.interactions) {
    const auto parts = experiment::ParsePairingKey(s.pairing);
    if (parts.size() != 2) {
      larger.push_back(&s);
      continue;
    }
    const auto& [a, a_label] = *parts.begin();
    const auto& [b, b_label] = *std::next(parts.begin());
    // (Captured by name: clang 14 cannot capture structured bindings.)
    auto m = std::find_if(matrices.begin(), matrices.end(),
                          [&a = a, &b = b](const PairMatrix& x) { return x.a == a && x.b == b; });
    if (m == matrices.end()) m = matrices.insert(matrices.end(), PairMatrix{a, b, {}, {}, {}});
    AddOnce(&m->rows, a_label);
    AddOnce(&m->columns, b_label);
    m->cells[{a_label, b_label}] = &s;
  }
  std::string html;
  for (const auto& m : matrices) html += RenderMatrix(m);
  if (!larger.empty()) {
    html +=
        "<table class=\"interaction\">\n<thead><tr><th>combination</th><th>figures</th></tr>"
        "</thead>\n<tbody>\n";
    for (const auto* s : larger) {
      html += "<tr><td><code>" + Escape(s->pairing) + "</code></td>" + Cell(*s) + "</tr>\n";
    }
    html += "</tbody>\n</table>\n";
  }
  return html;
}

}  // namespace codl::report
