// Chat templates: a small Jinja2 interpreter covering what the LightOnOCR and Qwen3 templates use
// (for/if/elif/else, set, macros-free expressions, filters and tests they call, string methods,
// `loop`, namespace()), rendered with transformers' settings (trim_blocks, lstrip_blocks).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace locr::model {

class ChatTemplate {
 public:
  // Parses the template source. Throws locr::Error (kInvalidArgument) on syntax errors with the
  // line number.
  static std::unique_ptr<ChatTemplate> parse(const std::string& source);
  virtual ~ChatTemplate() = default;

  // Renders with a context like transformers' apply_chat_template:
  //   messages: [{role, content: string | [{type: text|image|image_url, ...}]}],
  //   add_generation_prompt: bool, plus any extra variables (bos_token, eos_token, tools, ...).
  // Undefined variables are falsy/empty, as in Jinja's default Undefined.
  virtual std::string render(const nlohmann::json& context) const = 0;
};

}  // namespace locr::model
