#include "injectors/core/registry.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "lib/common/suggest.h"

namespace codl::injectors {

// The registry: one line per injector, in --list order. X(name, factory): the factory
// `std::unique_ptr<Injector> Make<Name>Injector()` is defined in the injector's own file, which
// the build picks up by itself (injectors/CMakeLists.txt globs injectors/*.cc and
// injectors/*/*.cc). GPU injectors must compile without CUDA and report "built without CUDA"
// from Unsupported().
#define CODL_INJECTORS(X)                    \
  X("noop", MakeNoopInjector)                \
  X("memcpy", MakeMemcpyInjector)            \
  X("io_uring", MakeIoUringInjector)         \
  X("cuda_memcpy", MakeCudaMemcpyInjector)   \
  X("nccl", MakeNcclInjector)                \
  X("mps_cotenant", MakeMpsCotenantInjector) \
  X("cpu", MakeCpuInjector)                  \
  X("llc", MakeLlcInjector)                  \
  X("pagecache", MakePagecacheInjector)      \
  X("net", MakeNetInjector)                  \
  X("rdma", MakeRdmaInjector)                \
  /* add new injectors above this line */

#define CODL_DECLARE_FACTORY(name, factory) std::unique_ptr<Injector> factory();
CODL_INJECTORS(CODL_DECLARE_FACTORY)
#undef CODL_DECLARE_FACTORY

namespace {

struct Entry {
  const char* name;
  InjectorFactory factory;
};

#define CODL_ENTRY(name, factory) {name, factory},
const Entry kInjectors[] = {CODL_INJECTORS(CODL_ENTRY)};
#undef CODL_ENTRY

// One instance per injector, kept for its descriptor. Contracts checked once, on first use.
const std::vector<std::unique_ptr<Injector>>& Prototypes() {
  static const std::vector<std::unique_ptr<Injector>> prototypes = [] {
    std::vector<std::unique_ptr<Injector>> v;
    for (const Entry& e : kInjectors) {
      v.push_back(e.factory());
      const std::string problem = v.back()->descriptor().name == e.name
                                      ? CheckDescriptorContract(v.back()->descriptor()).message()
                                      : "registered as '" + std::string(e.name) + "' but named '" +
                                            v.back()->descriptor().name + "'";
      if (!problem.empty()) {
        std::fprintf(stderr, "codl: bug: injector '%s' breaks the contract: %s\n", e.name,
                     problem.c_str());
        std::abort();
      }
    }
    return v;
  }();
  return prototypes;
}

std::string KnownList() {
  std::string list;
  for (const Entry& e : kInjectors) list += (list.empty() ? "" : ", ") + std::string(e.name);
  return list;
}

}  // namespace

std::vector<std::string> InjectorNames() {
  std::vector<std::string> names;
  for (const Entry& e : kInjectors) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Injector> CreateInjector(const std::string& name) {
  Prototypes();  // contract check
  for (const Entry& e : kInjectors) {
    if (name == e.name) return e.factory();
  }
  return nullptr;
}

const Descriptor* FindDescriptor(const std::string& name) {
  for (const auto& p : Prototypes()) {
    if (p->descriptor().name == name) return &p->descriptor();
  }
  return nullptr;
}

Status ValidateInjectorName(const std::string& name) {
  if (FindDescriptor(name) != nullptr) return Status::Ok();
  return InvalidArgument("unknown injector '" + name + "'" + DidYouMean(name, InjectorNames()) +
                         " (known: " + KnownList() + ")");
}

Status ValidateOption(const std::string& injector, const std::string& key,
                      const std::string& value) {
  const Descriptor* d = FindDescriptor(injector);
  if (d == nullptr) return ValidateInjectorName(injector);
  for (const auto& spec : d->options) {
    if (spec.name == key) {
      auto parsed = ParseOptionValue(spec, value);
      return parsed.ok() ? Status::Ok() : InvalidArgument(parsed.error());
    }
  }
  // Same message as a full parse would give.
  auto parsed = ParseOptions(injector, d->options, {{key, value}});
  return parsed.ok() ? Status::Ok() : InvalidArgument(parsed.error());
}

Result<OptionValues> ParseInjectorOptions(const Injector& injector,
                                          const std::map<std::string, std::string>& given) {
  const Descriptor& d = injector.descriptor();
  // Whatever the table or the injector's own check finds is wrong with what the user gave.
  auto values = ParseOptions(d.name, d.options, given);
  if (!values.ok()) return InvalidArgument(values.error());
  if (Status s = injector.CheckOptions(*values); !s.ok()) return InvalidArgument(s.message());
  return values;
}

Status ValidateOptions(const std::string& injector,
                       const std::map<std::string, std::string>& given) {
  auto inj = CreateInjector(injector);
  if (!inj) return ValidateInjectorName(injector);
  auto values = ParseInjectorOptions(*inj, given);
  return values.ok() ? Status::Ok() : values.status();
}

HostInfo DetectHost(const std::vector<std::string>& scratch_roots) {
  HostInfo host;
  for (const auto& root : scratch_roots) {
    char buf[PATH_MAX];
    if (realpath(root.c_str(), buf) != nullptr) host.scratch_roots.emplace_back(buf);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  host.cpus = n > 0 ? static_cast<unsigned>(n) : 1;
  return host;
}

}  // namespace codl::injectors
