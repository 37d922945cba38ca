// Evaluator for parsed chat templates: runs statements, evaluates expressions with Python/Jinja
// semantics (scoping, undefined values, operators, attribute and item lookup as transformers'
// ImmutableSandboxedEnvironment does it) and renders text.
//
// Scoping follows Jinja: each loop iteration and each macro call gets a new scope whose parent is
// the enclosing one, `set` writes to the innermost scope (so it does not leak out of a loop; use a
// namespace), `if` does not open a scope. Filters, tests, methods and globals live in
// jinja_builtins; this file calls them by name.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "jinja/ast.h"

namespace locr::jinja {

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }
  void clear() { vars_.clear(); }
  // Clears this scope and every enclosing one: a macro stored outside its defining scope (say in
  // a namespace, `ns.m = m`) holds that scope, whose parents hold the namespace; a shared_ptr
  // cycle that only clearing the whole chain breaks.
  void clear_chain() {
    for (Scope* s = this; s != nullptr; s = s->parent_.get()) s->vars_.clear();
  }

 private:
  std::unordered_map<std::string, Value> vars_;
  std::shared_ptr<Scope> parent_;
};

class Interpreter {
 public:
  // `context` holds the render variables (a dict value); they shadow the builtin globals.
  explicit Interpreter(const Value& context);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  std::string render(const Body& body);

  // Services for builtins. Errors carry the line of the expression being evaluated.
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_undefined(const Value& undefined) const;
  Value call(const Value& fn, const CallArgs& args);
  Value getattr(const Value& obj, const std::string& name);
  Value getitem(const Value& obj, const Value& key);
  Value filter(const std::string& name, const Value& input, const CallArgs& args);
  bool test(const std::string& name, const Value& input, const CallArgs& args);
  // Python iteration: list items, dict keys, string characters; undefined is empty.
  std::vector<Value> iterate(const Value& v);
  bool contains(const Value& container, const Value& item);  // Python `in`
  // Python <; fails with a TypeError-like message if the types do not order.
  bool less(const Value& a, const Value& b);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using ScopePtr = std::shared_ptr<Scope>;

  Flow exec(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void assign(const Target& t, const Value& v, Scope& scope);
  Value eval(const Expr& e, const ScopePtr& scope);
  CallArgs eval_args(const Expr& e, size_t first, const ScopePtr& scope);
  Value binop(const std::string& op, const Value& a, const Value& b);
  bool compare(const std::string& op, const Value& a, const Value& b);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
  Value call_macro(const Stmt& macro, const ScopePtr& closure, const CallArgs& args);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope);

  ScopePtr root_;
  std::vector<ScopePtr> macro_scopes_;  // scopes holding macros, which point back at them
  int line_ = 0;
  int depth_ = 0;
};

}  // namespace locr::jinja
