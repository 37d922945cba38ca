// Jinja filters on sequences and mappings (first, join, map, selectattr, sort, items, ...), each
// following jinja2/filters.py (3.1), and the filter registry. Text and number filters, and
// transformers' `tojson`, are in filters_text.cc.
//
// Not implemented (they fail with a clear message when used): batch, filesizeformat, format,
// groupby, pprint, random, slice, striptags, truncate, urlencode, urlize, wordwrap, xmlattr.
#include <algorithm>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

using Fn = FilterFn;

// Follows a dotted attribute path ("meta.k", "items.0") with item lookup, as make_attrgetter.
Value attr_path(Interpreter& in, Value item, const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string::npos) dot = path.size();
    const std::string part = path.substr(start, dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    item = in.getitem(item, digits ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    start = dot + 1;
  }
  return item;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(py_lower(v.as_string())) : v; }

// Sort / min / max / unique key: optional comma-separated attributes, optional case folding.
std::vector<Value> sort_key(Interpreter& in, const Value& item, const Value* attribute, bool case_sensitive) {
  std::vector<Value> key;
  if (!attribute || attribute->is_none()) {
    key.push_back(case_sensitive ? item : ignore_case(item));
    return key;
  }
  if (attribute->is_int()) {
    Value v = in.getitem(item, *attribute);
    key.push_back(case_sensitive ? v : ignore_case(v));
    return key;
  }
  const std::string comma = ",";
  for (const std::string& part : py_split(to_str_arg(in, *attribute, "attribute"), &comma, -1, false)) {
    Value v = attr_path(in, item, part);
    key.push_back(case_sensitive ? v : ignore_case(v));
  }
  return key;
}

bool key_less(Interpreter& in, const std::vector<Value>& a, const std::vector<Value>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (py_equal(a[i], b[i])) continue;
    return in.less(a[i], b[i]);
  }
  return a.size() < b.size();
}

Value f_default(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "default", {"default_value", "boolean"});
  if (v.is_undefined() || (p.get_or(1, Value(false)).truthy() && !v.truthy())) return p.get_or(0, Value(""));
  return v;
}

Value f_length(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "length", {});
  switch (v.kind()) {
    case Value::Kind::kUndefined: return Value(0);
    case Value::Kind::kString: return Value(static_cast<int64_t>(utf8_length(v.as_string())));
    case Value::Kind::kList: return Value(static_cast<int64_t>(v.as_list().items.size()));
    case Value::Kind::kDict: return Value(static_cast<int64_t>(v.as_dict().items.size()));
    default: in.fail("object of type '" + v.type_name() + "' has no len()");
  }
}

Value f_first(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "first", {});
  std::vector<Value> items = in.iterate(v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "last", {});
  std::vector<Value> items = in.iterate(v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_list(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "list", {});
  return Value::list(in.iterate(v));
}

Value f_reverse(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "reverse", {});
  if (v.is_string()) {
    std::u32string u = decode_utf8(v.as_string());
    std::reverse(u.begin(), u.end());
    return Value(encode_utf8(u));
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_items(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "items", {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) in.fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, item] : v.as_dict().items) out.push_back(Value::list({Value(k), item}, true));
  return Value::list(std::move(out));
}

Value f_join(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "join", {"d", "attribute"});
  const std::string sep = py_str(p.get_or(0, Value("")));
  const Value* attribute = p.get(1);
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += py_str(attribute && !attribute->is_none() ? attr_path(in, item, py_str(*attribute)) : item);
  }
  return Value(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, const CallArgs& a) {
  std::vector<Value> out;
  if (a.pos.empty()) {
    Args p(in, a, "map", {"attribute", "default"});
    if (!p.get(0)) in.fail("map() requires a filter name or attribute=");
    const std::string attribute = py_str(*p.get(0));
    for (const Value& item : in.iterate(v)) {
      Value r = attr_path(in, item, attribute);
      if (r.is_undefined() && p.get(1)) r = *p.get(1);
      out.push_back(std::move(r));
    }
    return Value::list(std::move(out));
  }
  const std::string name = to_str_arg(in, a.pos[0], "filter name");
  CallArgs rest = a;
  rest.pos.erase(rest.pos.begin());
  for (const Value& item : in.iterate(v)) out.push_back(in.filter(name, item, rest));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr share this: keep items whose (attribute of the) value
// passes the named test, or is truthy when no test is named.
Value select_impl(Interpreter& in, const Value& v, const CallArgs& a, bool with_attr, bool keep_if) {
  size_t k = 0;
  std::string attribute;
  if (with_attr) {
    if (a.pos.empty()) in.fail("missing attribute name");
    attribute = to_str_arg(in, a.pos[0], "attribute");
    k = 1;
  }
  std::string test;
  CallArgs targs;
  targs.line = a.line;
  if (a.pos.size() > k) {
    test = to_str_arg(in, a.pos[k], "test name");
    targs.pos.assign(a.pos.begin() + static_cast<long>(k) + 1, a.pos.end());
    targs.kw = a.kw;
  }
  std::vector<Value> out;
  for (const Value& item : in.iterate(v)) {
    const Value probe = with_attr ? attr_path(in, item, attribute) : item;
    const bool pass = test.empty() ? probe.truthy() : in.test(test, probe, targs);
    if (pass == keep_if) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, const CallArgs& a) { return select_impl(in, v, a, false, true); }
Value f_reject(Interpreter& in, const Value& v, const CallArgs& a) { return select_impl(in, v, a, false, false); }
Value f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) { return select_impl(in, v, a, true, true); }
Value f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) { return select_impl(in, v, a, true, false); }

