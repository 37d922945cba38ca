// Chat-template parser, statement half (see parser.h): template data, tags and their end
// tags, plus the check that every filter and test exists. Names follow jinja2.parser.Parser.
#include "jinja/parser.h"

#include "jinja/builtins.h"
#include "jinja/parser_impl.h"

namespace locr::jinja {

Body Parser::parse_all() {
  Body body = subparse({});
  if (cur().type != Tok::kEof) syntax_error(cur().line, "unexpected " + describe_token(cur()));
  return body;
}

// Parses template data and tags until a block tag whose name is in `end_tags` (left current).
Body Parser::subparse(const std::vector<std::string>& end_tags) {
  Body body;
  if (!end_tags.empty()) end_stack_.push_back(end_tags);
  while (cur().type != Tok::kEof) {
    const Token& t = cur();
    if (t.type == Tok::kData) {
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kText;
      s->line = t.line;
      s->text = t.text;
      body.push_back(std::move(s));
      next();
    } else if (t.type == Tok::kVarBegin) {
      next();
      auto s = std::make_unique<Stmt>();
      s->kind = Stmt::Kind::kPrint;
      s->line = t.line;
      s->expr = parse_tuple(true, {});
      expect(Tok::kVarEnd, "'end of print statement'");
      body.push_back(std::move(s));
    } else if (t.type == Tok::kBlockBegin) {
      next();
      if (cur().type == Tok::kName) {
        for (const auto& e : end_tags)
          if (cur().text == e) {
            if (!end_tags.empty()) end_stack_.pop_back();
            return body;
          }
      }
      body.push_back(parse_statement());
      expect(Tok::kBlockEnd, "'end of statement block'");
    } else {
      syntax_error(t.line, "unexpected " + describe_token(t));
    }
  }
  if (!end_tags.empty()) end_stack_.pop_back();
  return body;
}

// Mirrors jinja2.parser's _fail_ut_eof: name the tags the innermost block waits for, and point
// out a nesting mistake when the tag closes an outer block.
void Parser::fail_unknown_tag(const std::string& name, int line) {
  std::string msg = "Encountered unknown tag '" + name + "'.";
  if (!end_stack_.empty()) {
    std::string looking;
    for (const auto& t : end_stack_.back()) looking += (looking.empty() ? "'" : " or '") + t + "'";
    bool expected = false;
    for (const auto& tags : end_stack_)
      for (const auto& t : tags) expected = expected || t == name;
    msg += expected ? " You probably made a nesting mistake. Jinja is expecting this tag, but currently looking for " +
                          looking + "."
                    : " Jinja was looking for the following tags: " + looking + ".";
  }
  if (block_stack_.size() > 1) msg += " The innermost block that needs to be closed is '" + block_stack_.back() + "'.";
  syntax_error(line, msg);
}

// Parses up to and including the end tag name (`drop` consumes it); the caller expects %}.
Body Parser::parse_statements(const std::vector<std::string>& end_tags, bool drop) {
  expect(Tok::kBlockEnd, "'end of statement block'");
  Body body = subparse(end_tags);
  if (cur().type == Tok::kEof) {
    std::string msg = "Unexpected end of template. Jinja was looking for the following tags: ";
    for (size_t i = 0; i < end_tags.size(); ++i) msg += (i ? " or '" : "'") + end_tags[i] + "'";
    msg += ". The innermost block that needs to be closed is '" + block_stack_.back() + "'.";
    syntax_error(cur().line, msg);
  }
  if (drop) next();
  return body;
}

std::unique_ptr<Stmt> Parser::parse_statement() {
  NestingGuard guard(this);
  if (cur().type != Tok::kName) syntax_error(cur().line, "tag name expected");
  const std::string tag = cur().text;
  const int line = cur().line;
  auto s = std::make_unique<Stmt>();
  s->line = line;
  const bool is_block = tag == "for" || tag == "if" || tag == "macro" || tag == "filter" || tag == "with" ||
                        tag == "generation";
  if (is_block) block_stack_.push_back(tag);
  next();
  if (tag == "for") {
    parse_for(s.get());
  } else if (tag == "if") {
    parse_if(s.get());
  } else if (tag == "set") {
    parse_set(s.get());
  } else if (tag == "macro") {
    parse_macro(s.get());
  } else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) syntax_error(line, "'" + tag + "' outside loop");
    s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
  } else if (tag == "filter") {
    s->kind = Stmt::Kind::kFilterBlock;
    s->filters = parse_filter_chain(true);
    s->body = parse_statements({"endfilter"}, true);
  } else if (tag == "with") {
    s->kind = Stmt::Kind::kWith;
    while (cur().type != Tok::kBlockEnd) {
      if (!s->assigns.empty()) expect_op(",");
      Target t = parse_assign_target(false, {});
      expect_op("=");
      s->assigns.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
  } else if (tag == "generation") {
    s->kind = Stmt::Kind::kScope;
    s->body = parse_statements({"endgeneration"}, true);
  } else if (tag == "print") {
    s->kind = Stmt::Kind::kPrint;
    s->expr = parse_tuple(true, {});
  } else {
    fail_unknown_tag(tag, line);
  }
  if (is_block) block_stack_.pop_back();
  return s;
}

