// Operators of the chat-template interpreter with Python semantics: int arithmetic stays exact
// (floor division and modulo round toward negative infinity), `/` always gives a float, `+`
// concatenates strings and lists, `*` repeats them, `~` joins the str() of both sides;
// comparisons and `in`; slicing with CPython's index clamping.
//
// Not here: `and`/`or`/`not` (short-circuit, in eval.cc). Python's arbitrary-precision ints
// are int64 here; overflow is an error rather than a silent wrap. `'%s' % x` is not supported.
#include <cmath>
#include <limits>
#include <optional>

#include "jinja/eval.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double a, double b) {  // Python float %: result has the sign of b
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  if (r == 0) r = std::copysign(0.0, b);
  return r;
}

}  // namespace

Value Interpreter::binop(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(py_str(a) + py_str(b));
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  const std::string unsupported =
      "unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'";
  const std::string overflow = "integer overflow in '" + op + "'";

  if (a.is_number() && b.is_number()) {
    const bool floats = a.is_float() || b.is_float();
    if (op == "/") {
      if (b.as_double() == 0) fail("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (floats) {
      const double x = a.as_double(), y = b.as_double();
      if (op == "+") return Value(x + y);
      if (op == "-") return Value(x - y);
      if (op == "*") return Value(x * y);
      if (op == "//") {
        if (y == 0) fail("float floor division by zero");
        return Value(std::floor(x / y));
      }
      if (op == "%") {
        if (y == 0) fail("float modulo");
        return Value(float_mod(x, y));
      }
      if (op == "**") {
        if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
        return Value(std::pow(x, y));
      }
      fail(unsupported);
    }
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) fail(overflow);
      return Value(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) fail(overflow);
      return Value(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) fail(overflow);
      return Value(r);
    }
    if (op == "//" || op == "%") {
      if (y == 0) fail("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) fail(overflow);
      return Value(op == "//" ? floor_div(x, y) : floor_mod(x, y));
    }
    if (op == "**") {
      if (y < 0) {
        if (x == 0) fail("0.0 cannot be raised to a negative power");
        return Value(std::pow(static_cast<double>(x), static_cast<double>(y)));
      }
      int64_t result = 1, base = x, e = y;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(result, base, &result)) fail(overflow);
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail(overflow);
      }
      return Value(result);
    }
    fail(unsupported);
  }

  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> items = a.as_list().items;
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string()) fail("can only concatenate str (not \"" + b.type_name() + "\") to str");
    if (a.is_list() && !a.is_tuple()) fail("can only concatenate list (not \"" + b.type_name() + "\") to list");
    fail(unsupported);
  }
  if (op == "*") {
    const Value* seq = (a.is_string() || a.is_list()) ? &a : (b.is_string() || b.is_list()) ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq && (count->is_int() || count->is_bool())) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      if (seq->is_string()) {
        if (n > 0 && seq->as_string().size() > (size_t{1} << 30) / static_cast<size_t>(n)) fail("repeated string is too long");
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq->as_string();
        return Value(std::move(out));
      }
      if (n > 0 && seq->as_list().items.size() > (size_t{1} << 24) / static_cast<size_t>(n)) fail("repeated list is too long");
      std::vector<Value> out;
      for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq->as_list().items.begin(), seq->as_list().items.end());
      return Value::list(std::move(out), seq->is_tuple());
    }
  }
  if (op == "%" && a.is_string()) fail("printf-style string formatting ('...' % x) is not supported");
  fail(unsupported);
}

Value Interpreter::slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto index = [&](const Value& v) -> std::optional<int64_t> {
    if (v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) fail("slice indices must be integers or None");
    return v.as_int();
  };
  const std::optional<int64_t> step_o = index(step_v);
  const int64_t step = step_o.value_or(1);
  if (step == 0) fail("slice step cannot be zero");
  std::u32string chars;
  int64_t len = 0;
  if (obj.is_string()) {
    chars = decode_utf8(obj.as_string());
    len = static_cast<int64_t>(chars.size());
  } else if (obj.is_list()) {
    len = static_cast<int64_t>(obj.as_list().items.size());
  } else {
    fail("'" + obj.type_name() + "' object is not subscriptable");
  }
  // CPython's PySlice_AdjustIndices.
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? len - 1 : len;
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < 0) x = lower;
    } else if (x >= len) {
      x = upper;
    }
    return x;
  };
  const int64_t start = adjust(index(start_v), step < 0 ? upper : lower);
  const int64_t stop = adjust(index(stop_v), step < 0 ? lower : upper);
  std::vector<int64_t> picks;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) picks.push_back(i);
  if (obj.is_string()) {
    std::u32string out;
    for (int64_t i : picks) out.push_back(chars[static_cast<size_t>(i)]);
    return Value(encode_utf8(out));
  }
  std::vector<Value> out;
  for (int64_t i : picks) out.push_back(obj.as_list().items[static_cast<size_t>(i)]);
  return Value::list(std::move(out), obj.is_tuple());
}

bool Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Value::Kind::kList:
      for (const auto& x : container.as_list().items)
        if (py_equal(x, item)) return true;
      return false;
    case Value::Kind::kUndefined:
      return false;
    default:
      fail("argument of type '" + container.type_name() + "' is not iterable");
  }
}

bool Interpreter::less(const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  bool ok = true;
  const bool r = py_less(a, b, &ok);
  if (!ok) fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
  return r;
}

bool Interpreter::compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return less(a, b) || py_equal(a, b);
  return less(b, a) || py_equal(a, b);  // >=
}

}  // namespace locr::jinja
