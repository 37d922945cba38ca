// Parser for chat templates: tokens (jinja_lexer) to a syntax tree (jinja_ast), following the
// grammar and operator precedence of jinja2.parser, including the `loopcontrols` extension
// (break/continue) and transformers' `{% generation %}` block.
//
// Supported statements: if/elif/else, for (tuple targets, `if` filter, else), set (expression,
// block, namespace attribute), macro, break, continue, filter, with, generation, print.
// Not supported (a syntax error naming the tag): extends/block/include/import/from (templates
// come from one string), call blocks, autoescape, recursive loops; `do` is not enabled by
// transformers either.
#pragma once

#include <string>

#include "jinja/ast.h"

namespace locr::jinja {

// Throws locr::Error (kInvalidArgument) with the line number on syntax errors.
Body parse_template(const std::string& source);

}  // namespace locr::jinja
