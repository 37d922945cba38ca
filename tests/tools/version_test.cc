// `locr version`: the version, and whether the CUDA backend is built and usable, with the reason
// when it is not (what docs/gpu.md's environment stage records).
#include <gtest/gtest.h>

#include "test_util.h"

namespace locr::test {
namespace {

TEST(Version, SaysWhetherCudaIsBuiltAndUsable) {
  const auto r = run_cmd(std::string(LOCR_BIN) + " version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("locr ", 0), 0u) << r.out;
  const size_t at = r.out.find("\ncuda: ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at + 7, r.out.find('\n', at + 1) - at - 7);
  // One of: not built / built for ARCHS; not usable: WHY / built for ARCHS; usable: NAME (sm_XY), cuBLASLt FILE.
  const bool not_built = line.rfind("not built", 0) == 0;
  const bool unusable = line.find("; not usable: ") != std::string::npos && line.size() > 30;
  const bool usable = line.find("; usable: ") != std::string::npos && line.find("cuBLASLt ") != std::string::npos;
  EXPECT_TRUE(not_built || unusable || usable) << line;
}

}  // namespace
}  // namespace locr::test
