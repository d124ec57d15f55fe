// ProcessToken: a name for one running process that stays unique across PID reuse and reboots
// ("HOST BOOT_ID PID START_TICKS"), so that a database row can say which process owns it and a
// later process can tell whether that owner is still alive. Used by the store to mark an
// experiment left `running` by a killed `codlctl run` as interrupted, without touching one a
// second, live `codlctl run` on the same file is running.
#pragma once

#include <cstdint>
#include <string>

namespace codl {

// This process's token (computed once).
const std::string& ThisProcessToken();
// Another process's, read now from /proc ("" when it does not exist).
std::string ProcessTokenOf(long pid);
// Start time of a process (field 22 of /proc/PID/stat: clock ticks since boot), 0 if it does
// not exist. With the pid, it names the process across pid reuse.
uint64_t ProcessStartTicks(long pid);

// Whether the process `token` names is running now. A token from another host or another boot
// is not (SQLite's write-ahead log works only between processes of one host, so a live writer
// of the same file is always local); an empty or unreadable token is not either.
bool ProcessTokenAlive(const std::string& token);

}  // namespace codl
