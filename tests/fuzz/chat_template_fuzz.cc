// The Jinja interpreter (src/jinja/) with the template source fuzzed: parse() of any bytes
// and render() of what parses, with a chat-like context. Syntax and runtime errors must be
// locr::Error with a message; nothing else may escape, and nothing may crash or recurse without
// bound.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = locr::model::make_chat_template_context(
      nlohmann::ordered_json::parse(R"([
        {"role": "system", "content": "You are OCR."},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Read <b>this</b>"}]},
        {"role": "assistant", "content": "x", "reasoning_content": "think"},
        {"role": "user", "content": "more"}])"),
      true, nlohmann::ordered_json::parse(R"({"bos_token": "<s>", "eos_token": "</s>", "add_vision_id": true,
                                              "tools": [{"type": "function", "function": {"name": "f"}}]})"));
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace locr;
  const std::string source(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<model::ChatTemplate> tpl;
  try {
    tpl = model::ChatTemplate::parse(source);
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
    return 0;
  }
  try {
    tpl->render_ordered(context());
  } catch (const Error& e) {
    LOCR_FUZZ_CHECK(e.what()[0] != '\0');
  }
  return 0;
}
