// str.format for chat templates, as the Jinja sandbox's formatter runs it: replacement fields
// `{}`, `{0}`, `{name}`, with `.attr` / `[key]` lookups, `!r` / `!s` conversions, and `{{` `}}`
// escapes.
//
// Format specs: only the common subset — [[fill]align][width] for any value, and
// [.precision](f|e|%) / d for numbers. Anything else (sign, grouping, `#`, `=`) is refused with
// a clear message rather than printed wrongly.
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

std::string apply_spec(Interpreter& in, const Value& v, const std::string& spec) {
  if (spec.empty()) return py_str(v);
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  const std::u32string u = decode_utf8(spec);
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^'; };
  if (u.size() >= 2 && is_align(u[1])) {
    fill = encode_utf8(u.substr(0, 1));
    align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && is_align(u[0])) {
    align = static_cast<char>(u[0]);
    i = 1;
  }
  const std::string rest = encode_utf8(u.substr(i));
  size_t p = 0;
  int64_t width = 0;
  while (p < rest.size() && rest[p] >= '0' && rest[p] <= '9') width = width * 10 + (rest[p++] - '0');
  int precision = -1;
  if (p < rest.size() && rest[p] == '.') {
    precision = 0;
    ++p;
    while (p < rest.size() && rest[p] >= '0' && rest[p] <= '9') precision = precision * 10 + (rest[p++] - '0');
  }
  const std::string type = rest.substr(p);
  if (type.size() > 1) in.fail("format spec '" + spec + "' is not supported in chat templates");
  std::string body;
  if (type.empty() && precision < 0) {
    body = py_str(v);
  } else if (type == "d") {
    if (!(v.is_int() || v.is_bool())) in.fail("Unknown format code 'd' for object of type '" + v.type_name() + "'");
    body = std::to_string(v.as_int());
  } else if (type == "f" || type == "F" || type == "e" || type == "%" || (type.empty() && precision >= 0)) {
    if (!v.is_number()) in.fail("Unknown format code '" + type + "' for object of type '" + v.type_name() + "'");
    if (type.empty()) in.fail("format spec '" + spec + "' is not supported in chat templates");
    const double d = v.as_double() * (type == "%" ? 100.0 : 1.0);
    char buf[512];
    std::snprintf(buf, sizeof buf, type == "e" ? "%.*e" : "%.*f", precision < 0 ? 6 : precision, d);
    body = std::string(buf) + (type == "%" ? "%" : "");
  } else if (type == "s") {
    if (!v.is_string()) in.fail("Unknown format code 's' for object of type '" + v.type_name() + "'");
    body = v.as_string();
    if (precision >= 0) body = encode_utf8(decode_utf8(body).substr(0, static_cast<size_t>(precision)));
  } else {
    in.fail("format spec '" + spec + "' is not supported in chat templates");
  }
  const int64_t len = static_cast<int64_t>(utf8_length(body));
  if (width <= len) return body;
  if (!align) align = v.is_number() ? '>' : '<';
  const int64_t pad = width - len;
  const int64_t left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
  std::string out;
  for (int64_t k = 0; k < left; ++k) out += fill;
  out += body;
  for (int64_t k = 0; k < pad - left; ++k) out += fill;
  return out;
}

}  // namespace

Value str_format(Interpreter& in, const std::string& fmt, const CallArgs& args) {
  std::string out;
  int auto_index = 0;
  bool used_auto = false, used_manual = false;
  size_t i = 0;
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      in.fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string::npos) in.fail("expected '}' before end of string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string spec, conversion;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    size_t end = field.find_first_of(".[");
    const std::string head = field.substr(0, end);
    Value v;
    if (head.empty() || (head.find_first_not_of("0123456789") == std::string::npos)) {
      size_t index = 0;
      if (head.empty()) {
        if (used_manual) in.fail("cannot switch from manual field specification to automatic field numbering");
        used_auto = true;
        index = static_cast<size_t>(auto_index++);
      } else {
        if (used_auto) in.fail("cannot switch from automatic field numbering to manual field specification");
        used_manual = true;
        index = std::stoul(head);
      }
      if (index >= args.pos.size())
        in.fail("Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      v = args.pos[index];
    } else {
      const Value* found = nullptr;
      for (const auto& [k, x] : args.kw)
        if (k == head) found = &x;
      if (!found) in.fail("KeyError: " + py_str_repr(head));
      v = *found;
    }
    while (end != std::string::npos && end < field.size()) {  // .attr and [key] chains
      if (field[end] == '.') {
        const size_t next = field.find_first_of(".[", end + 1);
        v = in.getattr(v, field.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1));
        end = next;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) in.fail("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        v = in.getitem(v, digits ? Value(static_cast<int64_t>(std::stoll(key))) : Value(key));
        end = rb + 1;
      }
    }
    if (conversion == "r") v = Value(py_repr(v));
    else if (conversion == "s") v = Value(py_str(v));
    else if (!conversion.empty()) in.fail("Unknown conversion specifier " + conversion);
    out += apply_spec(in, v, spec);
  }
  return Value(std::move(out));
}

}  // namespace locr::jinja
