// Expression half of the chat-template parser: jinja2.parser's precedence climb from
// parse_tuple down to parse_primary, with postfix subscripts, calls, filters and tests.
#include "jinja/parser_impl.h"

namespace locr::jinja {

void Parser::fail_expected(const std::string& what) {
  if (cur().type == Tok::kEof) syntax_error(cur().line, "unexpected end of template, expected " + what + ".");
  syntax_error(cur().line, "expected token " + what + ", got " + describe_token(cur()));
}

bool Parser::is_tuple_end(const std::vector<std::string>& extra_end) const {
  if (cur().type == Tok::kVarEnd || cur().type == Tok::kBlockEnd || cur().type == Tok::kEof || is_op(")"))
    return true;
  if (cur().type == Tok::kName)
    for (const auto& e : extra_end)
      if (cur().text == e) return true;
  return false;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, const std::vector<std::string>& extra_end) {
  return parse_tuple_impl(false, with_condexpr, extra_end, false);
}

ExprPtr Parser::parse_tuple_impl(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                       bool explicit_parens) {
  const int line = cur().line;
  std::vector<ExprPtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    args.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
    if (is_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) syntax_error(cur().line, "Expected an expression, got " + describe_token(cur()));
  }
  auto t = make_expr(Expr::Kind::kTuple, line);
  t->children = std::move(args);
  return t;
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr expr1 = parse_or();
  while (is_name("if")) {
    const int line = cur().line;
    next();
    auto c = make_expr(Expr::Kind::kCondExpr, line);
    c->children.push_back(parse_or());
    c->children.push_back(std::move(expr1));
    c->children.push_back(skip_name("else") ? parse_condexpr() : nullptr);
    expr1 = std::move(c);
  }
  return expr1;
}

ExprPtr Parser::binary(Expr::Kind kind, int line, ExprPtr l, ExprPtr r, std::string op) {
  auto e = make_expr(kind, line);
  e->name = std::move(op);
  e->children.push_back(std::move(l));
  e->children.push_back(std::move(r));
  return e;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kOr, line, std::move(left), parse_and());
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kAnd, line, std::move(left), parse_not());
  }
  return left;
}

ExprPtr Parser::parse_not() {
  NestingGuard guard(this);
  if (is_name("not")) {
    auto e = make_expr(Expr::Kind::kNot, cur().line);
    next();
    e->children.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const int line = cur().line;
  ExprPtr expr = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    if (cur().type == Tok::kOp &&
        (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
      op = cur().text;
      next();
    } else if (skip_name("in")) {
      op = "in";
    } else if (is_name("not") && look().type == Tok::kName && look().text == "in") {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make_expr(Expr::Kind::kCompare, line);
      cmp->children.push_back(std::move(expr));
    }
    cmp->ops.push_back(op);
    cmp->children.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(expr);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const std::string op = cur().text;
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kBinop, line, std::move(left), parse_concat(), op);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kBinop, line, std::move(left), parse_math2(), "~");
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const std::string op = cur().text;
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kBinop, line, std::move(left), parse_pow(), op);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = cur().line;
    next();
    left = binary(Expr::Kind::kBinop, line, std::move(left), parse_unary(true), "**");
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  NestingGuard guard(this);
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    node = make_expr(is_op("-") ? Expr::Kind::kNeg : Expr::Kind::kPos, cur().line);
    next();
    node->children.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = cur();
  ExprPtr node;
  if (t.type == Tok::kName) {
    if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
      node = make_expr(Expr::Kind::kConst, t.line);
      node->value = Value(t.text == "true" || t.text == "True");
    } else if (t.text == "none" || t.text == "None") {
      node = make_expr(Expr::Kind::kConst, t.line);
      node->value = Value::none();
    } else {
      node = make_expr(Expr::Kind::kName, t.line);
      node->name = t.text;
      for (auto* sink : name_sinks_) sink->insert(t.text);
    }
    next();
  } else if (t.type == Tok::kString) {
    node = make_expr(Expr::Kind::kConst, t.line);
    std::string s = t.text;
    next();
    while (cur().type == Tok::kString) {  // adjacent literals concatenate
      s += cur().text;
      next();
    }
    node->value = Value(std::move(s));
  } else if (t.type == Tok::kInt || t.type == Tok::kFloat) {
    node = make_expr(Expr::Kind::kConst, t.line);
    node->value = t.type == Tok::kInt ? Value(t.int_value) : Value(t.float_value);
    next();
  } else if (is_op("(")) {
    next();
    node = parse_tuple_impl(false, true, {}, true);
    expect_op(")");
  } else if (is_op("[")) {
    node = make_expr(Expr::Kind::kList, t.line);
    next();
    while (!is_op("]")) {
      if (!node->children.empty()) expect_op(",");
      if (is_op("]")) break;
      node->children.push_back(parse_expression(true));
    }
    expect_op("]");
  } else if (is_op("{")) {
    node = make_expr(Expr::Kind::kDict, t.line);
    next();
    while (!is_op("}")) {
      if (!node->children.empty()) expect_op(",");
      if (is_op("}")) break;
      node->children.push_back(parse_expression(true));
      expect_op(":");
      node->children.push_back(parse_expression(true));
    }
    expect_op("}");
  } else {
    if (t.type == Tok::kEof) syntax_error(t.line, "unexpected end of template");
    syntax_error(t.line, "unexpected " + describe_token(t));
  }
  return node;
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      next();
      node = parse_filter_call(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const int line = cur().line;
  if (skip_op(".")) {
    const Token t = cur();
    next();
    if (t.type == Tok::kName) {
      auto e = make_expr(Expr::Kind::kGetattr, line);
      e->name = t.text;
      e->children.push_back(std::move(node));
      return e;
    }
    if (t.type != Tok::kInt) syntax_error(t.line, "expected name or number");
    auto e = make_expr(Expr::Kind::kGetitem, line);
    auto key = make_expr(Expr::Kind::kConst, line);
    key->value = Value(t.int_value);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(key));
    return e;
  }
  expect_op("[");
  std::vector<ExprPtr> args;
  while (!is_op("]")) {
    if (!args.empty()) expect_op(",");
    args.push_back(parse_subscribed());
  }
  expect_op("]");
  for (const auto& a : args)
    if (args.size() > 1 && a->kind == Expr::Kind::kSlice) syntax_error(line, "multi-dimensional slices are not supported");
  if (args.size() == 1 && args[0]->kind == Expr::Kind::kSlice && !args[0]->children[0]) {
    args[0]->children[0] = std::move(node);  // fill in the sliced object
    return std::move(args[0]);
  }
  auto e = make_expr(Expr::Kind::kGetitem, line);
  e->children.push_back(std::move(node));
  if (args.size() == 1) {
    e->children.push_back(std::move(args[0]));
  } else {
    auto tup = make_expr(Expr::Kind::kTuple, line);
    tup->children = std::move(args);
    e->children.push_back(std::move(tup));
  }
  return e;
}

