// A PDF page's text layer turned into text that looks like what an OCR model writes for the page,
// the lookup corpus of the text-layer drafter (runtime/text_layer_drafter.h). Pure string
// processing of Poppler's physical-layout text (PdfDocument::page_text, PdfTextLayout::kPhysical):
// no Poppler here, so it is tested on plain strings.
//
// normalize_text_chars, per character:
//   - Unicode NFKC (utf8proc): ligatures (U+FB01 -> "fi"), full-width forms, "…" -> "...",
//     compatibility spaces;
//   - ASCII quotes: ‘ ’ ‚ ‛ ′ ʼ -> ', “ ” „ ‟ ″ -> ";
//   - ASCII dashes: U+2010..U+2015 (hyphen, figure/en/em dash, bar) and U+2212 (minus) -> "-";
//   - spaces: tab, no-break and the other Unicode spaces -> ' '; zero-width space, zero-width
//     joiners and BOM dropped; a soft hyphen (U+00AD) dropped, except at the end of a line where
//     it is a "-" (so that the line-end rule below joins the word).
//   Invalid UTF-8 is passed through unchanged.
//
// normalize_page_text, per page (lines as Poppler lays them out, words at their columns):
//   - each line's characters as above; indentation measured, then stripped;
//   - bullets: a line starting with a bullet glyph (• ◦ ▪ ▫ ‣ ∙ ● ○ ■ □ ∗ ⋆ ·, or "-" / "*"
//     after the dash rule) and a space becomes "- " + text (nesting is not kept);
//   - aligned columns: a line holding two or more cells separated by runs of 3+ spaces, in a run of
//     at least two such lines (or with three or more cells), becomes a pipe row "| a | b |";
//     other runs of spaces inside a line become one space;
//   - wrapped lines joined into paragraphs: a line continues the one above unless that one is
//     blank, short (ends before 85% of the page's widest line: a paragraph's last line, a heading,
//     a code line), a pipe row, or this line starts a list item ("- ", "1. ", "a) ") or a pipe
//     row; a continuation line is joined with a space, or, after a line ending in "letter-",
//     without one: the hyphen dropped when the line starts with a lower-case letter
//     ("hyphen-" "ated" -> "hyphenated", de-hyphenation), kept otherwise ("Anglo-" "Saxon");
//   - code: in a run of short lines (no blank line, pipe row or list item between), the lines from
//     the one before the first line indented deeper than its predecessor to the end of the run are
//     a code block: kept line by line (separated by "\n", spaces inside kept), indented relative to
//     the block's first line;
//   - a last line made only of digits (a page number) is dropped;
//   - output: paragraphs and code blocks separated by "\n\n", list items and pipe rows of one list
//     or table by "\n", no trailing newline.
// What it does not do: it keeps side-by-side text columns side by side (a two-column page gives
// pipe rows of half-lines), does not recover emphasis, headings levels, math or figure text, and
// does not guess Markdown table separator rows.
#pragma once

#include <string>
#include <string_view>

namespace locr::io {

class PdfDocument;

std::string normalize_text_chars(std::string_view utf8);

// `layout_text`: one page's text in Poppler's physical layout, lines separated by '\n'.
std::string normalize_page_text(std::string_view layout_text);

// normalize_page_text(doc.page_text(index, PdfTextLayout::kPhysical)): page `index` (0-based)
// as a draft corpus; empty for a page without a text layer.
std::string pdf_page_draft_text(const PdfDocument& doc, int index);

}  // namespace locr::io
