// Values of the chat-template interpreter, with Python semantics where templates can see them:
// truthiness, ==/< between types, str() and repr() (what `{{ x }}` prints), and json.dumps as
// transformers' `tojson` filter calls it. Dicts keep insertion order, like Python's.
//
// Not here: operators, attribute lookup and calls (jinja_eval), filters and methods
// (jinja_builtins). Values are immutable once built, as in transformers' ImmutableSandbox;
// only a Namespace is shared and mutable, which is what `{% set ns.x = ... %}` needs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace locr::jinja {

class Value;
class Interpreter;

struct List {
  std::vector<Value> items;
  bool is_tuple = false;  // only changes repr: (1, 2) vs [1, 2]; a tuple never equals a list
};

// Python dict with string keys, in insertion order. Lookups are linear: template dicts are small.
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  void set(const std::string& key, Value value);  // replaces in place or appends
};

// jinja2.utils.Namespace: attribute bag that `{% set ns.attr = ... %}` may write to.
struct Namespace {
  Dict attrs;
};

// Positional and keyword arguments of a call, as evaluated.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  int line = 0;
};

// A builtin function, a bound method (`'x'.upper`), a macro or a loop helper.
struct Callable {
  std::string name;
  std::function<Value(Interpreter&, const CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kNamespace, kCallable };

  Value() : v_(Undef{}) {}  // undefined
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}
  Value(const char* s) : Value(std::string(s)) {}

  // `hint` is what an error says when the undefined value is used: "'foo' is undefined".
  static Value undefined(std::string hint);
  static Value none();
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(Dict d);
  static Value ns(std::shared_ptr<Namespace> n);
  static Value callable(std::string name, std::function<Value(Interpreter&, const CallArgs&)> fn);

  // Throws locr::Error (kLimit) for input nested deeper than 256 levels.
  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const { return is_list() && as_list().is_tuple; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_callable() const { return kind() == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;  // int or bool
  double as_double() const;  // int, bool or float
  const std::string& as_string() const { return *std::get<StrPtr>(v_); }
  const List& as_list() const { return *std::get<ListPtr>(v_); }
  const Dict& as_dict() const { return *std::get<DictPtr>(v_); }
  Namespace& as_namespace() const { return *std::get<NsPtr>(v_); }
  const Callable& as_callable() const { return *std::get<FnPtr>(v_); }
  const std::string& undefined_hint() const;

  bool truthy() const;
  // Python's type name as error messages use it: 'str', 'int', 'dict', 'NoneType', ...
  std::string type_name() const;

 private:
  struct Undef {
    std::shared_ptr<const std::string> hint;
  };
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const List>;
  using DictPtr = std::shared_ptr<const Dict>;
  using NsPtr = std::shared_ptr<Namespace>;
  using FnPtr = std::shared_ptr<const Callable>;
  std::variant<Undef, std::nullptr_t, bool, int64_t, double, StrPtr, ListPtr, DictPtr, NsPtr, FnPtr> v_;
};

// Python str(): what `{{ v }}` and `~` produce. Undefined prints as "".
std::string py_str(const Value& v);
// Python repr(): how list and dict elements print.
std::string py_repr(const Value& v);
// repr() of a float: shortest round-trip digits, "1.0", "1e+16", "inf", "nan".
std::string py_float_repr(double d);
// repr() of a str: single quotes unless the text holds ' and no ".
std::string py_str_repr(const std::string& s);

// Python ==. Lists never equal tuples; 1 == 1.0 == True.
bool py_equal(const Value& a, const Value& b);
// Python <. Sets *ok to false (and returns false) when the types do not order, e.g. str < int.
bool py_less(const Value& a, const Value& b, bool* ok);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as Python writes it. `indent` is
// nullptr for none; otherwise the per-level indent string. Sets *bad to the type that could not
// be serialised (e.g. "Undefined") and returns "" on failure.
struct JsonDumpOptions {
  bool ensure_ascii = false;
  const std::string* indent = nullptr;
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};
std::string py_json_dumps(const Value& v, const JsonDumpOptions& opt, std::string* bad);

}  // namespace locr::jinja