Value f_sort(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "sort", {"reverse", "case_sensitive", "attribute"});
  const bool reverse = p.get_or(0, Value(false)).truthy();
  const bool cs = p.get_or(1, Value(false)).truthy();
  std::vector<Value> items = in.iterate(v);
  std::vector<std::pair<std::vector<Value>, Value>> keyed;
  for (auto& item : items) keyed.emplace_back(sort_key(in, item, p.get(2), cs), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? key_less(in, y.first, x.first) : key_less(in, x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) in.fail("dictsort expects a mapping, got " + v.type_name());
  const bool cs = p.get_or(0, Value(false)).truthy();
  const std::string by = py_str(p.get_or(1, Value("key")));
  if (by != "key" && by != "value") in.fail("You can only sort by either \"key\" or \"value\"");
  const bool reverse = p.get_or(2, Value(false)).truthy();
  std::vector<Value> pairs;
  for (const auto& [k, item] : v.as_dict().items) pairs.push_back(Value::list({Value(k), item}, true));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const size_t i = by == "key" ? 0 : 1;
    Value kx = x.as_list().items[i], ky = y.as_list().items[i];
    if (!cs) kx = ignore_case(kx), ky = ignore_case(ky);
    return reverse ? in.less(ky, kx) : in.less(kx, ky);
  });
  return Value::list(std::move(pairs));
}

Value f_unique(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "unique", {"case_sensitive", "attribute"});
  const bool cs = p.get_or(0, Value(false)).truthy();
  std::vector<std::vector<Value>> seen;
  std::vector<Value> out;
  for (const Value& item : in.iterate(v)) {
    std::vector<Value> key = sort_key(in, item, p.get(1), cs);
    bool dup = false;
    for (const auto& s : seen) dup = dup || (s.size() == key.size() && py_equal(Value::list(s), Value::list(key)));
    if (dup) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  Args p(in, a, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  const bool cs = p.get_or(0, Value(false)).truthy();
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  std::vector<Value> best_key = sort_key(in, items[0], p.get(1), cs);
  for (size_t i = 1; i < items.size(); ++i) {
    std::vector<Value> key = sort_key(in, items[i], p.get(1), cs);
    if (want_max ? key_less(in, best_key, key) : key_less(in, key, best_key)) best = i, best_key = std::move(key);
  }
  return items[best];
}
Value f_min(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, const CallArgs& a) { return min_max(in, v, a, true); }

// `+` as sum() applies it (numbers add, lists concatenate).
Value f_add(Interpreter& in, const Value& v, const CallArgs& a) {
  if (a.pos.size() != 1) in.fail("__add__ takes one argument");
  const Value& x = a.pos[0];
  if (v.is_number() && x.is_number()) {
    if (v.is_float() || x.is_float()) return Value(v.as_double() + x.as_double());
    int64_t r = 0;
    if (__builtin_add_overflow(v.as_int(), x.as_int(), &r)) in.fail("integer overflow in sum");
    return Value(r);
  }
  if (v.is_list() && x.is_list()) {
    std::vector<Value> items = v.as_list().items;
    items.insert(items.end(), x.as_list().items.begin(), x.as_list().items.end());
    return Value::list(std::move(items), v.is_tuple());
  }
  in.fail("unsupported operand type(s) for +: '" + v.type_name() + "' and '" + x.type_name() + "'");
}

Value f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "sum", {"attribute", "start"});
  Value total = p.get_or(1, Value(0));
  const Value* attribute = p.get(0);
  for (const Value& item : in.iterate(v)) {
    const Value x = attribute && !attribute->is_none() ? attr_path(in, item, py_str(*attribute)) : item;
    total = f_add(in, total, CallArgs{{x}, {}, a.line});
  }
  return total;
}

Value f_attr(Interpreter& in, const Value& v, const CallArgs& a) {
  Args p(in, a, "attr", {"name"});
  if (!p.get(0)) in.fail("attr() missing required argument 'name'");
  const std::string name = py_str(*p.get(0));
  if (v.is_namespace()) {
    const Value* x = v.as_namespace().attrs.find(name);
    if (x) return *x;
  } else if (auto m = find_method(v, name)) {
    return *m;
  }
  return Value::undefined(py_str_repr(v.type_name() + " object") + " has no attribute " + py_str_repr(name));
}

struct Entry {
  const char* name;
  Fn fn;
};

const Entry kFilters[] = {
    {"attr", f_attr}, {"count", f_length}, {"d", f_default}, {"default", f_default}, {"dictsort", f_dictsort},
    {"first", f_first}, {"items", f_items}, {"join", f_join}, {"last", f_last}, {"length", f_length},
    {"list", f_list}, {"map", f_map}, {"max", f_max}, {"min", f_min}, {"reject", f_reject},
    {"rejectattr", f_rejectattr}, {"reverse", f_reverse}, {"select", f_select}, {"selectattr", f_selectattr},
    {"sort", f_sort}, {"sum", f_sum}, {"unique", f_unique},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& e : kFilters)
    if (name == e.name) return e.fn;
  return find_text_filter(name);
}

bool is_known_unimplemented_filter(std::string_view name) {
  static const char* kNames[] = {"batch", "filesizeformat", "format", "groupby", "pprint", "random", "slice",
                                 "striptags", "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"};
  for (const char* n : kNames)
    if (name == n) return true;
  return false;
}

}  // namespace locr::jinja
