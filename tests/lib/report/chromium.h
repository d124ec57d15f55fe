// Headless Chromium for the browser tests: find it, run it once on a file with a fresh
// profile and a time limit, collect what it printed. Tests skip when it is not installed.
#pragma once

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace codl::report::testing {

inline std::string FindChromium() {
  if (const char* env = std::getenv("CODL_CHROMIUM"); env && access(env, X_OK) == 0) return env;
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string ReadWholeFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ChromiumRun {
  int rc = -1;
  std::string out;
  std::string err;
};

// One bounded run; `mode` is --screenshot=... or --dump-dom; scratch files go under `dir`.
inline ChromiumRun RunChromium(const std::string& chromium, const std::string& mode,
                               const std::filesystem::path& page, const std::filesystem::path& dir,
                               const std::string& tag) {
  const auto profile = dir / ("profile-" + tag);
  const auto out = dir / (tag + ".out"), err = dir / (tag + ".err");
  const std::string cmd =
      "timeout 120 " + ShellQuote(chromium) +
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
      " --disable-background-networking --disable-component-update --disable-sync"
      " --hide-scrollbars --user-data-dir=" +
      ShellQuote(profile.string()) + " --enable-logging=stderr --v=0 --window-size=1400,2400 " +
      mode + " " + ShellQuote("file://" + page.string()) + " > " + ShellQuote(out.string()) +
      " 2> " + ShellQuote(err.string()) + " < /dev/null";
  ChromiumRun r;
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadWholeFile(out);
  r.err = ReadWholeFile(err);
  return r;
}

}  // namespace codl::report::testing
