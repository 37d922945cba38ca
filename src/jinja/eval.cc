// Chat-template evaluator (see eval.h).
#include "jinja/eval.h"

#include <optional>

#include "core/error.h"
#include "jinja/builtins.h"
#include "jinja/text.h"

namespace locr::jinja {
namespace {

constexpr int kMaxDepth = 200;  // nested macro calls; a runaway recursion fails cleanly

// Jinja's object_type_repr: "dict object", "None", ... used in undefined-value hints.
std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  return v.type_name() + " object";
}

Value missing_attr(const Value& obj, const std::string& name) {
  return Value::undefined(py_str_repr(object_type_repr(obj)) + " has no attribute " + py_str_repr(name));
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attr(obj, key.as_string());
  return Value::undefined(object_type_repr(obj) + " has no element " + py_repr(key));
}

}  // namespace

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::Interpreter(const Value& context) {
  auto globals = std::make_shared<Scope>(nullptr);
  install_globals(*globals);
  auto ctx = std::make_shared<Scope>(globals);
  if (context.is_dict())
    for (const auto& [k, v] : context.as_dict().items) ctx->set(k, v);
  root_ = std::make_shared<Scope>(ctx);
}

Interpreter::~Interpreter() {
  for (const auto& s : macro_scopes_) s->clear_chain();  // LeakSanitizer found the cycle
}

std::string Interpreter::render(const Body& body) {
  std::string out;
  exec(body, root_, out);
  return out;
}

void Interpreter::fail(const std::string& message) const {
  locr::fail(ErrorKind::kInvalidArgument, "chat template error on line ", line_, ": ", message);
}

void Interpreter::fail_undefined(const Value& undefined) const {
  const std::string& hint = undefined.undefined_hint();
  fail(hint.empty() ? "undefined value" : hint);
}

