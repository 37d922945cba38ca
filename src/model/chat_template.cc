// ChatTemplate: ties the Jinja parser and evaluator together, builds transformers' render
// context, and finds a model directory's template (see chat_template.h).
#include "model/chat_template.h"

#include "core/error.h"
#include "io/file.h"
#include "jinja/eval.h"
#include "jinja/parser.h"

namespace locr::model {
namespace {

class JinjaChatTemplate final : public ChatTemplate {
 public:
  explicit JinjaChatTemplate(jinja::Body body) : body_(std::move(body)) {}

  std::string render(const nlohmann::json& context) const override {
    return render_value(jinja::Value::from_json(context));
  }
  std::string render_ordered(const nlohmann::ordered_json& context) const override {
    return render_value(jinja::Value::from_json(context));
  }

 private:
  std::string render_value(const jinja::Value& context) const {
    if (!context.is_dict()) fail(ErrorKind::kInvalidArgument, "chat template context must be a JSON object");
    jinja::Interpreter interp(context);
    return interp.render(body_);
  }

  jinja::Body body_;
};

}  // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::parse(const std::string& source) {
  return std::make_unique<JinjaChatTemplate>(jinja::parse_template(source));
}

nlohmann::ordered_json make_chat_template_context(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                                  const nlohmann::ordered_json& extra) {
  using ojson = nlohmann::ordered_json;
  if (!messages.is_array()) fail(ErrorKind::kInvalidArgument, "chat messages must be a JSON array");
  if (!extra.is_null() && !extra.is_object()) fail(ErrorKind::kInvalidArgument, "template variables must be a JSON object");
  ojson msgs = ojson::array();
  for (const auto& m : messages) {
    if (!m.is_object()) fail(ErrorKind::kInvalidArgument, "chat messages must be objects, got ", m.dump());
    ojson clean = ojson::object();
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!it.value().is_null()) clean[it.key()] = it.value();
    // transformers' _alias_reasoning_fields: {"thinking": r, **message, "reasoning_content": r}.
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
      if (!clean.contains(key)) continue;
      const ojson reasoning = clean[key];
      ojson aliased = ojson::object();
      aliased["thinking"] = reasoning;
      for (auto it = clean.begin(); it != clean.end(); ++it) aliased[it.key()] = it.value();
      aliased["reasoning_content"] = reasoning;
      clean = std::move(aliased);
      break;
    }
    msgs.push_back(std::move(clean));
  }
  ojson ctx = ojson::object();
  ctx["messages"] = std::move(msgs);
  ctx["tools"] = extra.is_object() && extra.contains("tools") ? extra["tools"] : ojson();
  ctx["documents"] = extra.is_object() && extra.contains("documents") ? extra["documents"] : ojson();
  ctx["add_generation_prompt"] = add_generation_prompt;
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.key() == "tools" || it.key() == "documents" || it.key() == "messages" ||
          it.key() == "add_generation_prompt")
        continue;
      ctx[it.key()] = it.value();
    }
  }
  return ctx;
}

std::string load_chat_template_source(const std::string& model_dir) {
  const std::string jinja_path = io::join_path(model_dir, "chat_template.jinja");
  if (io::file_exists(jinja_path)) return io::read_file(jinja_path);

  auto parse_json = [](const std::string& path) {
    try {
      return nlohmann::json::parse(io::read_file(path));
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorKind::kInvalidArgument, path, " is not valid JSON: ", e.what());
    }
  };
  auto from_entry = [](const nlohmann::json& entry, const std::string& path) -> std::string {
    if (entry.is_string()) return entry.get<std::string>();
    if (entry.is_array()) {
      std::string names;
      for (const auto& t : entry) {
        if (!t.is_object() || !t.contains("name") || !t.contains("template")) continue;
        if (t["name"] == "default" && t["template"].is_string()) return t["template"].get<std::string>();
        names += (names.empty() ? "" : ", ") + t["name"].dump();
      }
      fail(ErrorKind::kNotFound, path, " lists chat templates (", names,
           ") but none named \"default\"; pass --chat-template FILE to choose one");
    }
    fail(ErrorKind::kInvalidArgument, path, ": \"chat_template\" must be a string or a list of {name, template}");
  };

  const std::string json_path = io::join_path(model_dir, "chat_template.json");
  if (io::file_exists(json_path)) {
    const nlohmann::json j = parse_json(json_path);
    if (j.is_object() && j.contains("chat_template")) return from_entry(j["chat_template"], json_path);
  }
  const std::string config_path = io::join_path(model_dir, "tokenizer_config.json");
  if (io::file_exists(config_path)) {
    const nlohmann::json j = parse_json(config_path);
    if (j.is_object() && j.contains("chat_template") && !j["chat_template"].is_null())
      return from_entry(j["chat_template"], config_path);
  }
  fail(ErrorKind::kNotFound, "no chat template found in ", model_dir,
       ": expected chat_template.jinja, chat_template.json or a \"chat_template\" entry in "
       "tokenizer_config.json; pass --chat-template FILE");
}

}  // namespace locr::model
