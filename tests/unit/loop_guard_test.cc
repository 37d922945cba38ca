#include <gtest/gtest.h>

#include "../common/fixtures.h"
#include "runtime/loop_guard.h"

namespace locr::runtime {
namespace {

int fire_index(const std::vector<int32_t>& ids, const LoopGuardConfig& cfg = {}) {
  LoopGuard g(cfg);
  for (size_t i = 0; i < ids.size(); ++i)
    if (g.push(ids[i])) return static_cast<int>(i);
  return -1;
}

TEST(LoopGuard, FiresOnASingleTokenRun) {
  std::vector<int32_t> ids = {5, 6, 7};
  ids.insert(ids.end(), 1000, 9);
  const int at = fire_index(ids);
  EXPECT_EQ(at, 512 - 1);  // as soon as a full window has been generated
}

TEST(LoopGuard, FiresOnACycledPhrase) {
  std::vector<int32_t> unit = {10, 11, 12, 13, 14, 15, 16};
  std::vector<int32_t> ids = {1, 2, 3};
  for (int i = 0; i < 150; ++i) ids.insert(ids.end(), unit.begin(), unit.end());
  LoopGuard g;
  int fired = -1;
  for (size_t i = 0; i < ids.size() && fired < 0; ++i)
    if (g.push(ids[i])) fired = static_cast<int>(i);
  ASSERT_GE(fired, 0);
  EXPECT_EQ(fired, 511);
  EXPECT_LE(g.distinct(), 10);  // the 7 rotations of the unit, plus 3 n-grams reaching into the prefix
}

TEST(LoopGuard, FiresOnANearlyPeriodicLoopWithGlitches) {
  // "ororor...Q...ororor": a two-token cycle broken every 37 tokens.
  std::vector<int32_t> ids;
  for (int i = 0; i < 2000; ++i) ids.push_back(i % 37 == 36 ? 99 : (i % 2 ? 4 : 5));
  EXPECT_GT(fire_index(ids), 0);
}

TEST(LoopGuard, LongVariedTextDoesNotFire) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 5000; ++i) ids.push_back(static_cast<int32_t>((i * 7919) % 1000));
  EXPECT_EQ(fire_index(ids), -1);
}

TEST(LoopGuard, DisabledNeverFires) {
  LoopGuardConfig c;
  c.enabled = false;
  EXPECT_EQ(fire_index(std::vector<int32_t>(1000, 3), c), -1);
}

// The real Qwen vocabulary, so token counts per row are what the model produces.
std::vector<int32_t> encode(const std::string& text) { return test::qwen_tokenizer().encode(text); }

TEST(LoopGuard, LegitimateTablesOfRepeatedStructureDoNotFire) {
  std::string invoice = "| # | Item | Qty | Price |\n|---|---|---|---|\n";
  for (int i = 1; i <= 200; ++i)
    invoice += "| " + std::to_string(i) + " | Item " + std::to_string(i % 7) + " | 1 | " + std::to_string(i * 3) + ".00 |\n";
  EXPECT_EQ(fire_index(encode(invoice)), -1) << "200-row invoice table";

  std::string form = "<table><tr><th>Name</th><th>Date</th><th>Signature</th></tr>";
  for (int i = 0; i < 30; ++i) form += "<tr><td></td><td></td><td></td></tr>";
  form += "</table>";
  EXPECT_EQ(fire_index(encode(form)), -1) << "blank form rows";

  std::string toc;
  for (int i = 1; i <= 80; ++i) toc += "Chapter " + std::to_string(i) + " " + std::string(40, '.') + " " + std::to_string(i * 7) + "\n";
  EXPECT_EQ(fire_index(encode(toc)), -1) << "table of contents with dotted leaders";

  std::string wide = "|";
  for (int i = 0; i < 40; ++i) wide += " H" + std::to_string(i) + " |";
  wide += "\n|";
  for (int i = 0; i < 40; ++i) wide += "---|";
  EXPECT_EQ(fire_index(encode(wide + "\n")), -1) << "a 40-column separator row";
}

TEST(LoopGuard, ARowRepeatedVerbatimFires) {
  std::string loop = "| # | Item |\n|---|---|\n";
  for (int i = 0; i < 150; ++i) loop += "| 12 | Total amount due |\n";
  EXPECT_GT(fire_index(encode(loop)), 0);
}

}  // namespace
}  // namespace locr::runtime
