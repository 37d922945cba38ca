// Chat templates: a small Jinja2 interpreter covering what the LightOnOCR, Qwen3 and Qwen2-VL
// templates use (for/if/elif/else, set and namespace(), macros, break/continue, the filters,
// tests and str/dict methods they call, `loop`), rendered with transformers' settings
// (trim_blocks, lstrip_blocks, loopcontrols, raise_exception/strftime_now globals, its `tojson`).
// The output is byte-identical to transformers' apply_chat_template(tokenize=False); see
// tests/fixtures/chat_templates/ for the goldens.
//
// Not here: tokenization of the rendered text, image placeholder expansion (the processor's job),
// template inheritance/includes (a chat template is one string).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace locr::model {

class ChatTemplate {
 public:
  // Parses the template source. Throws locr::Error (kInvalidArgument) on syntax errors with the
  // line number, including unknown filters and tests (Jinja rejects those when compiling).
  static std::unique_ptr<ChatTemplate> parse(const std::string& source);
  virtual ~ChatTemplate() = default;

  // Renders with a context like transformers' apply_chat_template:
  //   messages: [{role, content: string | [{type: text|image|image_url, ...}]}],
  //   add_generation_prompt: bool, plus any extra variables (bos_token, eos_token, tools, ...).
  // Undefined variables are falsy/empty, as in Jinja's default Undefined. Runtime errors
  // (raise_exception in the template, an unknown attribute of an undefined value, a type error)
  // throw locr::Error (kInvalidArgument) naming the template line.
  virtual std::string render(const nlohmann::json& context) const = 0;
  // The same with an insertion-ordered context. nlohmann::json sorts object keys, which changes
  // what `tojson` prints for tools and the order `dict.items()` iterates; parse requests into
  // ordered_json and render with this to match Python exactly.
  virtual std::string render_ordered(const nlohmann::ordered_json& context) const = 0;
};

// The variables transformers' apply_chat_template hands to the template, built the same way:
// message keys whose value is null are dropped; a message's reasoning given as
// "reasoning_content", "thinking" or "reasoning" is copied under both "reasoning_content" and
// "thinking"; `tools` and `documents` are taken from `extra` and are null when absent; every other
// key of `extra` is passed through. transformers also passes the tokenizer's special tokens
// (bos_token, eos_token, pad_token, unk_token, ...): put them in `extra`, next to request options
// such as enable_thinking or add_vision_id. (The processor path of apply_chat_template also
// rewrites OpenAI {"type": "image_url"} parts to {"type": "image", "url"}; the templates here
// treat both alike, so that is left to the caller.)
// Throws locr::Error (kInvalidArgument) if `messages` is not a list of objects.
nlohmann::ordered_json make_chat_template_context(const nlohmann::ordered_json& messages,
                                                  bool add_generation_prompt,
                                                  const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

// The chat template shipped with a model directory, looked up as transformers does:
// chat_template.jinja, else chat_template.json ({"chat_template": ...}), else the
// "chat_template" entry of tokenizer_config.json (a string, or a list of {name, template} from
// which "default" is used). Throws locr::Error (kNotFound) if there is none, telling the user to
// pass --chat-template FILE.
std::string load_chat_template_source(const std::string& model_dir);

}  // namespace locr::model