void Parser::parse_for(Stmt* s) {
  s->kind = Stmt::Kind::kFor;
  s->target = parse_assign_target(false, {"in"});
  if (!skip_name("in")) fail_expected("'in'");
  s->expr = parse_tuple(false, {"recursive"});
  if (skip_name("if")) s->cond = parse_expression(true);
  if (is_name("recursive")) syntax_error(cur().line, "recursive loops are not supported");
  ++loop_depth_;
  s->body = parse_statements({"endfor", "else"}, false);
  --loop_depth_;
  if (cur().text == "else") {
    next();
    s->else_body = parse_statements({"endfor"}, true);
  } else {
    next();
  }
}

void Parser::parse_if(Stmt* s) {
  s->kind = Stmt::Kind::kIf;
  ExprPtr cond = parse_tuple(false, {});
  while (true) {
    Body body = parse_statements({"elif", "else", "endif"}, false);
    s->branches.emplace_back(std::move(cond), std::move(body));
    const std::string t = cur().text;
    next();
    if (t == "elif") {
      cond = parse_tuple(false, {});
    } else if (t == "else") {
      s->branches.emplace_back(nullptr, parse_statements({"endif"}, true));
      return;
    } else {
      return;
    }
  }
}

void Parser::parse_set(Stmt* s) {
  s->target = parse_assign_target(true, {});
  if (skip_op("=")) {
    s->kind = Stmt::Kind::kSet;
    s->expr = parse_tuple(true, {});
    return;
  }
  if (!s->target.ns_attr.empty() || s->target.is_tuple) fail_expected("'='");
  s->kind = Stmt::Kind::kSetBlock;
  if (is_op("|")) s->filters = parse_filter_chain(false);
  block_stack_.push_back("set");
  s->body = parse_statements({"endset"}, true);
  block_stack_.pop_back();
}

void Parser::parse_macro(Stmt* s) {
  s->kind = Stmt::Kind::kMacro;
  s->name = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    if (!s->params.empty()) expect_op(",");
    s->params.push_back(expect_name());
    if (skip_op("=")) {
      s->defaults.push_back(parse_expression(true));
    } else if (!s->defaults.empty()) {
      syntax_error(cur().line, "non-default argument follows default argument");
    }
  }
  expect_op(")");
  std::set<std::string> names;
  name_sinks_.push_back(&names);
  const int saved_depth = loop_depth_;
  loop_depth_ = 0;
  s->body = parse_statements({"endmacro"}, true);
  loop_depth_ = saved_depth;
  name_sinks_.pop_back();
  s->uses_varargs = names.count("varargs") > 0;
  s->uses_kwargs = names.count("kwargs") > 0;
}

// `name(args)|name2...` with no input; `start_inline`: the first name has no leading '|'.
std::vector<ExprPtr> Parser::parse_filter_chain(bool start_inline) {
  std::vector<ExprPtr> filters;
  while (start_inline || is_op("|")) {
    if (!start_inline) next();
    start_inline = false;
    filters.push_back(parse_filter_call(nullptr));
  }
  return filters;
}

Target Parser::parse_assign_target(bool with_namespace, const std::vector<std::string>& extra_end) {
  Target t;
  const int line = cur().line;
  if (with_namespace && cur().type == Tok::kName && look().type == Tok::kOp && look().text == ".") {
    t.names.push_back(expect_name());
    next();
    t.ns_attr = expect_name();
    return t;
  }
  ExprPtr e = parse_tuple_impl(/*simplified=*/true, true, extra_end, false);
  auto add = [&](const Expr& n) {
    if (n.kind != Expr::Kind::kName) syntax_error(line, "can't assign to this expression");
    if (n.name == "true" || n.name == "false" || n.name == "none" || n.name == "True" || n.name == "False" ||
        n.name == "None")
      syntax_error(line, "can't assign to " + n.name);
    t.names.push_back(n.name);
  };
  if (e->kind == Expr::Kind::kTuple) {
    t.is_tuple = true;
    for (const auto& c : e->children) add(*c);
  } else {
    add(*e);
  }
  return t;
}
namespace {

// Jinja refuses unknown filters and tests when it compiles a template; so do we, so a typo in a
// branch that a test never reaches still fails at load time.
void check_expr(const Expr* e) {
  if (!e) return;
  if (e->kind == Expr::Kind::kFilter && !find_filter(e->name) && !is_known_unimplemented_filter(e->name))
    syntax_error(e->line, "No filter named '" + e->name + "'.");
  if (e->kind == Expr::Kind::kTest && !find_test(e->name))
    syntax_error(e->line, "No test named '" + e->name + "'.");
  for (const auto& c : e->children) check_expr(c.get());
  for (const auto& kv : e->kwargs) check_expr(kv.second.get());
}

void check_body(const Body& body) {
  for (const auto& s : body) {
    check_expr(s->expr.get());
    check_expr(s->cond.get());
    for (const auto& [cond, b] : s->branches) {
      check_expr(cond.get());
      check_body(b);
    }
    check_body(s->body);
    check_body(s->else_body);
    for (const auto& d : s->defaults) check_expr(d.get());
    for (const auto& f : s->filters) check_expr(f.get());
    for (const auto& a : s->assigns) check_expr(a.second.get());
  }
}

}  // namespace

Body parse_template(const std::string& source) {
  Body body = Parser(tokenize(source)).parse_all();
  check_body(body);
  return body;
}

}  // namespace locr::jinja
