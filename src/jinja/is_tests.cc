// Jinja tests (`x is defined`, `x is string`, `x is equalto y`, ...) as jinja2/tests.py defines
// them, including Python's quirks: booleans are numbers, an undefined value is iterable and a
// sequence, dicts are sequences.
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

const Value& arg(Interpreter& in, const CallArgs& a, const char* test) {
  if (a.pos.size() != 1 || !a.kw.empty()) in.fail(std::string("test '") + test + "' takes exactly one argument");
  return a.pos[0];
}

void no_args(Interpreter& in, const CallArgs& a, const char* test) {
  if (!a.pos.empty() || !a.kw.empty()) in.fail(std::string("test '") + test + "' takes no arguments");
}

bool t_defined(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "defined"); return !v.is_undefined(); }
bool t_undefined(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "undefined"); return v.is_undefined(); }
bool t_none(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "none"); return v.is_none(); }
bool t_boolean(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "boolean"); return v.is_bool(); }
bool t_false(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "false"); return v.is_bool() && !v.as_bool(); }
bool t_true(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "true"); return v.is_bool() && v.as_bool(); }
bool t_integer(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "integer"); return v.is_int(); }
bool t_float(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "float"); return v.is_float(); }
bool t_number(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "number"); return v.is_number(); }
bool t_string(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "string"); return v.is_string(); }
bool t_mapping(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "mapping"); return v.is_dict(); }
bool t_iterable(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "iterable");
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_callable(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "callable");
  return v.is_callable() || v.is_undefined();
}
bool t_escaped(Interpreter& in, const Value&, const CallArgs& a) { no_args(in, a, "escaped"); return false; }

double num(Interpreter& in, const Value& v) {
  if (v.is_undefined()) in.fail_undefined(v);
  if (!v.is_number()) in.fail("unsupported operand type for %: '" + v.type_name() + "'");
  return v.as_double();
}

bool t_odd(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "odd");
  if (!v.is_float() && v.is_number()) return v.as_int() % 2 != 0;
  return std::fabs(std::fmod(num(in, v), 2.0)) == 1.0;
}
bool t_even(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "even");
  if (!v.is_float() && v.is_number()) return v.as_int() % 2 == 0;
  return std::fmod(num(in, v), 2.0) == 0.0;
}
bool t_divisibleby(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& d = arg(in, a, "divisibleby");
  if (!v.is_float() && !d.is_float() && v.is_number() && d.is_number()) {
    if (d.as_int() == 0) in.fail("integer division or modulo by zero");
    return v.as_int() % d.as_int() == 0;
  }
  const double y = num(in, d);
  if (y == 0) in.fail("float modulo");
  return std::fmod(num(in, v), y) == 0.0;
}

bool t_eq(Interpreter& in, const Value& v, const CallArgs& a) { return py_equal(v, arg(in, a, "eq")); }
bool t_ne(Interpreter& in, const Value& v, const CallArgs& a) { return !py_equal(v, arg(in, a, "ne")); }
bool t_lt(Interpreter& in, const Value& v, const CallArgs& a) { return in.less(v, arg(in, a, "lt")); }
bool t_gt(Interpreter& in, const Value& v, const CallArgs& a) { return in.less(arg(in, a, "gt"), v); }
bool t_le(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& o = arg(in, a, "le");
  return in.less(v, o) || py_equal(v, o);
}
bool t_ge(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& o = arg(in, a, "ge");
  return in.less(o, v) || py_equal(v, o);
}
bool t_in(Interpreter& in, const Value& v, const CallArgs& a) { return in.contains(arg(in, a, "in"), v); }

// `is sameas`: Python identity. Scalars that CPython interns (None, bools, small ints) compare by
// value; containers by identity of their storage.
bool t_sameas(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& o = arg(in, a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::kNone: case Value::Kind::kUndefined: return true;
    case Value::Kind::kBool: return v.as_bool() == o.as_bool();
    case Value::Kind::kInt: return v.as_int() == o.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Value::Kind::kString: return &v.as_string() == &o.as_string();
    case Value::Kind::kList: return &v.as_list() == &o.as_list();
    case Value::Kind::kDict: return &v.as_dict() == &o.as_dict();
    default: return py_equal(v, o);
  }
}

bool cased_all(const std::string& s, bool upper) {
  bool any = false;
  for (char32_t c : decode_utf8(s)) {
    if (upper ? is_lower(c) : is_upper(c)) return false;
    any = any || is_cased(c);
  }
  return any;
}
bool t_lower(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "lower"); return cased_all(py_str(v), false); }
bool t_upper(Interpreter& in, const Value& v, const CallArgs& a) { no_args(in, a, "upper"); return cased_all(py_str(v), true); }
bool t_filter(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "filter");
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(in, a, "test");
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

struct Entry {
  const char* name;
  TestFn fn;
};

const Entry kTests[] = {
    {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
    {"false", t_false}, {"true", t_true}, {"integer", t_integer}, {"float", t_float}, {"number", t_number},
    {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable}, {"sequence", t_iterable},
    {"callable", t_callable}, {"escaped", t_escaped}, {"odd", t_odd}, {"even", t_even},
    {"divisibleby", t_divisibleby}, {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne},
    {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"le", t_le}, {"<=", t_le}, {"gt", t_gt},
    {"greaterthan", t_gt}, {">", t_gt}, {"ge", t_ge}, {">=", t_ge}, {"in", t_in}, {"sameas", t_sameas},
    {"lower", t_lower}, {"upper", t_upper}, {"filter", t_filter}, {"test", t_test},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& e : kTests)
    if (name == e.name) return e.fn;
  return nullptr;
}

}  // namespace locr::jinja