Interpreter::Flow Interpreter::exec(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec_stmt(*s, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, const ScopePtr& scope, std::string& out) {
  line_ = s.line;
  switch (s.kind) {
    case Stmt::Kind::kText:
      out += s.text;
      return Flow::kNormal;
    case Stmt::Kind::kPrint:
      out += py_str(eval(*s.expr, scope));
      return Flow::kNormal;
    case Stmt::Kind::kIf:
      for (const auto& [cond, body] : s.branches)
        if (!cond || eval(*cond, scope).truthy()) return exec(body, scope, out);
      return Flow::kNormal;
    case Stmt::Kind::kFor:
      return exec_for(s, scope, out);
    case Stmt::Kind::kSet:
      assign(s.target, eval(*s.expr, scope), *scope);
      return Flow::kNormal;
    case Stmt::Kind::kSetBlock: {
      std::string captured;
      exec(s.body, std::make_shared<Scope>(scope), captured);
      assign(s.target, apply_filters(s.filters, Value(std::move(captured)), scope), *scope);
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro: {
      const Stmt* macro = &s;
      ScopePtr closure = scope;  // scope -> macro -> scope is a cycle; ~Interpreter breaks it
      macro_scopes_.push_back(scope);
      scope->set(s.name, Value::callable(s.name, [this, macro, closure](Interpreter&, const CallArgs& args) {
        return call_macro(*macro, closure, args);
      }));
      return Flow::kNormal;
    }
    case Stmt::Kind::kBreak:
      return Flow::kBreak;
    case Stmt::Kind::kContinue:
      return Flow::kContinue;
    case Stmt::Kind::kFilterBlock: {
      std::string captured;
      exec(s.body, std::make_shared<Scope>(scope), captured);
      out += py_str(apply_filters(s.filters, Value(std::move(captured)), scope));
      return Flow::kNormal;
    }
    case Stmt::Kind::kWith: {
      auto inner = std::make_shared<Scope>(scope);
      for (const auto& [target, expr] : s.assigns) assign(target, eval(*expr, scope), *inner);
      return exec(s.body, inner, out);
    }
    case Stmt::Kind::kScope:
      return exec(s.body, scope, out);
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  std::vector<Value> items = iterate(eval(*s.expr, scope));
  if (s.cond) {  // `for x in xs if cond`: filtered before the loop, so loop.length counts survivors
    std::vector<Value> kept;
    for (auto& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(s.target, item, *probe);
      if (eval(*s.cond, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  // The else body is outside the loop: a break there belongs to an enclosing loop.
  if (items.empty()) return exec(s.else_body, std::make_shared<Scope>(scope), out);
  const int64_t n = static_cast<int64_t>(items.size());
  auto last_changed = std::make_shared<std::optional<Value>>();  // loop.changed() state, per loop
  for (int64_t i = 0; i < n; ++i) {
    auto iter = std::make_shared<Scope>(scope);
    Dict loop;
    loop.items.reserve(12);
    loop.items.emplace_back("index", Value(i + 1));
    loop.items.emplace_back("index0", Value(i));
    loop.items.emplace_back("revindex", Value(n - i));
    loop.items.emplace_back("revindex0", Value(n - i - 1));
    loop.items.emplace_back("first", Value(i == 0));
    loop.items.emplace_back("last", Value(i == n - 1));
    loop.items.emplace_back("length", Value(n));
    loop.items.emplace_back("depth", Value(1));
    loop.items.emplace_back("depth0", Value(0));
    loop.items.emplace_back("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
    loop.items.emplace_back("nextitem", i + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
    loop.items.emplace_back("cycle", Value::callable("cycle", [i](Interpreter& in, const CallArgs& a) {
      if (a.pos.empty()) in.fail("no items for cycling given");
      return a.pos[static_cast<size_t>(i) % a.pos.size()];
    }));
    loop.items.emplace_back("changed", Value::callable("changed", [last_changed](Interpreter&, const CallArgs& a) {
      Value args = Value::list(a.pos, true);
      if (*last_changed && py_equal(**last_changed, args)) return Value(false);
      *last_changed = std::move(args);
      return Value(true);
    }));
    iter->set("loop", Value::dict(std::move(loop)));
    assign(s.target, items[i], *iter);
    const Flow f = exec(s.body, iter, out);
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::assign(const Target& t, const Value& v, Scope& scope) {
  if (!t.ns_attr.empty()) {
    const Value* ns = scope.lookup(t.names[0]);
    if (!ns || !ns->is_namespace()) fail("cannot assign attribute on non-namespace object");
    if (t.ns_attr[0] == '_') {
      fail("Chat templates cannot store underscore-prefixed attributes on a namespace, but got " +
           py_str_repr(t.ns_attr) + ". Please rename the attribute.");
    }
    ns->as_namespace().attrs.set(t.ns_attr, v);
    return;
  }
  if (!t.is_tuple) {
    scope.set(t.names[0], v);
    return;
  }
  std::vector<Value> parts = iterate(v);
  if (parts.size() != t.names.size()) {
    fail(parts.size() > t.names.size()
             ? "too many values to unpack (expected " + std::to_string(t.names.size()) + ")"
             : "not enough values to unpack (expected " + std::to_string(t.names.size()) + ", got " +
                   std::to_string(parts.size()) + ")");
  }
  for (size_t i = 0; i < parts.size(); ++i) scope.set(t.names[i], parts[i]);
}

Value Interpreter::apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope) {
  for (const auto& f : filters) {
    line_ = f->line;
    v = filter(f->name, v, eval_args(*f, 1, scope));
  }
  return v;
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
  CallArgs a;
  for (size_t i = first; i < e.children.size(); ++i) a.pos.push_back(eval(*e.children[i], scope));
  for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v, scope));
  a.line = e.line;
  line_ = e.line;
  return a;
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  line_ = e.line;
  switch (e.kind) {
    case Expr::Kind::kConst:
      return e.value;
    case Expr::Kind::kName: {
      const Value* v = scope->lookup(e.name);
      return v ? *v : Value::undefined(py_str_repr(e.name) + " is undefined");
    }
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      for (const auto& c : e.children) items.push_back(eval(*c, scope));
      return Value::list(std::move(items), e.kind == Expr::Kind::kTuple);
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value k = eval(*e.children[i], scope);
        if (!k.is_string()) fail("dict keys must be strings in chat templates, got " + k.type_name());
        d.set(k.as_string(), eval(*e.children[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kGetattr: {
      Value obj = eval(*e.children[0], scope);
      line_ = e.line;
      return getattr(obj, e.name);
    }
    case Expr::Kind::kGetitem: {
      Value obj = eval(*e.children[0], scope);
      Value key = eval(*e.children[1], scope);
      line_ = e.line;
      return getitem(obj, key);
    }
    case Expr::Kind::kSlice: {
      Value obj = eval(*e.children[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.children[i + 1] ? eval(*e.children[i + 1], scope) : Value::none();
      line_ = e.line;
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: {
      Value fn = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return call(fn, args);
    }
    case Expr::Kind::kFilter: {
      Value input = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return filter(e.name, input, args);
    }
    case Expr::Kind::kTest: {
      Value input = eval(*e.children[0], scope);
      CallArgs args = eval_args(e, 1, scope);
      return Value(test(e.name, input, args));
    }
    case Expr::Kind::kNeg:
    case Expr::Kind::kPos: {
      Value v = eval(*e.children[0], scope);
      line_ = e.line;
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) fail("bad operand type for unary " + std::string(e.kind == Expr::Kind::kNeg ? "-" : "+") +
                               ": '" + v.type_name() + "'");
      if (e.kind == Expr::Kind::kPos) return v.is_bool() ? Value(v.as_int()) : v;
      return v.is_float() ? Value(-v.as_double()) : Value(-v.as_int());
    }
    case Expr::Kind::kNot:
      return Value(!eval(*e.children[0], scope).truthy());
    case Expr::Kind::kBinop: {
      Value a = eval(*e.children[0], scope);
      Value b = eval(*e.children[1], scope);
      line_ = e.line;
      return binop(e.name, a, b);
    }
    case Expr::Kind::kCompare: {
      Value left = eval(*e.children[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.children[i + 1], scope);
        line_ = e.line;
        if (!compare(e.ops[i], left, right)) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kAnd: {
      Value l = eval(*e.children[0], scope);
      return l.truthy() ? eval(*e.children[1], scope) : l;
    }
    case Expr::Kind::kOr: {
      Value l = eval(*e.children[0], scope);
      return l.truthy() ? l : eval(*e.children[1], scope);
    }
    case Expr::Kind::kCondExpr:
      if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
      if (e.children[2]) return eval(*e.children[2], scope);
      return Value::undefined("the inline if-expression on line " + std::to_string(e.line) +
                              " evaluated to false and no else section was defined.");
  }
  return Value();
}

Value Interpreter::call(const Value& fn, const CallArgs& args) {
  if (fn.is_undefined()) fail_undefined(fn);
  if (!fn.is_callable()) fail("'" + fn.type_name() + "' object is not callable");
  return fn.as_callable().fn(*this, args);
}

Value Interpreter::call_macro(const Stmt& m, const ScopePtr& closure, const CallArgs& args) {
  if (depth_ >= kMaxDepth) fail("maximum macro recursion depth exceeded");
  const size_t n = m.params.size();
  if (args.pos.size() > n && !m.uses_varargs)
    fail("macro '" + m.name + "' takes not more than " + std::to_string(n) + " argument(s)");
  auto s = std::make_shared<Scope>(closure);
  std::vector<bool> bound(n, false);
  for (size_t i = 0; i < n && i < args.pos.size(); ++i) s->set(m.params[i], args.pos[i]), bound[i] = true;
  Dict extra_kw;
  for (const auto& [k, v] : args.kw) {
    size_t i = 0;
    while (i < n && m.params[i] != k) ++i;
    if (i < n) {
      if (bound[i]) fail("macro '" + m.name + "' got multiple values for argument '" + k + "'");
      s->set(k, v);
      bound[i] = true;
    } else if (m.uses_kwargs) {
      extra_kw.set(k, v);
    } else {
      fail("macro '" + m.name + "' takes no keyword argument '" + k + "'");
    }
  }
  const size_t first_default = n - m.defaults.size();
  for (size_t i = 0; i < n; ++i) {
    if (bound[i]) continue;
    if (i >= first_default) {
      s->set(m.params[i], eval(*m.defaults[i - first_default], s));  // may use earlier params
    } else {
      s->set(m.params[i], Value::undefined("parameter " + py_str_repr(m.params[i]) + " was not provided"));
    }
  }
  std::vector<Value> extra_pos;
  for (size_t i = n; i < args.pos.size(); ++i) extra_pos.push_back(args.pos[i]);
  s->set("varargs", Value::list(std::move(extra_pos), true));
  s->set("kwargs", Value::dict(std::move(extra_kw)));
  const int saved_line = line_;
  ++depth_;
  std::string out;
  exec(m.body, s, out);
  --depth_;
  line_ = saved_line;
  return Value(std::move(out));
}

Value Interpreter::getattr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kUndefined:
      fail_undefined(obj);
    case Value::Kind::kDict: {
      if (auto m = find_method(obj, name)) return *m;  // Python attribute lookup comes first
      const Value* v = obj.as_dict().find(name);
      return v ? *v : missing_attr(obj, name);
    }
    case Value::Kind::kNamespace: {
      const Value* v = obj.as_namespace().attrs.find(name);
      return v ? *v : missing_attr(obj, name);
    }
    default:
      if (auto m = find_method(obj, name)) return *m;
      return missing_attr(obj, name);
  }
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
    }
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto& items = obj.as_list().items;
      const int64_t n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    } else {
      const std::u32string u = decode_utf8(obj.as_string());
      const int64_t n = static_cast<int64_t>(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(encode_utf8(std::u32string(1, u[static_cast<size_t>(i)])));
    }
    return missing_item(obj, key);
  } else if (obj.is_namespace() && key.is_string()) {
    return getattr(obj, key.as_string());
  }
  // Jinja falls back to attribute lookup for string keys (so d['items'] finds dict.items).
  if (key.is_string()) {
    if (auto m = find_method(obj, key.as_string())) return *m;
  }
  return missing_item(obj, key);
}

Value Interpreter::filter(const std::string& name, const Value& input, const CallArgs& args) {
  if (FilterFn f = find_filter(name)) return f(*this, input, args);
  if (is_known_unimplemented_filter(name)) fail("the '" + name + "' filter is not supported by locr's chat templates");
  fail("No filter named '" + name + "'.");
}

bool Interpreter::test(const std::string& name, const Value& input, const CallArgs& args) {
  if (TestFn t = find_test(name)) return t(*this, input, args);
  fail("No test named '" + name + "'.");
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.as_list().items;
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& kv : v.as_dict().items) keys.emplace_back(kv.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(v.as_string())) chars.emplace_back(encode_utf8(std::u32string(1, c)));
      return chars;
    }
    default:
      fail("'" + v.type_name() + "' object is not iterable");
  }
}

}  // namespace locr::jinja
