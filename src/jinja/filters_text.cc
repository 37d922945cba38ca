// Jinja filters on text and numbers (trim, upper, title, replace, indent, int, float, round, ...)
// following jinja2/filters.py (3.1) with autoescape off, and transformers' `tojson` override:
// json.dumps(x, ensure_ascii=False, indent, separators, sort_keys). Results are plain values:
// `safe` and `escape` return str, there is no Markup type.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

Value f_string(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "string", {});
  return Value(py_str(v));
}

Value f_trim(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "trim", {"chars"});
  const Value* chars = p.get(0);
  std::string set;
  if (chars && !chars->is_none()) set = to_str_arg(in, *chars, "chars");
  return Value(py_strip(py_str(v), chars && !chars->is_none() ? &set : nullptr, true, true));
}

Value f_upper(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "upper", {});
  return Value(py_upper(py_str(v)));
}

Value f_lower(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "lower", {});
  return Value(py_lower(py_str(v)));
}

Value f_capitalize(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "capitalize", {});
  return Value(py_capitalize(py_str(v)));
}

// Jinja's title: split on runs of [-\s({\[<], upper-case each piece's first char, lower the rest.
Value f_title(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "title", {});
  const std::u32string u = decode_utf8(py_str(v));
  auto is_sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c); };
  std::u32string out;
  size_t i = 0;
  while (i < u.size()) {
    const bool sep = is_sep(u[i]);
    size_t j = i;
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    for (size_t k = i; k < j; ++k) out.push_back(k == i ? to_upper(u[k]) : to_lower(u[k]));
    i = j;
  }
  return Value(encode_utf8(out));
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "replace", {"old", "new", "count"});
  if (!p.get(0) || !p.get(1)) in.fail("replace() missing required arguments 'old' and 'new'");
  const Value count = p.get_or(2, Value::none());
  return Value(py_replace(py_str(v), py_str(*p.get(0)), py_str(*p.get(1)),
                          count.is_none() ? -1 : static_cast<long>(to_int_arg(in, count, "count"))));
}

Value f_safe(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "safe", {});
  return v.is_string() ? v : Value(py_str(v));
}

Value f_escape(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "escape", {});
  std::string out;
  for (char c : py_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "center", {"width"});
  const std::string s = py_str(v);
  const int64_t width = to_int_arg(in, p.get_or(0, Value(80)), "width");
  const int64_t len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value(s);
  const int64_t marg = width - len;
  const int64_t left = marg / 2 + (marg & width & 1);  // CPython's pad split
  return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "indent", {"width", "first", "blank"});
  const Value width = p.get_or(0, Value(4));
  const std::string ind = width.is_string() ? width.as_string()
                                            : std::string(static_cast<size_t>(std::max<int64_t>(0, to_int_arg(in, width, "width"))), ' ');
  if (!v.is_string()) in.fail("indent expects a string, got " + v.type_name());
  const std::vector<std::string> lines = py_splitlines(v.as_string() + "\n");
  std::string rv;
  if (p.get_or(2, Value(false)).truthy()) {
    for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + ind : "") + lines[i];
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind + lines[i]);
  }
  if (p.get_or(1, Value(false)).truthy()) rv = ind + rv;
  return Value(std::move(rv));
}

Value f_wordcount(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "wordcount", {});
  int64_t n = 0;
  bool inword = false;
  for (char32_t c : decode_utf8(py_str(v))) {
    const bool w = is_alpha(c) || is_decimal(c) || c == '_';
    if (w && !inword) ++n;
    inword = w;
  }
  return Value(n);
}

bool parse_py_int(std::string s, int base, int64_t* out) {
  s = py_strip(s, nullptr, true, true);
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  auto prefix_base = [&](char c) { c = static_cast<char>(c | 0x20); return c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 0; };
  if (i + 1 < s.size() && s[i] == '0' && prefix_base(s[i + 1]) && (base == 0 || base == prefix_base(s[i + 1]))) {
    base = prefix_base(s[i + 1]);
    i += 2;
    if (i < s.size() && s[i] == '_') ++i;
  } else if (base == 0) {
    base = 10;
  }
  std::string digits;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    const char c = static_cast<char>(s[i] | 0x20);
    const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'z') ? c - 'a' + 10 : 99;
    if (d >= base) return false;
    digits += s[i];
  }
  if (digits.empty()) return false;
  errno = 0;
  const long long r = std::strtoll(digits.c_str(), nullptr, base);
  if (errno == ERANGE) return false;
  *out = neg ? -r : r;
  return true;
}

