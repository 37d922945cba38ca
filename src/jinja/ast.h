// Syntax tree of a parsed chat template: expressions and statements, each with its source line.
// One node struct per family, with a kind tag, rather than a class per node type: the evaluator
// switches on the kind and the tree stays easy to print and to walk.
//
// Not here: parsing (jinja_parser) or evaluation (jinja_eval).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace locr::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kConst,     // value
    kName,      // name
    kList,      // children = items
    kTuple,     // children = items
    kDict,      // children = k0, v0, k1, v1, ...
    kGetattr,   // children[0].name
    kGetitem,   // children[0][children[1]]
    kSlice,     // children[0][c1:c2:c3]; missing parts are null
    kCall,      // children[0](children[1..], kwargs)
    kFilter,    // children[0] | name(children[1..], kwargs); children[0] null in {% filter %}
    kTest,      // children[0] is name(children[1..], kwargs)
    kNeg,
    kPos,
    kNot,
    kBinop,     // children[0] name children[1]; name in + - * / // % ** ~
    kCompare,   // children[0] ops[0] children[1] ops[1] children[2] ...
    kAnd,
    kOr,
    kCondExpr,  // children[1] if children[0] else children[2] (children[2] may be null)
  };
  Kind kind = Kind::kConst;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::string> ops;  // kCompare: == != < <= > >= in notin
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

// Left-hand side of set / for / with: one name, a tuple of names, or namespace.attr.
struct Target {
  std::vector<std::string> names;
  bool is_tuple = false;
  std::string ns_attr;  // non-empty: `names[0].ns_attr = ...`
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kPrint,        // {{ expr }}
    kIf,           // branches: (cond, body)...; a null cond is the else branch
    kFor,          // for target in expr [if cond] body [else else_body]
    kSet,          // set target = expr
    kSetBlock,     // set target [| filters] body endset
    kMacro,        // macro name(params=defaults) body
    kBreak,
    kContinue,
    kFilterBlock,  // filter filters body endfilter
    kWith,         // with assigns body endwith
    kScope,        // body rendered as is ({% generation %})
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;  // kFor filter
  std::vector<std::pair<ExprPtr, Body>> branches;
  Target target;
  Body body;
  Body else_body;
  // kMacro
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  bool uses_varargs = false;
  bool uses_kwargs = false;
  // kSetBlock / kFilterBlock: kFilter nodes whose input (children[0]) is null
  std::vector<ExprPtr> filters;
  // kWith
  std::vector<std::pair<Target, ExprPtr>> assigns;
};

}  // namespace locr::jinja
