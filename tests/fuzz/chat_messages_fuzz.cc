// Chat template rendering with the messages fuzzed: the bytes are read as JSON messages (the
// shape a request gives) and rendered with every shipped template (LightOnOCR-2, Qwen2-VL, Qwen2.5,
// Qwen3, Qwen3-Coder). A render either succeeds or throws locr::Error; bad input never crashes.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "fuzz_util.h"
#include "io/file.h"
#include "model/chat_template.h"

namespace {

using namespace locr;

const std::vector<std::unique_ptr<model::ChatTemplate>>& templates() {
  static auto* all = [] {
    auto* v = new std::vector<std::unique_ptr<model::ChatTemplate>>;
    for (const char* name : {"lightonocr2", "qwen2_vl", "qwen2_5", "qwen3", "qwen3_coder"})
      v->push_back(model::ChatTemplate::parse(io::read_file(fuzz::fixture(std::string("chat_templates/") + name + ".jinja"))));
    return v;
  }();
  return *all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& tpls = templates();
  nlohmann::ordered_json in = nlohmann::ordered_json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded()) return 0;
  // {"messages": [...], ...extra} or a bare list of messages.
  nlohmann::ordered_json messages = in, extra = nlohmann::ordered_json::object();
  if (in.is_object() && in.contains("messages")) {
    messages = in["messages"];
    for (auto it = in.begin(); it != in.end(); ++it)
      if (it.key() != "messages") extra[it.key()] = it.value();
  }
  for (bool gen : {false, true}) {
    nlohmann::ordered_json ctx;
    try {
      ctx = model::make_chat_template_context(messages, gen, extra);
    } catch (const Error& e) {
      LOCR_FUZZ_CHECK(e.what()[0] != '\0');
      return 0;
    }
    for (const auto& t : tpls) {
      try {
        t->render_ordered(ctx);
      } catch (const Error& e) {
        LOCR_FUZZ_CHECK(e.what()[0] != '\0');
      }
    }
  }
  return 0;
}
