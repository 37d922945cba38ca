// Python methods that templates call on values (`s.startswith(...)`, `d.get(...)`,
// `d.items()`), the globals transformers installs in its Jinja environment, and argument
// binding shared by all builtins.
//
// As in transformers' ImmutableSandboxedEnvironment, methods that mutate (list.append,
// dict.update, ...) resolve to a value that fails when called.
#include <chrono>
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {

Args::Args(Interpreter& in, const CallArgs& a, const char* fn, std::initializer_list<const char*> names) {
  std::vector<std::string> n(names.begin(), names.end());
  const bool star = !n.empty() && n.back() == "*";
  if (star) n.pop_back();
  bound_.resize(n.size());
  for (size_t i = 0; i < a.pos.size(); ++i) {
    if (i < n.size()) {
      bound_[i] = a.pos[i];
    } else if (star) {
      rest_.push_back(a.pos[i]);
    } else {
      in.fail(std::string(fn) + "() takes at most " + std::to_string(n.size()) + " argument(s) (" +
              std::to_string(a.pos.size()) + " given)");
    }
  }
  for (const auto& [k, v] : a.kw) {
    size_t i = 0;
    while (i < n.size() && n[i] != k) ++i;
    if (i == n.size()) in.fail(std::string(fn) + "() got an unexpected keyword argument '" + k + "'");
    if (bound_[i]) in.fail(std::string(fn) + "() got multiple values for argument '" + k + "'");
    bound_[i] = v;
  }
}

int64_t to_int_arg(Interpreter& in, const Value& v, const char* what) {
  if (v.is_undefined()) in.fail_undefined(v);
  if (!v.is_int() && !v.is_bool()) in.fail(std::string(what) + " must be an integer, not " + v.type_name());
  return v.as_int();
}

const std::string& to_str_arg(Interpreter& in, const Value& v, const char* what) {
  if (v.is_undefined()) in.fail_undefined(v);
  if (!v.is_string()) in.fail(std::string(what) + " must be a string, not " + v.type_name());
  return v.as_string();
}

namespace {

using Method = Value (*)(Interpreter&, const Value& self, const CallArgs&);

// ---- str ----

const std::string* opt_chars(Interpreter& in, const Args& p, size_t i) {
  const Value* c = p.get(i);
  return c && !c->is_none() ? &to_str_arg(in, *c, "chars") : nullptr;
}

Value s_strip(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "strip", {"chars"});
  return Value(py_strip(s.as_string(), opt_chars(in, p, 0), true, true));
}
Value s_lstrip(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "lstrip", {"chars"});
  return Value(py_strip(s.as_string(), opt_chars(in, p, 0), true, false));
}
Value s_rstrip(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "rstrip", {"chars"});
  return Value(py_strip(s.as_string(), opt_chars(in, p, 0), false, true));
}

Value split_impl(Interpreter& in, const Value& s, const CallArgs& a, bool right) {
  Args p(in, a, right ? "rsplit" : "split", {"sep", "maxsplit"});
  const Value* sep = p.get(0);
  const std::string* sep_s = sep && !sep->is_none() ? &to_str_arg(in, *sep, "sep") : nullptr;
  if (sep_s && sep_s->empty()) in.fail("empty separator");
  std::vector<Value> out;
  for (auto& part : py_split(s.as_string(), sep_s, static_cast<long>(to_int_arg(in, p.get_or(1, Value(-1)), "maxsplit")), right))
    out.emplace_back(std::move(part));
  return Value::list(std::move(out));
}
Value s_split(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, false); }
Value s_rsplit(Interpreter& in, const Value& s, const CallArgs& a) { return split_impl(in, s, a, true); }

Value s_splitlines(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "splitlines", {});
  std::vector<Value> out;
  for (auto& line : py_splitlines(s.as_string())) out.emplace_back(std::move(line));
  return Value::list(std::move(out));
}

