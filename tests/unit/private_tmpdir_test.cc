// tests/common/private_tmpdir.cc: each runner writes under a folder of its own, gone at exit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

// Also leaves a file there and prints its path, for the test below (which runs this one alone in a
// child runner).
TEST(PrivateTmpdir, TheTempFolderIsTheRunnersOwn) {
  const fs::path t = fs::temp_directory_path();
  EXPECT_EQ(t.filename().string().rfind("locr-tests-", 0), 0u) << t;
  EXPECT_TRUE(fs::is_directory(t));
  const char* env = std::getenv("TMPDIR");
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(fs::path(env), t);
  const fs::path f = t / "left_behind.bin";
  std::ofstream(f) << "x";
  ASSERT_TRUE(fs::exists(f));
  std::printf("PROBE_FILE=%s\n", f.c_str());
}

TEST(PrivateTmpdir, RemovedWhenTheRunnerExits) {
  const std::string cmd = "/proc/" + std::to_string(::getpid()) +
                          "/exe --gtest_filter=PrivateTmpdir.TheTempFolderIsTheRunnersOwn 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ASSERT_EQ(::pclose(p), 0) << out;
  const auto at = out.find("PROBE_FILE=");
  ASSERT_NE(at, std::string::npos) << out;
  const fs::path f = out.substr(at + 11, out.find('\n', at) - at - 11);
  EXPECT_EQ(f.parent_path().parent_path(), fs::temp_directory_path()) << f;  // nested in ours
  EXPECT_FALSE(fs::exists(f)) << f;
  EXPECT_FALSE(fs::exists(f.parent_path())) << f.parent_path();
}
