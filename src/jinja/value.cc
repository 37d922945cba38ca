// Python-semantics values for the chat-template interpreter (see value.h).
#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "jinja/text.h"

namespace locr::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = Undef{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::none() {
  Value v;
  v.v_ = nullptr;
  return v;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  Value v;
  v.v_ = std::make_shared<const List>(List{std::move(items), is_tuple});
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.v_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::ns(std::shared_ptr<Namespace> n) {
  Value v;
  v.v_ = std::move(n);
  return v;
}

Value Value::callable(std::string name, std::function<Value(Interpreter&, const CallArgs&)> fn) {
  Value v;
  v.v_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

// Request JSON reaches here; bound its depth so rendering (and json.dumps) cannot exhaust the stack.
constexpr int kMaxJsonDepth = 256;

template <typename Json>
static Value value_from_json(const Json& j, int depth) {
  if (depth > kMaxJsonDepth) fail(ErrorKind::kLimit, "chat template input nests deeper than ", kMaxJsonDepth, " levels");
  switch (j.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value(j.template get<bool>());
    case Json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case Json::value_t::number_float:
      return Value(j.template get<double>());
    case Json::value_t::string:
      return Value(j.template get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e, depth + 1));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(it.key(), value_from_json(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();  // binary / discarded: not produced by JSON text
  }
}

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j, 0); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j, 0); }

int64_t Value::as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  const auto& u = std::get<Undef>(v_);
  return u.hint ? *u.hint : kEmpty;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined: case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_double() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !as_list().items.empty();
    case Kind::kDict: return !as_dict().items.empty();
    default: return true;
  }
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return is_tuple() ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return "function";
  }
  return "object";
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // e.g. "-1.2345e+05": shortest round-trip digits
  std::string sign;
  if (sci[0] == '-') sign = "-", sci.erase(0, 1);
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  const int nd = static_cast<int>(digits.size());
  std::string out = sign;
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (nd > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out += "0." + std::string(-decpt, '0') + digits;
  } else if (decpt >= nd) {
    out += digits + std::string(decpt - nd, '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

std::string py_str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decode_utf8(s)) {
    char buf[16];
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && !is_printable(c))) {
      if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    } else {
      append_utf8(out, c);
    }
  }
  out += quote;
  return out;
}

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kString: return py_str_repr(v.as_string());
    default: return py_str(v);
  }
}

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return py_float_repr(v.as_double());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kList: {
      const List& l = v.as_list();
      std::string out = l.is_tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        out += py_repr(l.items[i]);
      }
      if (l.is_tuple && l.items.size() == 1) out += ",";
      return out + (l.is_tuple ? ")" : "]");
    }
    case Value::Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, item] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += py_str_repr(k) + ": " + py_repr(item);
      }
      return out + "}";
    }
    case Value::Kind::kNamespace:
      return "<Namespace " + py_str(Value::dict(v.as_namespace().attrs)) + ">";
    case Value::Kind::kCallable:
      return "<built-in function " + v.as_callable().name + ">";
  }
  return "";
}

bool py_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined: case K::kNone: return true;
    case K::kString: return a.as_string() == b.as_string();
    case K::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!py_equal(x.items[i], y.items[i])) return false;
      return true;
    }
    case K::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, item] : x.items) {
        const Value* other = y.find(k);
        if (!other || !py_equal(item, *other)) return false;
      }
      return true;
    }
    case K::kNamespace: return &a.as_namespace() == &b.as_namespace();
    case K::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

bool py_less(const Value& a, const Value& b, bool* ok) {
  *ok = true;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_less(x[i], y[i], ok);
    }
    return x.size() < y.size();
  }
  *ok = false;
  return false;
}

static void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (char32_t c : decode_utf8(s)) {
    char buf[16];
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                      static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      }
      out += buf;
    } else {
      append_utf8(out, c);
    }
  }
  out += '"';
}

static bool json_dump(std::string& out, const Value& v, const JsonDumpOptions& opt, int level, std::string* bad) {
  using K = Value::Kind;
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *opt.indent;
  };
  switch (v.kind()) {
    case K::kNone: out += "null"; return true;
    case K::kBool: out += v.as_bool() ? "true" : "false"; return true;
    case K::kInt: out += std::to_string(v.as_int()); return true;
    case K::kFloat: {
      const double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
      else out += py_float_repr(d);
      return true;
    }
    case K::kString: json_string(out, v.as_string(), opt.ensure_ascii); return true;
    case K::kList: {
      const auto& items = v.as_list().items;
      if (items.empty()) {
        out += "[]";
        return true;
      }
      out += '[';
      if (opt.indent) newline(level + 1);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) {
          out += opt.item_sep;
          if (opt.indent) newline(level + 1);
        }
        if (!json_dump(out, items[i], opt, level + 1, bad)) return false;
      }
      if (opt.indent) newline(level);
      out += ']';
      return true;
    }
    case K::kDict: {
      std::vector<const std::pair<std::string, Value>*> items;
      for (const auto& kv : v.as_dict().items) items.push_back(&kv);
      if (items.empty()) {
        out += "{}";
        return true;
      }
      if (opt.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      if (opt.indent) newline(level + 1);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) {
          out += opt.item_sep;
          if (opt.indent) newline(level + 1);
        }
        json_string(out, items[i]->first, opt.ensure_ascii);
        out += opt.key_sep;
        if (!json_dump(out, items[i]->second, opt, level + 1, bad)) return false;
      }
      if (opt.indent) newline(level);
      out += '}';
      return true;
    }
    default:
      *bad = v.type_name();
      return false;
  }
}

std::string py_json_dumps(const Value& v, const JsonDumpOptions& opt, std::string* bad) {
  std::string out;
  if (!json_dump(out, v, opt, 0, bad)) return "";
  return out;
}

}  // namespace locr::jinja