bool parse_py_float(std::string s, double* out) {
  s = py_strip(s, nullptr, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1])))
      continue;
    if (s[i] == 'x' || s[i] == 'X' || s[i] == '(' || s[i] == '_') return false;
    clean += s[i];
  }
  if (clean.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

Value f_int(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "int", {"default", "base"});
  const Value dflt = p.get_or(0, Value(0));
  if (v.is_undefined()) in.fail_undefined(v);
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    int64_t r = 0;
    if (parse_py_int(v.as_string(), static_cast<int>(to_int_arg(in, p.get_or(1, Value(10)), "base")), &r)) return Value(r);
    double d = 0;
    if (parse_py_float(v.as_string(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value(static_cast<int64_t>(std::trunc(d)));
  }
  return dflt;
}

Value f_float(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "float", {"default"});
  if (v.is_undefined()) in.fail_undefined(v);
  if (v.is_number()) return Value(v.as_double());
  double d = 0;
  if (v.is_string() && parse_py_float(v.as_string(), &d)) return Value(d);
  return p.get_or(0, Value(0.0));
}

Value f_abs(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "abs", {});
  if (v.is_undefined()) in.fail_undefined(v);
  if (v.is_float()) return Value(std::fabs(v.as_double()));
  if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  in.fail("bad operand type for abs(): '" + v.type_name() + "'");
}

Value f_round(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "round", {"precision", "method"});
  const int64_t prec = to_int_arg(in, p.get_or(0, Value(0)), "precision");
  const std::string method = py_str(p.get_or(1, Value("common")));
  if (method != "common" && method != "floor" && method != "ceil") in.fail("method must be common, ceil or floor");
  if (v.is_undefined()) in.fail_undefined(v);
  if (!v.is_number()) in.fail("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n>=0) stays an int
    const double d = v.as_double();
    if (!std::isfinite(d)) return v;
    if (prec >= 0) {
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(prec, 300)), d);  // exact, half-even
      return Value(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-prec));
    return Value(std::nearbyint(d / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(prec));
  const double x = v.as_double() * scale;
  return Value((method == "floor" ? std::floor(x) : std::ceil(x)) / scale);
}

Value f_tojson(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions opt;
  opt.ensure_ascii = p.get_or(0, Value(false)).truthy();
  const Value indent = p.get_or(1, Value::none());
  std::string indent_str;
  if (!indent.is_none()) {
    indent_str = indent.is_string() ? indent.as_string()
                                    : std::string(static_cast<size_t>(std::max<int64_t>(0, to_int_arg(in, indent, "indent"))), ' ');
    opt.indent = &indent_str;
    opt.item_sep = ",";
  }
  const Value seps = p.get_or(2, Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.as_list().items.size() != 2) in.fail("tojson separators must be a (item, key) pair");
    opt.item_sep = to_str_arg(in, seps.as_list().items[0], "separator");
    opt.key_sep = to_str_arg(in, seps.as_list().items[1], "separator");
  }
  opt.sort_keys = p.get_or(3, Value(false)).truthy();
  std::string bad;
  std::string out = py_json_dumps(v, opt, &bad);
  if (!bad.empty()) in.fail("Object of type " + bad + " is not JSON serializable");
  return Value(std::move(out));
}

struct Entry {
  const char* name;
  FilterFn fn;
};

const Entry kTextFilters[] = {
    {"abs", f_abs}, {"capitalize", f_capitalize}, {"center", f_center}, {"e", f_escape}, {"escape", f_escape},
    {"float", f_float}, {"forceescape", f_escape}, {"indent", f_indent}, {"int", f_int}, {"lower", f_lower},
    {"replace", f_replace}, {"round", f_round}, {"safe", f_safe}, {"string", f_string}, {"title", f_title},
    {"tojson", f_tojson}, {"trim", f_trim}, {"upper", f_upper}, {"wordcount", f_wordcount},
};

}  // namespace

FilterFn find_text_filter(std::string_view name) {
  for (const auto& e : kTextFilters)
    if (name == e.name) return e.fn;
  return nullptr;
}

}  // namespace locr::jinja
