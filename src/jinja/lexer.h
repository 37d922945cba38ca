// Tokenizer for chat templates, mirroring jinja2.lexer with transformers' settings:
// trim_blocks and lstrip_blocks on, keep_trailing_newline off, default delimiters. Handles
// whitespace control (`{%-`, `-%}`, `{{-`, `-}}`, `{#-`, `-#}`, `{%+`, `+%}`), comments (dropped)
// and `{% raw %}` blocks (turned into data).
//
// Not here: line statements and custom delimiters (transformers does not enable them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace locr::jinja {

enum class Tok {
  kData,        // template text outside tags
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kVarBegin,    // {{
  kVarEnd,      // }}
  kName,
  kString,      // text is the unescaped value
  kInt,
  kFloat,
  kOp,          // text is the operator: + - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { } ;
  kEof,
};

struct Token {
  Tok type = Tok::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Throws locr::Error (kInvalidArgument) naming the line on malformed input (unterminated
// comment, string or raw block; unexpected character; unbalanced brackets).
std::vector<Token> tokenize(const std::string& source);

// "end of print statement", "'endfor'", ... for error messages.
std::string describe_token(const Token& t);

[[noreturn]] void syntax_error(int line, const std::string& message);

}  // namespace locr::jinja
