// io/pdf_text.h: the text-layer normalisation (characters, hyphenation, bullets, columns, paragraphs)
// on hand-written physical-layout text, and PdfDocument::page_text + pdf_page_draft_text on a PDF
// written here with a standard-14 font.
#include <gtest/gtest.h>

#include <string>

#include "io/pdf.h"
#include "io/pdf_text.h"
#include "pdf_writer.h"

namespace locr::io {
namespace {

TEST(PdfText, CharsQuotesDashesSpacesLigatures) {
  // U+201C/U+201D and U+2018/U+2019 -> ASCII quotes; en dash, em dash and minus -> '-';
  // NFKC: U+FB01 (fi ligature) -> "fi", U+2026 -> "...", no-break space -> ' '.
  EXPECT_EQ(normalize_text_chars("\u201CHi\u201D \u2018x\u2019 a\u2013b\u2014c \u22122 \uFB01ne\u2026\u00A0end"),
            "\"Hi\" 'x' a-b-c -2 fine... end");
  // Zero-width space dropped; a soft hyphen inside a line dropped, at a line end kept as '-'.
  EXPECT_EQ(normalize_text_chars("a\u200Bb co\u00ADop co\u00AD\nop"), "ab coop co-\nop");
  // Full-width letters fold to ASCII (NFKC); ASCII is unchanged.
  EXPECT_EQ(normalize_text_chars("\uFF21\uFF22 plain ASCII 'x' - \"y\""), "AB plain ASCII 'x' - \"y\"");
  // Invalid UTF-8 passes through.
  EXPECT_EQ(normalize_text_chars("ok\xff"), "ok\xff");
}

TEST(PdfText, WrappedLinesJoinAndDehyphenate) {
  // Line 1 is the widest: line 2 continues it. Line 1 ends in "hyphen-" and line 2 starts lower
  // case: one word. Line 2 is as wide as line 1 (>= 85%), so line 3 continues; line 3 is short and
  // ends the paragraph; line 4 starts a new one.
  const std::string layout =
      "Paragraphs wrap over lines and a word may be hyphen-\n"
      "ated at the end of a line when the justification needs\n"
      "it to fit.\n"
      "Next paragraph.\n";
  EXPECT_EQ(normalize_page_text(layout),
            "Paragraphs wrap over lines and a word may be hyphenated at the end of a line when the justification "
            "needs it to fit.\n\nNext paragraph.");
  // An upper-case continuation keeps the hyphen (a compound), without a space.
  EXPECT_EQ(normalize_page_text("the history of the early medieval Anglo-\nSaxon kingdoms"),
            "the history of the early medieval Anglo-Saxon kingdoms");
  // A dash standing apart is punctuation: joined with a space.
  EXPECT_EQ(normalize_page_text("words before a dash standing apart -\nand after"),
            "words before a dash standing apart - and after");
  // A blank line ends a paragraph even after a full line; runs of spaces collapse.
  EXPECT_EQ(normalize_page_text("first  paragraph   line\n\nsecond paragraph line"),
            "first paragraph line\n\nsecond paragraph line");
}

TEST(PdfText, BulletsAndNumberedItems) {
  // U+2022 and U+25E6 bullets and an en dash (LaTeX's second-level bullet, '-' after the dash rule)
  // become "- "; a long item's wrapped line (indented under its text) joins the item; items of one
  // list are separated by single newlines, the list from the paragraph before by a blank line.
  const std::string layout =
      "A list:\n"
      "  \u2022 first item\n"
      "  \u2022 second item that is long enough to wrap onto the next line of the\n"
      "    page when typeset\n"
      "       \u2013 nested item\n"
      "  \u25E6 third\n";
  EXPECT_EQ(normalize_page_text(layout),
            "A list:\n\n- first item\n- second item that is long enough to wrap onto the next line of the page when "
            "typeset\n- nested item\n- third");
  EXPECT_EQ(normalize_page_text("1. one\n2) two\niv. four\n"), "1. one\n2) two\niv. four");
}

TEST(PdfText, AlignedColumnsBecomePipeRows) {
  // Cells separated by 3+ spaces, two or more such lines in a row: pipe rows. The paragraph before
  // and after is separated by blank lines; rows of one table by single newlines.
  const std::string layout =
      "Prices:\n"
      "            Name        Qty     Unit price\n"
      "            Apple       3       1.20\n"
      "            Banana      12      0.50\n"
      "Total due.\n";
  EXPECT_EQ(normalize_page_text(layout),
            "Prices:\n\n| Name | Qty | Unit price |\n| Apple | 3 | 1.20 |\n| Banana | 12 | 0.50 |\n\nTotal due.");
  // One line with two cells alone is not a table (a justified line): its spaces collapse.
  EXPECT_EQ(normalize_page_text("Total    due\n"), "Total due");
  // One line with three cells is a row on its own.
  EXPECT_EQ(normalize_page_text("a   b   c\n"), "| a | b | c |");
}

TEST(PdfText, IndentedShortLinesAreCode) {
  // A paragraph (one long line, the widest; a blank line ends it), a short sentence, then short
  // lines (all under 85% of the widest) of which the third
  // is indented deeper than the second: the code block starts at the second ("def f(x):", at the
  // text's margin as LaTeX sets it) and runs to the end of the short lines, indentation relative to
  // its first line, inner spaces kept.
  const std::string layout =
      "A paragraph line that is the widest one on this page of text, by far.\n"
      "\n"
      "An example:\n"
      "def f(x):\n"
      "    if x:\n"
      "        return  1\n"
      "    return 0\n";
  EXPECT_EQ(normalize_page_text(layout),
            "A paragraph line that is the widest one on this page of text, by far.\n\nAn example:\n\n"
            "def f(x):\n    if x:\n        return  1\n    return 0");
  // Short lines without deeper indentation stay paragraphs.
  EXPECT_EQ(normalize_page_text("A heading\nA short sentence.\n"), "A heading\n\nA short sentence.");
  // Indentation counts from the block's first line: that line at 2, the next at 6, gives 0 and 4.
  EXPECT_EQ(normalize_page_text("A line wider than the others.\n\n  g()\n      h()\n"),
            "A line wider than the others.\n\ng()\n    h()");
  // The line before the first deeper one opens the block, even if it is text ("Intro:" at 0, then
  // "g()" at 2): kept as it is, its own line of the block.
  EXPECT_EQ(normalize_page_text("A line wider than the others.\n\nIntro:\n  g()\n"),
            "A line wider than the others.\n\nIntro:\n  g()");
}

TEST(PdfText, PageNumberDroppedAndEmptyPage) {
  EXPECT_EQ(normalize_page_text("Some text.\n\n\n                 12\n\n"), "Some text.");
  EXPECT_EQ(normalize_page_text(""), "");
  EXPECT_EQ(normalize_page_text("\n\n  \n"), "");
}

#ifdef LOCR_HAVE_POPPLER

// Helvetica (standard 14, WinAnsiEncoding: \223 \224 are curly double quotes, \226 an en dash,
// \225 a bullet), 12 pt lines 14 pt apart.
std::string text_pdf() {
  const std::string res =
      "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >> >> >>";
  std::string c;
  auto line = [&](double x, double y, const std::string& s) {
    c += "BT /F1 12 Tf " + test::pdf_number(x) + " " + test::pdf_number(y) + " Td (" + s + ") Tj ET\n";
  };
  line(72, 720, "The quick brown fox jumps over the lazy dog and");
  line(72, 706, "keeps running.");
  line(72, 692, "\\223Quoted\\224 text \\226 with a dash.");
  line(72, 678, "\\225 a bullet item");
  line(72, 664, "Name");
  line(300, 664, "Qty");
  line(72, 650, "Apple");
  line(300, 650, "3");
  return test::make_pdf({{612, 792, 0, c, res}, {612, 792}});
}

TEST(PdfText, PageTextOfAPdf) {
  const PdfDocument doc = PdfDocument::open(text_pdf());
  const std::string physical = doc.page_text(0, PdfTextLayout::kPhysical);
  // Every word is in the text layer, the table's two columns on one line each.
  EXPECT_NE(physical.find("The quick brown fox jumps over the lazy dog and"), std::string::npos) << physical;
  EXPECT_NE(physical.find("Name"), std::string::npos);
  EXPECT_EQ(physical.find('\f'), std::string::npos);
  // The blank second page has no text.
  EXPECT_EQ(doc.page_text(1), std::string());
  EXPECT_EQ(pdf_page_draft_text(doc, 1), "");
  // Normalised: the first line is (about) the widest, so the second continues it; the second is
  // short, so it ends the paragraph, and the third is one of its own. Curly quotes and the en dash
  // ASCII, the bullet "- ", the columns a pipe table.
  EXPECT_EQ(pdf_page_draft_text(doc, 0),
            "The quick brown fox jumps over the lazy dog and keeps running.\n\n\"Quoted\" text - with a dash.\n\n"
            "- a bullet item\n\n| Name | Qty |\n| Apple | 3 |");
}

#endif

}  // namespace
}  // namespace locr::io