ExprPtr Parser::parse_subscribed() {
  const int line = cur().line;
  std::vector<ExprPtr> parts;  // start, stop, step
  if (skip_op(":")) {
    parts.push_back(nullptr);
  } else {
    ExprPtr node = parse_expression(true);
    if (!skip_op(":")) return node;
    parts.push_back(std::move(node));
  }
  if (is_op(":") || is_op("]") || is_op(",")) {
    parts.push_back(nullptr);
  } else {
    parts.push_back(parse_expression(true));
  }
  if (skip_op(":")) {
    parts.push_back(is_op("]") || is_op(",") ? nullptr : parse_expression(true));
  } else {
    parts.push_back(nullptr);
  }
  auto e = make_expr(Expr::Kind::kSlice, line);
  e->children.push_back(nullptr);  // object, set by parse_subscript
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

void Parser::parse_call_args(Expr* e) {
  expect_op("(");
  bool require_comma = false;
  while (!is_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) syntax_error(cur().line, "*args and **kwargs in calls are not supported");
    if (cur().type == Tok::kName && look().type == Tok::kOp && look().text == "=") {
      std::string key = cur().text;
      next();
      next();
      e->kwargs.emplace_back(std::move(key), parse_expression(true));
    } else {
      if (!e->kwargs.empty()) syntax_error(cur().line, "positional argument follows keyword argument");
      e->children.push_back(parse_expression(true));
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make_expr(Expr::Kind::kCall, cur().line);
  e->children.push_back(std::move(node));
  parse_call_args(e.get());
  return e;
}

ExprPtr Parser::parse_filter_call(ExprPtr input) {
  auto e = make_expr(Expr::Kind::kFilter, cur().line);
  e->name = expect_name();
  while (is_op(".")) {
    next();
    e->name += "." + expect_name();
  }
  e->children.push_back(std::move(input));
  if (is_op("(")) parse_call_args(e.get());
  return e;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const int line = cur().line;
  next();  // is
  const bool negated = skip_name("not");
  auto e = make_expr(Expr::Kind::kTest, line);
  e->name = expect_name();
  while (is_op(".")) {
    next();
    e->name += "." + expect_name();
  }
  e->children.push_back(std::move(node));
  const Tok ty = cur().type;
  if (is_op("(")) {
    parse_call_args(e.get());
  } else if ((ty == Tok::kName || ty == Tok::kString || ty == Tok::kInt || ty == Tok::kFloat || is_op("[") ||
              is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) syntax_error(cur().line, "You cannot chain multiple tests with is");
    e->children.push_back(parse_postfix(parse_primary()));
  }
  if (!negated) return e;
  auto n = make_expr(Expr::Kind::kNot, line);
  n->children.push_back(std::move(e));
  return n;
}
}  // namespace locr::jinja
