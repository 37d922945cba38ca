// Optional post-processing of the model's Markdown, each step a pure function (UTF-8 string in,
// string out; invalid UTF-8 bytes pass through unchanged):
//
//  - fix_escaped_dollars: LightOnOCR sometimes writes inline math with escaped delimiters
//    (`\$x^2\$`); LightOn's client repairs that to `$x^2$` with conservative rules that leave
//    prices, code, HTML tags, URLs and existing math alone. This is a port of those rules, exactly:
//    lightonai/LightOnOCR, lightonocr/postprocess/fix_escaped_dollars.py (commit 36755d46),
//    `repair_dollar_delimiters`, applied by their client to every output.
//  - html_tables_to_markdown: the model writes tables as HTML (<table><tr><td>...). Tables that a
//    GFM pipe table can represent (no rowspan/colspan > 1, same cell count in every row, no nested
//    table or <caption>) become pipe tables; the first row is the header. Everything else,
//    including tables that cannot be represented, is left byte for byte as it was.
//  - markdown_to_text: a simple plain-text rendering (heading marks, emphasis, link syntax and
//    backslash escapes removed; table rows become tab-separated cells). Lossy by design; math is
//    kept as written.
//
// None of these runs the model or looks at images; the server and batch command choose which to
// apply (PostprocessOptions).
#pragma once

#include <string>
#include <string_view>

namespace locr::runtime {

std::string fix_escaped_dollars(std::string_view markdown);
std::string html_tables_to_markdown(std::string_view markdown);
std::string markdown_to_text(std::string_view markdown);

struct PostprocessOptions {
  bool fix_dollars = true;          // LightOn's client always applies it
  bool tables_to_markdown = false;  // HTML tables -> GFM pipe tables
  bool plain_text = false;          // last: Markdown -> plain text (implies tables_to_markdown)
};

// Applies the selected steps in the order fix_dollars, tables, plain text.
std::string postprocess(std::string_view text, const PostprocessOptions& opts);

}  // namespace locr::runtime
