// What the run-time loaders (lib/gpu: NCCL, cuBLAS; injectors/rdma/verbs: libibverbs) do: open the
// first library name that loads, and resolve symbols into typed function pointers, remembering the
// first one that is missing.
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace codl::dl {

// The handle of the first of `names` that dlopen accepts, or nullptr with dlerror()'s text
// in *error.
inline void* OpenFirst(std::initializer_list<const char*> names, std::string* error) {
  for (const char* name : names) {
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  const char* why = dlerror();
  *error = why ? why : "not found";
  return nullptr;
}

// Resolves `symbol` into *fn; names the first missing one in *missing.
template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  if (*fn == nullptr && missing->empty()) *missing = symbol;
}

}  // namespace codl::dl
