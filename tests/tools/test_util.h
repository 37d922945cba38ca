// Helpers for the tool tests: a temporary directory and running the `locr` binary.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace locr::test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/locr_tools_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct RunResult {
  int status = -1;  // exit status
  std::string out;  // stdout (stderr goes to the test log)
};

// Runs a shell command line, capturing stdout.
inline RunResult run_cmd(const std::string& cmd) {
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The tiny synthetic model, made once per test process.
inline const std::string& tiny_model_dir() {
  static TempDir dir;
  static std::string path = [] {
    const std::string p = dir / "tiny";
    const std::string cmd = std::string(LOCR_BIN) + " make-model --preset tiny --seed 7 --quiet --out " + p + " >&2";
    if (std::system(cmd.c_str()) != 0) std::abort();
    return p;
  }();
  return path;
}

}  // namespace locr::test
