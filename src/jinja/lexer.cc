// Chat-template tokenizer (see lexer.h). The structure follows jinja2.lexer.Lexer: a root
// state that finds the next tag and applies whitespace control to the text before it, and tag
// states that read expression tokens until the matching end delimiter.
#include "jinja/lexer.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/error.h"
#include "jinja/text.h"

namespace locr::jinja {

void syntax_error(int line, const std::string& message) {
  fail(ErrorKind::kInvalidArgument, "chat template syntax error on line ", line, ": ", message);
}

std::string describe_token(const Token& t) {
  switch (t.type) {
    case Tok::kData: return "template data";
    case Tok::kBlockBegin: return "begin of statement block";
    case Tok::kBlockEnd: return "end of statement block";
    case Tok::kVarBegin: return "begin of print statement";
    case Tok::kVarEnd: return "end of print statement";
    case Tok::kName: return "'" + t.text + "'";
    case Tok::kString: return "string";
    case Tok::kInt: return "integer";
    case Tok::kFloat: return "float";
    case Tok::kOp: return "'" + t.text + "'";
    case Tok::kEof: return "end of template";
  }
  return "token";
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (static_cast<unsigned char>(c) >= 0x80);
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Jinja joins lines with "\n" whatever the source used, and drops one trailing newline.
std::string normalize_newlines(const std::string& src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string src) : src_(std::move(src)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos_), pos_);
        break;
      }
      const char kind = src_[tag + 1];
      size_t open_end = tag + 2;
      char sign = 0;
      if (open_end < src_.size() && (src_[open_end] == '-' || src_[open_end] == '+')) sign = src_[open_end++];
      size_t raw_end = 0;
      const bool raw = kind == '%' && match_raw_begin(open_end, &raw_end);
      emit_data(strip_before(src_.substr(pos_, tag - pos_), sign, kind != '{'), pos_);
      line_starting_ = false;
      if (raw) {
        lex_raw(raw_end);
      } else if (kind == '#') {
        lex_comment(tag, open_end);
      } else {
        lex_tag(kind, tag, open_end);
      }
    }
    Token eof;
    eof.type = Tok::kEof;
    eof.line = line_at(src_.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  int line_at(size_t pos) {
    // Lines are counted incrementally: positions only move forward.
    while (line_pos_ < pos && line_pos_ < src_.size()) {
      if (src_[line_pos_] == '\n') ++line_;
      ++line_pos_;
    }
    return line_;
  }

  size_t find_tag(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  // Whitespace control on the text before a tag: `-` strips all whitespace; otherwise
  // lstrip_blocks removes spaces between the line start and a block or comment tag.
  std::string strip_before(std::string text, char sign, bool lstrip_applies) const {
    if (sign == '-') return rstrip_ws(text);
    if (sign != '+' && lstrip_applies) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && l_pos < text.size() && all_ws(std::string_view(text).substr(l_pos)))
        text.resize(l_pos);
    }
    return text;
  }

  void emit_data(std::string text, size_t at) {
    if (text.empty()) return;
    Token t;
    t.type = Tok::kData;
    t.text = std::move(text);
    t.line = line_at(at);
    out_.push_back(std::move(t));
  }

  void emit(Tok type, size_t at, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line_at(at);
    out_.push_back(std::move(t));
  }

  size_t skip_ws(size_t p) const { return p + leading_ws_bytes(std::string_view(src_).substr(p)); }

  bool starts(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

  // Matches the end of a tag at `p` ("+%}", "-%}\s*", "%}\n?" or "-}}\s*", "}}"). Returns the
  // position after it, or npos.
  size_t match_end(size_t p, char kind) const {
    const std::string close = kind == '%' ? "%}" : (kind == '#' ? "#}" : "}}");
    if (kind != '{' && src_[p] == '+' && starts(p + 1, close)) return p + 3;
    if (src_[p] == '-' && starts(p + 1, close)) return skip_ws(p + 3);
    if (starts(p, close)) {
      size_t e = p + 2;
      if (kind != '{' && e < src_.size() && src_[e] == '\n') ++e;  // trim_blocks
      return e;
    }
    return std::string::npos;
  }

  bool match_raw_begin(size_t p, size_t* end) const {
    p = skip_ws(p);
    if (!starts(p, "raw")) return false;
    p += 3;
    if (p < src_.size() && is_name_char(src_[p])) return false;
    p = skip_ws(p);
    if (starts(p, "-%}")) {
      *end = skip_ws(p + 3);
      return true;
    }
    if (starts(p, "%}")) {  // Jinja does not apply trim_blocks after {% raw %}
      *end = p + 2;
      return true;
    }
    return false;
  }

  void lex_raw(size_t body) {
    line_starting_ = body > 0 && src_[body - 1] == '\n';
    for (size_t p = find_tag(body); p != std::string::npos; p = find_tag(p + 1)) {
      if (src_[p + 1] != '%') continue;
      size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_ws(q);
      if (!starts(q, "endraw") || (q + 6 < src_.size() && is_name_char(src_[q + 6]))) continue;
      q = skip_ws(q + 6);
      if (q >= src_.size()) break;
      const size_t end = match_end(q, '%');
      if (end == std::string::npos) continue;
      emit_data(strip_before(src_.substr(body, p - body), sign, true), body);
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    syntax_error(line_at(body), "Missing end of raw directive");
  }

  void lex_comment(size_t tag, size_t p) {
    for (; p < src_.size(); ++p) {
      const size_t end = match_end(p, '#');
      if (end != std::string::npos) {
        pos_ = end;
        line_starting_ = src_[end - 1] == '\n';
        return;
      }
    }
    syntax_error(line_at(tag), "Missing end of comment tag");
  }

  void lex_tag(char kind, size_t tag, size_t p) {
    emit(kind == '%' ? Tok::kBlockBegin : Tok::kVarBegin, tag);
    std::vector<char> balance;
    while (true) {
      if (p >= src_.size()) {  // unterminated: the parser reports "unexpected end of template"
        pos_ = p;
        return;
      }
      if (balance.empty()) {
        const size_t end = match_end(p, kind);
        if (end != std::string::npos) {
          emit(kind == '%' ? Tok::kBlockEnd : Tok::kVarEnd, p);
          pos_ = end;
          line_starting_ = src_[end - 1] == '\n';
          return;
        }
      }
      const size_t ws = skip_ws(p);
      if (ws != p) {
        p = ws;
        continue;
      }
      p = lex_token(p, &balance);
    }
  }

  size_t lex_number(size_t p) {
    const size_t start = p;
    auto digits = [&](size_t q) {  // (\d+_)*\d+ ; returns end or npos
      if (q >= src_.size() || !is_digit(src_[q])) return std::string::npos;
      while (q < src_.size() && (is_digit(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1])))) ++q;
      return q;
    };
    auto clean = [](std::string s) {
      s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
      return s;
    };
    // Float first, as Jinja does; a float may not directly follow a '.'.
    if (!(start > 0 && src_[start - 1] == '.')) {
      const size_t int_end = digits(start);
      size_t q = int_end;
      size_t frac_end = std::string::npos;
      if (q < src_.size() && src_[q] == '.') frac_end = digits(q + 1);
      size_t after = frac_end != std::string::npos ? frac_end : int_end;
      size_t exp_end = std::string::npos;
      if (after < src_.size() && (src_[after] == 'e' || src_[after] == 'E')) {
        size_t e = after + 1;
        if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
        exp_end = digits(e);
      }
      if (exp_end != std::string::npos || frac_end != std::string::npos) {
        const size_t end = exp_end != std::string::npos ? exp_end : frac_end;
        Token t;
        t.type = Tok::kFloat;
        t.text = src_.substr(start, end - start);
        t.float_value = std::strtod(clean(t.text).c_str(), nullptr);
        t.line = line_at(start);
        out_.push_back(std::move(t));
        return end;
      }
    }
    int base = 10;
    size_t q = start;
    if (src_[q] == '0' && q + 1 < src_.size()) {
      const char x = static_cast<char>(src_[q + 1] | 0x20);
      base = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 10;
    }
    std::string body;
    if (base != 10) {
      q += 2;
      auto ok = [&](char c) {
        c = static_cast<char>(c | 0x20);
        return base == 16 ? (is_digit(c) || (c >= 'a' && c <= 'f')) : (c >= '0' && c < '0' + base);
      };
      while (q < src_.size() && (ok(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && ok(src_[q + 1])))) ++q;
      body = clean(src_.substr(start + 2, q - start - 2));
      if (body.empty()) syntax_error(line_at(start), "invalid integer literal");
    } else if (src_[q] == '0') {  // 0(_?0)*
      ++q;
      while (q < src_.size() && (src_[q] == '0' || (src_[q] == '_' && q + 1 < src_.size() && src_[q + 1] == '0'))) ++q;
      body = "0";
    } else {
      q = digits(start);
      body = clean(src_.substr(start, q - start));
    }
    Token t;
    t.type = Tok::kInt;
    t.text = src_.substr(start, q - start);
    errno = 0;
    t.int_value = std::strtoll(body.c_str(), nullptr, base);
    if (errno == ERANGE) syntax_error(line_at(start), "integer literal too large: " + t.text);
    t.line = line_at(start);
    out_.push_back(std::move(t));
    return q;
  }

  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t q = p + 1;
    while (q < src_.size() && src_[q] != quote) {
      if (src_[q] != '\\') {
        value += src_[q++];
        continue;
      }
      if (q + 1 >= src_.size()) break;
      const char e = src_[q + 1];
      q += 2;
      auto hex = [&](int n) {
        if (q + n > src_.size()) syntax_error(line_at(p), "truncated escape in string literal");
        unsigned long v = 0;
        for (int k = 0; k < n; ++k) {
          const char c = static_cast<char>(src_[q + k] | 0x20);
          if (!is_digit(c) && !(c >= 'a' && c <= 'f')) syntax_error(line_at(p), "truncated escape in string literal");
          v = v * 16 + (is_digit(c) ? c - '0' : c - 'a' + 10);
        }
        q += n;
        if (v > 0x10FFFF) syntax_error(line_at(p), "illegal Unicode character in string literal");
        append_utf8(value, static_cast<char32_t>(v));
      };
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x': hex(2); break;
        case 'u': hex(4); break;
        case 'U': hex(8); break;
        default:
          if (e >= '0' && e <= '7') {
            unsigned v = e - '0';
            for (int k = 0; k < 2 && q < src_.size() && src_[q] >= '0' && src_[q] <= '7'; ++k) v = v * 8 + (src_[q++] - '0');
            append_utf8(value, v);
          } else {  // unknown escapes stay as written, as in Python
            value += '\\';
            value += e;
          }
      }
    }
    if (q >= src_.size()) syntax_error(line_at(p), "unterminated string literal");
    Token t;
    t.type = Tok::kString;
    t.text = std::move(value);
    t.line = line_at(p);
    out_.push_back(std::move(t));
    return q + 1;
  }

  size_t lex_token(size_t p, std::vector<char>* balance) {
    const char c = src_[p];
    if (is_digit(c)) return lex_number(p);
    if (is_name_start(c)) {
      size_t q = p;
      while (q < src_.size() && is_name_char(src_[q])) ++q;
      emit(Tok::kName, p, src_.substr(p, q - p));
      return q;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (starts(p, op)) {
        emit(Tok::kOp, p, op);
        return p + 2;
      }
    }
    static const std::string kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string::npos) {
      syntax_error(line_at(p), std::string("unexpected char '") + c + "' at " + std::to_string(p));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance->push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance->empty()) syntax_error(line_at(p), std::string("unexpected '") + c + "'");
      if (balance->back() != c) {
        syntax_error(line_at(p), std::string("unexpected '") + c + "', expected '" + balance->back() + "'");
      }
      balance->pop_back();
    }
    emit(Tok::kOp, p, std::string(1, c));
    return p + 1;
  }

  std::string src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  size_t line_pos_ = 0;
  int line_ = 1;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(normalize_newlines(source)).run(); }

}  // namespace locr::jinja
