// zlib (RFC 1950) compression for blobs CoDL keeps: a victim's profiler trace travels from the
// agent and is stored compressed (victim.trace). Its own library (codl_compress), so that
// codl-inject and codl-victim do not link zlib.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lib/common/result.h"

namespace codl {

// `data` compressed at zlib's default level.
Result<std::string> ZlibCompress(std::string_view data);
// The inverse; refuses (an error naming the cap) output larger than `max_bytes`, and input that
// is not one complete zlib stream.
Result<std::string> ZlibDecompress(std::string_view data, size_t max_bytes);

}  // namespace codl