Value affix_impl(Interpreter& in, const Value& s, const CallArgs& a, bool prefix) {
  Args p(in, a, prefix ? "startswith" : "endswith", {"affix"});
  if (!p.get(0)) in.fail(std::string(prefix ? "startswith" : "endswith") + "() takes at least 1 argument");
  std::vector<Value> options = p.get(0)->is_tuple() ? p.get(0)->as_list().items : std::vector<Value>{*p.get(0)};
  const std::string& str = s.as_string();
  for (const Value& o : options) {
    const std::string& x = to_str_arg(in, o, "prefix");
    if (x.size() <= str.size() && str.compare(prefix ? 0 : str.size() - x.size(), x.size(), x) == 0) return Value(true);
  }
  return Value(false);
}
Value s_startswith(Interpreter& in, const Value& s, const CallArgs& a) { return affix_impl(in, s, a, true); }
Value s_endswith(Interpreter& in, const Value& s, const CallArgs& a) { return affix_impl(in, s, a, false); }

Value s_upper(Interpreter& in, const Value& s, const CallArgs& a) { Args p(in, a, "upper", {}); return Value(py_upper(s.as_string())); }
Value s_lower(Interpreter& in, const Value& s, const CallArgs& a) { Args p(in, a, "lower", {}); return Value(py_lower(s.as_string())); }
Value s_title(Interpreter& in, const Value& s, const CallArgs& a) { Args p(in, a, "title", {}); return Value(py_title(s.as_string())); }
Value s_capitalize(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "capitalize", {});
  return Value(py_capitalize(s.as_string()));
}

Value s_replace(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "replace", {"old", "new", "count"});
  if (!p.get(0) || !p.get(1)) in.fail("replace() takes at least 2 arguments");
  return Value(py_replace(s.as_string(), to_str_arg(in, *p.get(0), "old"), to_str_arg(in, *p.get(1), "new"),
                          static_cast<long>(to_int_arg(in, p.get_or(2, Value(-1)), "count"))));
}

// find/rfind/index/rindex/count, in code points.
Value search_impl(Interpreter& in, const Value& s, const CallArgs& a, const char* name) {
  Args p(in, a, name, {"sub"});
  if (!p.get(0)) in.fail(std::string(name) + "() takes at least 1 argument");
  const std::string& hay = s.as_string();
  const std::string& sub = to_str_arg(in, *p.get(0), "sub");
  const std::string n = name;
  if (n == "count") {
    if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(hay) + 1));
    int64_t c = 0;
    for (size_t pos = hay.find(sub); pos != std::string::npos; pos = hay.find(sub, pos + sub.size())) ++c;
    return Value(c);
  }
  const size_t pos = (n == "find" || n == "index") ? hay.find(sub) : hay.rfind(sub);
  if (pos == std::string::npos) {
    if (n == "index" || n == "rindex") in.fail("substring not found");
    return Value(-1);
  }
  return Value(static_cast<int64_t>(utf8_length(std::string_view(hay).substr(0, pos))));
}
Value s_find(Interpreter& in, const Value& s, const CallArgs& a) { return search_impl(in, s, a, "find"); }
Value s_rfind(Interpreter& in, const Value& s, const CallArgs& a) { return search_impl(in, s, a, "rfind"); }
Value s_index(Interpreter& in, const Value& s, const CallArgs& a) { return search_impl(in, s, a, "index"); }
Value s_rindex(Interpreter& in, const Value& s, const CallArgs& a) { return search_impl(in, s, a, "rindex"); }
Value s_count(Interpreter& in, const Value& s, const CallArgs& a) { return search_impl(in, s, a, "count"); }

Value s_join(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "join", {"iterable"});
  if (!p.get(0)) in.fail("join() takes exactly one argument");
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(*p.get(0))) {
    if (!item.is_string()) in.fail("sequence item: expected str instance, " + item.type_name() + " found");
    if (!first) out += s.as_string();
    first = false;
    out += item.as_string();
  }
  return Value(std::move(out));
}

