// `locr draft-sim`: the text-layer drafter on a PDF written here against targets equal to its pages'
// text, in the three target forms (form-feed parts, a page-NNNN.md folder, one whole-document file),
// the JSON report, and usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tests/unit/pdf_writer.h"

namespace locr::test {
namespace {

const char* const kPage1 = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda.";
const char* const kPage2 = "One two three four five six seven eight nine ten eleven twelve.";

std::string write_pdf(const TempDir& dir) {
  const std::string res = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>";
  auto page = [&](const std::string& text) {
    return PdfPageSpec(612, 792, 0, "BT /F1 12 Tf 72 720 Td (" + text + ") Tj ET\n", res);
  };
  const std::string path = dir / "doc.pdf";
  std::ofstream(path, std::ios::binary) << make_pdf({page(kPage1), page(kPage2)});
  return path;
}

std::string cmd(const std::string& args) {
  return std::string(LOCR_BIN) + " draft-sim --model " + LOCR_FIXTURES_DIR + "/models/tiny_a " + args;
}

// A target equal to the corpus, K = 8, min match 2: steps 1 and 2 draft nothing (too little output),
// then each step drafts the next corpus tokens, 2, 4, then 8 (the back-off's start doubled by each
// hit), all accepted, and emits them and one more (the last one what is left).
void expect_exact_copy(const nlohmann::json& p) {
  const int64_t t = p["target_tokens"];
  ASSERT_GT(t, 2);
  int64_t steps = 2, emitted = 2, accepted = 0;
  for (int64_t len = 2; emitted < t; len = std::min<int64_t>(8, 2 * len), ++steps) {
    const int64_t d = std::min(len, t - emitted);
    accepted += d;
    emitted += std::min(d + 1, t - emitted);
  }
  EXPECT_EQ(p["steps"], steps) << p.dump();
  EXPECT_EQ(p["accepted"], accepted) << p.dump();
  EXPECT_EQ(p["accepted"], p["drafted"]);
  EXPECT_EQ(p["zero_accept_steps"], 0);
  EXPECT_EQ(p["corpus_tokens"], t);  // the extracted text tokenises to the target's tokens
}

TEST(DraftSimCommand, FormFeedTargetPerPage) {
  TempDir dir;
  const std::string pdf = write_pdf(dir);
  std::ofstream(dir / "t.md") << kPage1 << "\f" << kPage2 << "\f";
  const auto r = run_cmd(cmd("--pdf " + pdf + " --target " + (dir / "t.md") + " --k 8 --json " + (dir / "o.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("total"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_text(dir / "o.json"));
  ASSERT_EQ(j["pages"].size(), 2u);
  EXPECT_EQ(j["pages"][0]["page"], "1");
  EXPECT_EQ(j["pages"][1]["page"], "2");
  for (const auto& p : j["pages"]) expect_exact_copy(p);
  for (const char* key : {"steps", "target_tokens", "drafted", "accepted", "zero_accept_steps"})
    EXPECT_EQ(j["total"][key], j["pages"][0][key].get<int64_t>() + j["pages"][1][key].get<int64_t>()) << key;
  EXPECT_EQ(j["method"], "text-layer");

  // --pages 2 with a one-part target: page 2 alone.
  std::ofstream(dir / "p2.md") << kPage2;
  const auto r2 = run_cmd(cmd("--pdf " + pdf + " --pages 2 --target " + (dir / "p2.md") + " --json " + (dir / "o2.json")));
  ASSERT_EQ(r2.status, 0) << r2.out;
  const auto j2 = nlohmann::json::parse(read_text(dir / "o2.json"));
  ASSERT_EQ(j2["pages"].size(), 1u);
  EXPECT_EQ(j2["pages"][0]["page"], "2");
  expect_exact_copy(j2["pages"][0]);
}

TEST(DraftSimCommand, FolderOfPagesAndWholeDocument) {
  TempDir dir;
  const std::string pdf = write_pdf(dir);
  std::filesystem::create_directories(dir / "out");
  std::ofstream(dir / "out/page-0002.md") << kPage2;  // page 1 has no file: left out
  const auto r = run_cmd(cmd("--pdf " + pdf + " --target " + (dir / "out") + " --json " + (dir / "o.json")));
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(read_text(dir / "o.json"));
  ASSERT_EQ(j["pages"].size(), 1u);
  EXPECT_EQ(j["pages"][0]["page"], "2");
  expect_exact_copy(j["pages"][0]);

  // One part against two pages: one whole-document entry, its corpus both pages joined by "\n\n".
  std::ofstream(dir / "doc.md") << kPage1 << "\n\n" << kPage2;
  const auto w = run_cmd(cmd("--pdf " + pdf + " --target " + (dir / "doc.md") + " --json " + (dir / "w.json")));
  ASSERT_EQ(w.status, 0) << w.out;
  const auto jw = nlohmann::json::parse(read_text(dir / "w.json"));
  ASSERT_EQ(jw["pages"].size(), 1u);
  EXPECT_EQ(jw["pages"][0]["page"], "1-2");
  expect_exact_copy(jw["pages"][0]);
}

TEST(DraftSimCommand, UsageErrors) {
  TempDir dir;
  const std::string pdf = write_pdf(dir);
  std::ofstream(dir / "three.md") << "a\fb\fc";
  EXPECT_NE(run_cmd(cmd("--pdf " + pdf + " --target " + (dir / "three.md")) + " 2>/dev/null").status, 0);
  EXPECT_NE(run_cmd(cmd("--target " + (dir / "three.md")) + " 2>/dev/null").status, 0);  // text-layer needs --pdf
  EXPECT_NE(run_cmd(cmd("--pdf " + pdf + " --target " + (dir / "three.md") + " --k 0") + " 2>/dev/null").status, 0);
  // The n-gram drafter needs no PDF: one result per form-feed part.
  const auto n = run_cmd(cmd("--method ngram --target " + (dir / "three.md") + " --json " + (dir / "n.json")));
  ASSERT_EQ(n.status, 0) << n.out;
  EXPECT_EQ(nlohmann::json::parse(read_text(dir / "n.json"))["pages"].size(), 3u);
}

}  // namespace
}  // namespace locr::test
