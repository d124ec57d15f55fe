// Reading a whole small file (a /proc or /sys entry, a config file) into a string, written once.
// Bounded: a path that names something huge (a device, a sparse file) cannot make the caller
// allocate more than `max_bytes`; one swapped for a FIFO or a terminal cannot block or become the
// caller's (O_NONBLOCK | O_NOCTTY).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace codl {

inline constexpr size_t kDefaultReadFileMax = 16u << 20;

// The file's bytes, or nullopt when it cannot be opened or read (errno says why; EFBIG: it holds
// more than `max_bytes`). Every whole-file read of CoDL goes through here: a config, token or
// experiment path naming /dev/zero or a FIFO fails instead of filling memory or blocking.
std::optional<std::string> ReadFileText(const std::string& path,
                                        size_t max_bytes = kDefaultReadFileMax);

}  // namespace codl