template <bool (*Pred)(char32_t)>
Value char_class(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "is*", {});
  const std::u32string u = decode_utf8(s.as_string());
  if (u.empty()) return Value(false);
  for (char32_t c : u)
    if (!Pred(c)) return Value(false);
  return Value(true);
}
bool is_alnum(char32_t c) { return is_alpha(c) || is_decimal(c); }

// islower / isupper: at least one cased character, and all cased ones in that case.
template <bool Upper>
Value case_class(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, Upper ? "isupper" : "islower", {});
  bool any = false;
  for (char32_t c : decode_utf8(s.as_string())) {
    if (Upper ? is_lower(c) : is_upper(c)) return Value(false);
    any = any || is_cased(c);
  }
  return Value(any);
}

Value pad_impl(Interpreter& in, const Value& s, const CallArgs& a, char how) {
  Args p(in, a, how == 'z' ? "zfill" : "ljust", {"width", "fillchar"});
  const int64_t width = to_int_arg(in, p.get_or(0, Value(0)), "width");
  const std::string fill = how == 'z' ? "0" : py_str(p.get_or(1, Value(" ")));
  std::string str = s.as_string();
  const int64_t len = static_cast<int64_t>(utf8_length(str));
  if (width <= len) return s;
  std::string pad;
  for (int64_t i = 0; i < width - len; ++i) pad += fill;
  if (how == 'l') return Value(str + pad);
  if (how == 'r') return Value(pad + str);
  if (!str.empty() && (str[0] == '-' || str[0] == '+')) return Value(str.substr(0, 1) + pad + str.substr(1));
  return Value(pad + str);
}
Value s_zfill(Interpreter& in, const Value& s, const CallArgs& a) { return pad_impl(in, s, a, 'z'); }
Value s_ljust(Interpreter& in, const Value& s, const CallArgs& a) { return pad_impl(in, s, a, 'l'); }
Value s_rjust(Interpreter& in, const Value& s, const CallArgs& a) { return pad_impl(in, s, a, 'r'); }

Value partition_impl(Interpreter& in, const Value& s, const CallArgs& a, bool right) {
  Args p(in, a, right ? "rpartition" : "partition", {"sep"});
  if (!p.get(0)) in.fail("partition() takes exactly one argument");
  const std::string& str = s.as_string();
  const std::string& sep = to_str_arg(in, *p.get(0), "sep");
  if (sep.empty()) in.fail("empty separator");
  const size_t pos = right ? str.rfind(sep) : str.find(sep);
  if (pos == std::string::npos)
    return right ? Value::list({Value(""), Value(""), s}, true) : Value::list({s, Value(""), Value("")}, true);
  return Value::list({Value(str.substr(0, pos)), Value(sep), Value(str.substr(pos + sep.size()))}, true);
}
Value s_partition(Interpreter& in, const Value& s, const CallArgs& a) { return partition_impl(in, s, a, false); }
Value s_rpartition(Interpreter& in, const Value& s, const CallArgs& a) { return partition_impl(in, s, a, true); }

Value s_removeprefix(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "removeprefix", {"prefix"});
  const std::string& x = to_str_arg(in, p.get_or(0, Value("")), "prefix");
  const std::string& str = s.as_string();
  return str.compare(0, x.size(), x) == 0 ? Value(str.substr(x.size())) : s;
}
Value s_removesuffix(Interpreter& in, const Value& s, const CallArgs& a) {
  Args p(in, a, "removesuffix", {"suffix"});
  const std::string& x = to_str_arg(in, p.get_or(0, Value("")), "suffix");
  const std::string& str = s.as_string();
  if (!x.empty() && x.size() <= str.size() && str.compare(str.size() - x.size(), x.size(), x) == 0)
    return Value(str.substr(0, str.size() - x.size()));
  return s;
}

Value s_format(Interpreter& in, const Value& s, const CallArgs& a) { return str_format(in, s.as_string(), a); }

// ---- dict ----

