// The dataset codl-victim reads: N sample files of S bytes with seed-determined content, plus
// a small manifest so `run` knows the shape without listing the folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lib/common/result.h"

namespace codl::victim {

struct DatasetInfo {
  std::string dir;
  int64_t samples = 0;
  uint64_t sample_size = 0;
  uint64_t seed = 0;
};

inline constexpr const char* kManifestName = "codl-victim-dataset.txt";

std::string SamplePath(const std::string& dir, int64_t index);

// The bytes of sample `index` in a dataset generated with `seed` (first n bytes).
void FillSample(uint64_t seed, int64_t index, uint8_t* buf, size_t n);

// Called after each sample file is written, with the number written so far.
using SampleWritten = std::function<void(int64_t written)>;

// Writes (or rewrites) the dataset. The manifest is removed first and written last, so an
// interrupted generation never looks complete. Sample files left over from a larger previous
// dataset in the same folder are removed.
Status GenerateDataset(const DatasetInfo& info, const SampleWritten& on_sample = {});

// The manifest of `dir`, or nullopt when there is none.
Result<std::optional<DatasetInfo>> ReadManifest(const std::string& dir);

}  // namespace codl::victim
