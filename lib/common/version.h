// The CoDL version every binary prints for --version and every experiment records in its
// provenance. The text is fixed when CMake configures the build (lib/common/CMakeLists.txt):
// the project version, then `git describe --always --dirty` when the source is a git checkout
// with git available ("0.1.0+ae3beb7-dirty"), else "+unknown".
#pragma once

namespace codl {

const char* CodlVersion();

}  // namespace codl