Value d_get(Interpreter& in, const Value& d, const CallArgs& a) {
  Args p(in, a, "get", {"key", "default"});
  if (!p.get(0)) in.fail("get expected at least 1 argument, got 0");
  if (p.get(0)->is_string())
    if (const Value* v = d.as_dict().find(p.get(0)->as_string())) return *v;
  return p.get_or(1, Value::none());
}
Value d_items(Interpreter& in, const Value& d, const CallArgs& a) {
  Args p(in, a, "items", {});
  std::vector<Value> out;
  for (const auto& [k, v] : d.as_dict().items) out.push_back(Value::list({Value(k), v}, true));
  return Value::list(std::move(out));
}
Value d_keys(Interpreter& in, const Value& d, const CallArgs& a) {
  Args p(in, a, "keys", {});
  std::vector<Value> out;
  for (const auto& kv : d.as_dict().items) out.emplace_back(kv.first);
  return Value::list(std::move(out));
}
Value d_values(Interpreter& in, const Value& d, const CallArgs& a) {
  Args p(in, a, "values", {});
  std::vector<Value> out;
  for (const auto& kv : d.as_dict().items) out.push_back(kv.second);
  return Value::list(std::move(out));
}
Value copy_self(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "copy", {});
  return v.is_dict() ? Value::dict(v.as_dict()) : Value::list(v.as_list().items);
}

// ---- list ----

Value l_index(Interpreter& in, const Value& l, const CallArgs& a) {
  Args p(in, a, "index", {"value"});
  const auto& items = l.as_list().items;
  for (size_t i = 0; i < items.size(); ++i)
    if (p.get(0) && py_equal(items[i], *p.get(0))) return Value(static_cast<int64_t>(i));
  in.fail(py_repr(p.get_or(0, Value::none())) + " is not in list");
}
Value l_count(Interpreter& in, const Value& l, const CallArgs& a) {
  Args p(in, a, "count", {"value"});
  int64_t n = 0;
  for (const Value& x : l.as_list().items) n += p.get(0) && py_equal(x, *p.get(0));
  return Value(n);
}

struct MethodEntry {
  const char* name;
  Method fn;
};

const MethodEntry kStrMethods[] = {
    {"strip", s_strip}, {"lstrip", s_lstrip}, {"rstrip", s_rstrip}, {"split", s_split}, {"rsplit", s_rsplit},
    {"splitlines", s_splitlines}, {"startswith", s_startswith}, {"endswith", s_endswith}, {"upper", s_upper},
    {"lower", s_lower}, {"title", s_title}, {"capitalize", s_capitalize}, {"replace", s_replace},
    {"find", s_find}, {"rfind", s_rfind}, {"index", s_index}, {"rindex", s_rindex}, {"count", s_count},
    {"join", s_join}, {"isdigit", char_class<is_decimal>}, {"isdecimal", char_class<is_decimal>},
    {"isnumeric", char_class<is_decimal>}, {"isalpha", char_class<is_alpha>}, {"isalnum", char_class<is_alnum>},
    {"isspace", char_class<is_py_space>}, {"islower", case_class<false>}, {"isupper", case_class<true>},
    {"zfill", s_zfill}, {"ljust", s_ljust}, {"rjust", s_rjust}, {"partition", s_partition},
    {"rpartition", s_rpartition}, {"removeprefix", s_removeprefix}, {"removesuffix", s_removesuffix},
    {"format", s_format},
};
const MethodEntry kDictMethods[] = {
    {"get", d_get}, {"items", d_items}, {"keys", d_keys}, {"values", d_values}, {"copy", copy_self},
};
const MethodEntry kListMethods[] = {{"index", l_index}, {"count", l_count}, {"copy", copy_self}};
const char* kUnsafeDict[] = {"pop", "popitem", "setdefault", "update", "clear", "fromkeys"};
const char* kUnsafeList[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
Method lookup(const MethodEntry (&table)[N], const std::string& name) {
  for (const auto& e : table)
    if (name == e.name) return e.fn;
  return nullptr;
}

}  // namespace

