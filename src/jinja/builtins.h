// Builtins of the chat-template interpreter: Jinja's filters and tests, the str/dict/list
// methods Python exposes to templates, and the globals transformers installs (raise_exception,
// strftime_now, namespace, dict) plus Jinja's range.
//
// Filters live in filters*.cc, tests in is_tests.cc, methods and globals in
// methods.cc, str.format in format.cc. Builtins report
// errors through Interpreter::fail so the message names the template line.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/eval.h"

namespace locr::jinja {

using FilterFn = Value (*)(Interpreter&, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& input, const CallArgs& args);

// nullptr if the name is not an implemented filter/test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// Text and number filters (filters_text.cc); find_filter also searches these.
FilterFn find_text_filter(std::string_view name);
// Jinja filters that are recognised but not implemented (they fail when used, not at parse).
bool is_known_unimplemented_filter(std::string_view name);

// `obj.name` for a str, dict or list method: a bound callable, an undefined value that fails when
// called (methods the immutable sandbox refuses, like list.append), or nullopt if Python has no
// such method.
std::optional<Value> find_method(const Value& obj, const std::string& name);

// str.format(*args, **kwargs) on `fmt` (format.cc).
Value str_format(Interpreter& in, const std::string& fmt, const CallArgs& args);

// Installs range, dict, namespace, raise_exception and strftime_now.
void install_globals(Scope& scope);

// Binds positional and keyword arguments to parameter names, Python style.
class Args {
 public:
  Args(Interpreter& in, const CallArgs& args, const char* fn, std::initializer_list<const char*> names);
  const Value* get(size_t i) const { return i < bound_.size() && bound_[i].has_value() ? &*bound_[i] : nullptr; }
  Value get_or(size_t i, Value def) const { return get(i) ? *get(i) : std::move(def); }
  // Positional arguments beyond the named ones (for *args).
  const std::vector<Value>& rest() const { return rest_; }

 private:
  std::vector<std::optional<Value>> bound_;
  std::vector<Value> rest_;
};

// Helpers shared by filters and methods.
int64_t to_int_arg(Interpreter& in, const Value& v, const char* what);
const std::string& to_str_arg(Interpreter& in, const Value& v, const char* what);

}  // namespace locr::jinja
