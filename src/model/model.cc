#include "model/model.h"

namespace locr::model {

using nlohmann::json;

json Model::make_messages(const std::string* system, const std::string* prompt, int n_images) {
  json messages = json::array();
  if (system) messages.push_back({{"role", "system"}, {"content", *system}});
  if (n_images == 0) {
    messages.push_back({{"role", "user"}, {"content", prompt ? *prompt : std::string()}});
  } else {
    json content = json::array();
    for (int i = 0; i < n_images; ++i) content.push_back({{"type", "image"}});
    if (prompt) content.push_back({{"type", "text"}, {"text", *prompt}});
    messages.push_back({{"role", "user"}, {"content", content}});
  }
  return messages;
}

RenderedChat render_and_tokenize(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tok, const json& vars, const json& messages,
                                 const json& template_kwargs, bool add_generation_prompt, int image_token_id) {
  RenderedChat r;
  json ctx = vars;
  if (template_kwargs.is_object())
    for (auto it = template_kwargs.begin(); it != template_kwargs.end(); ++it) ctx[it.key()] = it.value();
  ctx["messages"] = messages;
  ctx["add_generation_prompt"] = add_generation_prompt;
  r.text = tmpl.render(ctx);
  r.ids = tok.encode(r.text);
  for (int32_t id : r.ids) r.n_images += id == image_token_id;
  return r;
}

json template_vars_from(const json& tokenizer_config) {
  json vars = json::object();
  for (const char* k : {"bos_token", "eos_token", "pad_token", "unk_token"}) {
    if (!tokenizer_config.is_object() || !tokenizer_config.contains(k)) continue;
    const json& v = tokenizer_config[k];
    if (v.is_string()) vars[k] = v;
    else if (v.is_object() && v.contains("content")) vars[k] = v["content"];
    else vars[k] = nullptr;
  }
  return vars;
}

}  // namespace locr::model
