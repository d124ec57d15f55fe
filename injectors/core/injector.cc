#include "injectors/core/injector.h"

namespace codl::injectors {

Result<double> Injector::ToInjectorUnit(const Rate& rate) const {
  const std::string& unit = descriptor().unit;
  const bool bytes = rate.unit == RateUnit::kBytesPerSecond;
  if (bytes && unit == "bytes/s") return rate.value;
  if (!bytes && (unit == "IOPS" || unit == "ops/s")) return rate.value;
  return Err("injector '" + descriptor().name + "' measures " + unit + "; a rate in " +
             (bytes ? "bytes/s" : "IOPS") + " does not apply (give a bare number in " + unit + ")");
}

Result<RunSummary> Injector::Calibrate(double duration_s, const StopToken& stop,
                                       Reporter& reporter) {
  return Run(Target::Max(), stop.WithDeadline(duration_s), reporter);
}

}  // namespace codl::injectors