std::optional<Value> find_method(const Value& obj, const std::string& name) {
  Method m = nullptr;
  const char* type = nullptr;
  if (obj.is_string()) {
    m = lookup(kStrMethods, name);
  } else if (obj.is_dict()) {
    m = lookup(kDictMethods, name);
    for (const char* u : kUnsafeDict)
      if (name == u) type = "dict";
  } else if (obj.is_list() && !obj.is_tuple()) {
    m = lookup(kListMethods, name);
    for (const char* u : kUnsafeList)
      if (name == u) type = "list";
  } else if (obj.is_tuple()) {
    if (name == "index" || name == "count") m = lookup(kListMethods, name);
  }
  if (type) return Value::undefined("access to attribute '" + name + "' of '" + type + "' object is unsafe.");
  if (!m) return std::nullopt;
  return Value::callable(name, [m, obj](Interpreter& in, const CallArgs& a) { return m(in, obj, a); });
}

namespace {

Value g_range(Interpreter& in, const CallArgs& a) {
  if (!a.kw.empty()) in.fail("range() takes no keyword arguments");
  if (a.pos.empty() || a.pos.size() > 3) in.fail("range expected 1 to 3 arguments");
  int64_t start = 0, stop = 0, step = 1;
  if (a.pos.size() == 1) {
    stop = to_int_arg(in, a.pos[0], "range() argument");
  } else {
    start = to_int_arg(in, a.pos[0], "range() argument");
    stop = to_int_arg(in, a.pos[1], "range() argument");
    if (a.pos.size() == 3) step = to_int_arg(in, a.pos[2], "range() argument");
  }
  if (step == 0) in.fail("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    if (out.size() >= 100000) in.fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    out.emplace_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;  // the next value lies past any int64 stop
  }
  return Value::list(std::move(out));
}

void check_ns_name(Interpreter& in, const std::string& name) {
  if (!name.empty() && name[0] == '_') {
    in.fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got " + py_str_repr(name) +
            ". Please rename the attribute.");
  }
}

// dict(mapping or pairs, **kwargs): shared by dict() and namespace().
Dict build_dict(Interpreter& in, const CallArgs& a, const char* fn) {
  if (a.pos.size() > 1) in.fail(std::string(fn) + " expected at most 1 positional argument");
  Dict d;
  if (!a.pos.empty()) {
    const Value& src = a.pos[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : in.iterate(src)) {
        std::vector<Value> kv = in.iterate(pair);
        if (kv.size() != 2 || !kv[0].is_string()) in.fail(std::string(fn) + ": expected (str, value) pairs");
        d.set(kv[0].as_string(), kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kw) d.set(k, v);
  return d;
}

}  // namespace

void install_globals(Scope& scope) {
  scope.set("range", Value::callable("range", g_range));
  scope.set("dict", Value::callable("dict", [](Interpreter& in, const CallArgs& a) {
              return Value::dict(build_dict(in, a, "dict"));
            }));
  scope.set("namespace", Value::callable("namespace", [](Interpreter& in, const CallArgs& a) {
              auto ns = std::make_shared<Namespace>();
              ns->attrs = build_dict(in, a, "namespace");
              for (const auto& kv : ns->attrs.items) check_ns_name(in, kv.first);
              return Value::ns(std::move(ns));
            }));
  scope.set("raise_exception", Value::callable("raise_exception", [](Interpreter& in, const CallArgs& a) -> Value {
              const std::string msg = a.pos.empty() ? std::string() : py_str(a.pos[0]);
              in.fail("raise_exception: " + msg);
            }));
  scope.set("strftime_now", Value::callable("strftime_now", [](Interpreter& in, const CallArgs& a) {
              Args p(in, a, "strftime_now", {"format"});
              const std::string& fmt = to_str_arg(in, p.get_or(0, Value("")), "format");
              const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
              std::tm tm{};
              localtime_r(&now, &tm);
              char buf[512];
              const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
              return Value(std::string(buf, n));
            }));
}

}  // namespace locr::jinja
