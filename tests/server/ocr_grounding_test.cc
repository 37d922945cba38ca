// The grounding parser (server/ocr_grounding.h) on hand-written LightOnOCR-3 outputs: the example
// of LightOn's README, multi-line blocks, continuations, and broken markers.
#include <gtest/gtest.h>

#include "server/ocr_grounding.h"

namespace locr::server {
namespace {

// The grounding example of LightOn's client README (lightonai/LightOnOCR), abridged.
const char* kReadmePage =
    "![image](309,90,691,516) Model architecture diagram showing NaViT, Projection, Embedding\n"
    "![caption](400,555,591,566) Figure 1: Model architecture.\n"
    "![title](113,608,263,623) ## 2.2 LightOnOCR-1\n"
    "![text](112,640,882,698) The first version of LightOnOCR [13], established the core architecture\n"
    "![page_number](491,935,505,950) 3\n";

TEST(OcrGrounding, ParsesEveryBlockWithItsLabelBoxAndText) {
  const auto b = parse_grounding(kReadmePage);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].label, "image");
  EXPECT_TRUE(b[0].has_box);
  EXPECT_EQ(b[0].x1, 309);
  EXPECT_EQ(b[0].y1, 90);
  EXPECT_EQ(b[0].x2, 691);
  EXPECT_EQ(b[0].y2, 516);
  EXPECT_EQ(b[0].text, "Model architecture diagram showing NaViT, Projection, Embedding");
  EXPECT_EQ(b[2].label, "title");
  EXPECT_EQ(b[2].text, "## 2.2 LightOnOCR-1");
  EXPECT_EQ(b[4].label, "page_number");
  EXPECT_EQ(b[4].text, "3");
  EXPECT_FALSE(b[3].continues);
}

TEST(OcrGrounding, ABlockOwnsTheLinesUpToTheNextMarker) {
  const auto b = parse_grounding(
      "![table](100,200,900,400)\n<table>\n<tr><td>a</td></tr>\n</table>\n\n![list]( 10 , 20 , 30 , 40 )\n- one\n- two\n");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].text, "<table>\n<tr><td>a</td></tr>\n</table>");
  EXPECT_EQ(b[1].label, "list");
  EXPECT_EQ(b[1].x1, 10);
  EXPECT_EQ(b[1].y2, 40);
  EXPECT_EQ(b[1].text, "- one\n- two");
}

TEST(OcrGrounding, ContinuationsJoinTheKeptBlockBefore) {
  const auto b = parse_grounding(
      "![header](0,0,1000,30) Journal of Things\n"
      "![text](50,100,480,900) The first column ends here\n"
      "![text+](520,100,950,900) and the paragraph goes on.\n"
      "![footer](0,960,1000,1000) Page 3 of 9\n"
      "![text+](50,50,60,60) after a dropped footer: its own paragraph\n");
  ASSERT_EQ(b.size(), 5u);
  EXPECT_TRUE(b[2].continues);
  EXPECT_EQ(b[2].label, "text");
  EXPECT_EQ(grounding_markdown(b, {}),
            "Journal of Things\n\nThe first column ends here and the paragraph goes on.\n\nPage 3 of 9 "
            "after a dropped footer: its own paragraph");
  EXPECT_EQ(grounding_markdown(b, header_footer_labels()),
            "The first column ends here and the paragraph goes on.\n\nafter a dropped footer: its own paragraph");
}

TEST(OcrGrounding, BrokenMarkersStayTextAndBoxesAreClampedAndOrdered) {
  const auto b = parse_grounding(
      "stray words first\n"
      "![text](1,2,3) three numbers is no marker\n"
      "![text](a,b,c,d) nor letters ![](1,2,3,4) nor no label ![9x](1,2,3,4) nor a digit first\n"
      "![text](1234567,2,3,4) nor seven digits\n"
      "![section](900,800,100,1200) swapped and past the page\n"
      "![image](5,5,6,6");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].label, "text");
  EXPECT_FALSE(b[0].has_box);
  EXPECT_EQ(b[0].text,
            "stray words first\n![text](1,2,3) three numbers is no marker\n![text](a,b,c,d) nor letters ![](1,2,3,4) "
            "nor no label ![9x](1,2,3,4) nor a digit first\n![text](1234567,2,3,4) nor seven digits");
  EXPECT_EQ(b[1].label, "section");
  EXPECT_EQ(b[1].x1, 100);
  EXPECT_EQ(b[1].x2, 900);
  EXPECT_EQ(b[1].y1, 800);
  EXPECT_EQ(b[1].y2, 1000);
  EXPECT_EQ(b[1].text, "swapped and past the page\n![image](5,5,6,6");
}

TEST(OcrGrounding, EmptyAndMarkerOnlyOutputs) {
  EXPECT_TRUE(parse_grounding("").empty());
  EXPECT_TRUE(parse_grounding(" \n\n").empty());
  const auto b = parse_grounding("![image](0,0,1000,1000)");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].text, "");
  EXPECT_EQ(grounding_markdown(b, {}), "");
}

TEST(OcrGrounding, JsonHasTheBoxInPagePixels) {
  const auto b = parse_grounding("lead\n![caption](250,100,750,500) Figure 1\n");
  const nlohmann::json j = grounding_json(b, 800, 1000, {"caption"});
  ASSERT_EQ(j.size(), 2u);
  EXPECT_TRUE(j[0]["bbox"].is_null());
  EXPECT_TRUE(j[0]["box"].is_null());
  EXPECT_FALSE(j[0]["dropped"].get<bool>());
  EXPECT_EQ(j[1]["bbox"], nlohmann::json({250, 100, 750, 500}));
  // 250/1000 of 800 px = 200, 100/1000 of 1000 px = 100, ...
  EXPECT_EQ(j[1]["box"], nlohmann::json({{"left", 200}, {"top", 100}, {"right", 600}, {"bottom", 500}}));
  EXPECT_EQ(j[1]["text"], "Figure 1");
  EXPECT_TRUE(j[1]["dropped"].get<bool>());
}

}  // namespace
}  // namespace locr::server
