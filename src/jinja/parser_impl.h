// Internal to the chat-template parser: the Parser class whose statement half lives in
// parser.cc and expression half in parse_expr.cc. Not part of any API.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace locr::jinja {

inline ExprPtr make_expr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  static constexpr int kMaxNesting = 256;  // keeps recursion (here and in the evaluator) off the stack limit

  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}
  Body parse_all();

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const { return toks_[std::min(pos_ + 1, toks_.size() - 1)]; }
  void next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(const char* op) const { return cur().type == Tok::kOp && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::kName && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail_expected(std::string("'") + op + "'");
  }
  std::string expect_name() {
    if (cur().type != Tok::kName) fail_expected("name");
    std::string n = cur().text;
    next();
    return n;
  }
  void expect(Tok type, const char* what) {
    if (cur().type != type) fail_expected(what);
    next();
  }
  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  [[noreturn]] void fail_expected(const std::string& what);
  // Parses template data and tags until a block tag whose name is in `end_tags` (left current).
  Body subparse(const std::vector<std::string>& end_tags);
  [[noreturn]] void fail_unknown_tag(const std::string& name, int line);
  // Parses up to and including the end tag name (`drop` consumes it); the caller expects %}.
  Body parse_statements(const std::vector<std::string>& end_tags, bool drop);
  std::unique_ptr<Stmt> parse_statement();
  void parse_for(Stmt* s);
  void parse_if(Stmt* s);
  void parse_set(Stmt* s);
  void parse_macro(Stmt* s);
  std::vector<ExprPtr> parse_filter_chain(bool start_inline);
  Target parse_assign_target(bool with_namespace, const std::vector<std::string>& extra_end);
  bool is_tuple_end(const std::vector<std::string>& extra_end) const;
  ExprPtr parse_tuple(bool with_condexpr, const std::vector<std::string>& extra_end);
  ExprPtr parse_tuple_impl(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                           bool explicit_parens);
  ExprPtr parse_condexpr();
  ExprPtr binary(Expr::Kind kind, int line, ExprPtr l, ExprPtr r, std::string op = {});
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Expr* e);
  ExprPtr parse_call(ExprPtr node);
  ExprPtr parse_filter_call(ExprPtr input);
  ExprPtr parse_test(ExprPtr node);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int loop_depth_ = 0;
  std::vector<std::string> block_stack_ = {"template"};
  std::vector<std::set<std::string>*> name_sinks_;
  std::vector<std::vector<std::string>> end_stack_;  // end tags each open block waits for
  int nesting_ = 0;

  // Counts recursion depth through expressions and statements.
  struct NestingGuard {
    explicit NestingGuard(Parser* p) : p_(p) {
      if (++p_->nesting_ > kMaxNesting) syntax_error(p_->cur().line, "template nesting is too deep");
    }
    ~NestingGuard() { --p_->nesting_; }
    Parser* p_;
  };
};

}  // namespace locr::jinja
