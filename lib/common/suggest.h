// "Did you mean …?" for a mistyped name: the closest candidate by edit distance, when it is
// close enough to be a likely typo rather than a different word.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace codl {

// Levenshtein distance (insert, delete, substitute; an adjacent swap counts 1, as typists make
// it), case-sensitive.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when its distance is at most max(1, |word| / 3) (so "reslts"
// finds "results" but "foo" finds nothing among "run"/"status"); "" when none is close or
// `word` is itself a candidate or shorter than 3 characters. Ties go to the first candidate.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

// " (did you mean 'X'?)" for the closest match, or "" — ready to append to an error message.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace codl
