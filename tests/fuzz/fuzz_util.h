// Shared by the fuzz targets of tests/fuzz: the fixture directory and a check that aborts (so both
// libFuzzer and the replay runner of the normal build report the input that broke an invariant).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef LOCR_FIXTURES_DIR
#error "LOCR_FIXTURES_DIR must point at tests/fixtures"
#endif

namespace locr::fuzz {

inline std::string fixture(const std::string& rel) { return std::string(LOCR_FIXTURES_DIR) + "/" + rel; }

[[noreturn]] inline void violated(const char* what, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant violated: %s\n", file, line, what);
  std::abort();
}

}  // namespace locr::fuzz

#define LOCR_FUZZ_CHECK(cond) \
  do {                        \
    if (!(cond)) ::locr::fuzz::violated(#cond, __FILE__, __LINE__); \
  } while (0)
