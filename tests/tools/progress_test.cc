// toolkit/progress.h when stderr is not a terminal (GoogleTest's capture is a file): no redraws,
// one plain final line.
#include "toolkit/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using locr::toolkit::ProgressBar;

TEST(ProgressBar, OffATerminalPrintsOnePlainLineAtTheEnd) {
  testing::internal::CaptureStderr();
  {
    ProgressBar bar("pages", true, /*bytes=*/false);
    for (int i = 1; i <= 40; ++i) bar.update(i, 40, i == 40 ? "done" : "");
  }  // the destructor finishes it
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;  // exactly one line
  EXPECT_EQ(out.rfind("pages [##############################] 100%  40/40  ", 0), 0u) << out;
  EXPECT_NE(out.find("s  done\n"), std::string::npos) << out;
}

TEST(ProgressBar, OffATerminalReportsTheLastStateEvenIfUnfinished) {
  testing::internal::CaptureStderr();
  {
    ProgressBar bar("model.safetensors", true);
    bar.update(500, 2000);
    bar.finish();
    bar.finish();  // once only
  }
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out.rfind("model.safetensors [#######.......................]  25%  500 B / 2.0 kB", 0), 0u) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
}

TEST(ProgressBar, DisabledOrNeverUpdatedPrintsNothing) {
  testing::internal::CaptureStderr();
  {
    ProgressBar off("x", false);
    off.update(1, 2);
    ProgressBar idle("y", true);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
