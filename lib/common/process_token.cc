#include "lib/common/process_token.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace codl {

namespace {

std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

std::string BootId() { return FirstLine("/proc/sys/kernel/random/boot_id"); }

}  // namespace

uint64_t ProcessStartTicks(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // Field 2 (the command name) is in parentheses and may hold spaces: count after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
  }
  char* end = nullptr;
  const unsigned long long ticks = std::strtoull(field.c_str(), &end, 10);
  return end != nullptr && *end == '\0' ? ticks : 0;
}

std::string ProcessTokenOf(long pid) {
  const uint64_t ticks = ProcessStartTicks(pid);
  if (ticks == 0) return "";
  return HostName() + " " + BootId() + " " + std::to_string(pid) + " " + std::to_string(ticks);
}

const std::string& ThisProcessToken() {
  static const std::string token = ProcessTokenOf(static_cast<long>(getpid()));
  return token;
}

bool ProcessTokenAlive(const std::string& token) {
  std::istringstream in(token);
  std::string host, boot, ticks;
  long pid = 0;
  if (!(in >> host >> boot >> pid >> ticks) || pid <= 0) return false;
  if (host != HostName() || boot != BootId()) return false;
  const uint64_t now = ProcessStartTicks(pid);
  return now != 0 && std::to_string(now) == ticks;
}

}  // namespace codl
