// Tokenizer, chat template and sampling metadata for `locr quantize`; see gguf_export_vocab.h.
#include "model/gguf_export_vocab.h"

#include <map>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"

namespace locr::model {

namespace {

using nlohmann::json;

// gguf-py's TokenType.
enum : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

json read_json(const std::string& path) {
  try {
    return json::parse(io::read_file(path));
  } catch (const json::exception& e) {
    fail(ErrorKind::kInvalidArgument, "invalid JSON in ", path, ": ", e.what());
  }
}

json read_json_if_present(const std::string& path) {
  return io::file_exists(path) ? read_json(path) : json::object();
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// TextModel.does_token_look_special.
bool looks_special(const std::string& t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts_with(t, "<|") && ends_with(t, "|>")) return true;
  if (starts_with(t, "<\xEF\xBD\x9C") && ends_with(t, "\xEF\xBD\x9C>")) return true;  // <｜ ... ｜> (deepseek)
  return starts_with(t, "<unused") && ends_with(t, ">");
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The content of a tokenizer_config.json token entry (a string or {"content": ...}); empty when none.
std::string token_content(const json& e) {
  if (e.is_string()) return e.get<std::string>();
  if (e.is_object() && e.contains("content") && e["content"].is_string()) return e["content"].get<std::string>();
  return {};
}

std::string chat_template(const std::string& dir, const json& tok_cfg) {
  if (tok_cfg.contains("chat_template") && tok_cfg["chat_template"].is_string())
    return tok_cfg["chat_template"].get<std::string>();
  const std::string jinja = io::join_path(dir, "chat_template.jinja");
  if (io::file_exists(jinja)) return io::read_file(jinja);
  const std::string jpath = io::join_path(dir, "chat_template.json");
  if (io::file_exists(jpath)) {
    const json j = read_json(jpath);
    if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
      return j["chat_template"].get<std::string>();
  }
  return {};
}

}  // namespace

void add_gguf_sampling(io::GgufWriter& w, const std::string& dir) {
  const std::string path = io::join_path(dir, "generation_config.json");
  if (!io::file_exists(path)) return;
  json g;
  try {
    g = json::parse(io::read_file(path));
  } catch (const json::exception&) {
    return;  // as gguf-py's Metadata: an unreadable generation_config.json is skipped
  }
  if (!g.is_object()) return;
  // gguf-py Metadata's order and types (general.sampling.<key> from generation_config's <field>).
  struct Field { const char* field; const char* key; char kind; };  // kind: s string, i int32, f float32
  static const Field kFields[] = {
      {"sequence", "sequence", 's'},        {"top_k", "top_k", 'i'},
      {"top_p", "top_p", 'f'},              {"min_p", "min_p", 'f'},
      {"xtc_probability", "xtc_probability", 'f'}, {"xtc_threshold", "xtc_threshold", 'f'},
      {"temperature", "temp", 'f'},         {"penalty_last_n", "penalty_last_n", 'i'},
      {"penalty_repeat", "penalty_repeat", 'f'}, {"mirostat", "mirostat", 'i'},
      {"mirostat_tau", "mirostat_tau", 'f'}, {"mirostat_eta", "mirostat_eta", 'f'},
  };
  for (const Field& f : kFields) {
    if (!g.contains(f.field) || g[f.field].is_null()) continue;
    const json& v = g[f.field];
    const std::string key = std::string("general.sampling.") + f.key;
    if (f.kind == 's' && v.is_string()) w.add_string(key, v.get<std::string>());
    else if (f.kind == 'i' && v.is_number_integer()) w.add_i32(key, v.get<int32_t>());
    else if (f.kind == 'f' && v.is_number()) w.add_f32(key, v.get<float>());
    else fail(ErrorKind::kInvalidArgument, path, ": \"", f.field, "\" = ", v.dump(), " is not of the expected type");
  }
}

void add_gguf_vocab(io::GgufWriter& w, const std::string& dir, int vocab_size, const std::string& pre) {
  const std::string tok_path = io::join_path(dir, "tokenizer.json");
  if (!io::file_exists(tok_path))
    fail(ErrorKind::kNotFound, dir, " has no tokenizer.json (the GGUF carries the tokenizer; llama.cpp's converter "
         "needs it too)");
  const json tok = read_json(tok_path);
  if (!tok.contains("model") || !tok["model"].is_object() || tok["model"].value("type", "") != "BPE" ||
      !tok["model"].contains("vocab") || !tok["model"]["vocab"].is_object())
    fail(ErrorKind::kUnsupported, tok_path, ": not a byte-level BPE tokenizer (model.type \"BPE\" with a vocab); "
         "LightOnOCR's (Qwen2's) is one, and GGUF's \"gpt2\" tokenizer model is that");
  const json tok_cfg = read_json_if_present(io::join_path(dir, "tokenizer_config.json"));
  const json config = read_json_if_present(io::join_path(dir, "config.json"));

  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(static_cast<size_t>(vocab_size), kUnused);
  std::vector<bool> have(static_cast<size_t>(vocab_size), false);
  auto put = [&](int64_t id, const std::string& s, int32_t type, const char* what) {
    if (id < 0 || id >= vocab_size)
      fail(ErrorKind::kInvalidArgument, tok_path, ": ", what, " '", s, "' has id ", id, ", outside the model's vocab_size ",
           vocab_size, " (config.json)");
    tokens[id] = s;
    types[id] = type;
    have[id] = true;
  };
  for (const auto& kv : tok["model"]["vocab"].items()) put(kv.value().get<int64_t>(), kv.key(), kNormal, "token");
  std::vector<json> added = tok.contains("added_tokens") && tok["added_tokens"].is_array()
                                ? tok["added_tokens"].get<std::vector<json>>()
                                : std::vector<json>{};
  for (const json& a : added) {
    const std::string s = a.value("content", "");
    const bool special = a.value("special", false);
    if (special || looks_special(s)) put(a.value("id", int64_t{-1}), s, kControl, "added token");
    else put(a.value("id", int64_t{-1}), replace_all(s, "\xE2\x96\x81", " "), kUserDefined, "added token");
  }
  json tok_list = json::array(), type_list = json::array();
  for (int i = 0; i < vocab_size; ++i) {
    tok_list.push_back(have[i] ? tokens[i] : "[PAD" + std::to_string(i) + "]");
    type_list.push_back(types[i]);
  }

  json merges = json::array();
  if (tok["model"].contains("merges") && tok["model"]["merges"].is_array()) {
    for (const json& m : tok["model"]["merges"]) {
      if (m.is_string()) {
        merges.push_back(m);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.push_back(replace_all(m[0].get<std::string>(), " ", "\xC4\xA0") + " " +
                         replace_all(m[1].get<std::string>(), " ", "\xC4\xA0"));
      } else {
        fail(ErrorKind::kInvalidArgument, tok_path, ": a merge is neither \"a b\" nor [\"a\", \"b\"]: ", m.dump());
      }
    }
  }

  w.add_string("tokenizer.ggml.model", "gpt2");
  w.add_string("tokenizer.ggml.pre", pre);
  w.add_array("tokenizer.ggml.tokens", io::GgufValueType::kString, tok_list);
  w.add_array("tokenizer.ggml.token_type", io::GgufValueType::kI32, type_list);
  w.add_array("tokenizer.ggml.merges", io::GgufValueType::kString, merges);

  // Special ids: tokenizer_config's <typ>_token among the added tokens, then config.json's ids.
  static const char* kTypes[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
  static const std::map<std::string, std::string> kKey = {
      {"bos", "bos_token_id"}, {"eos", "eos_token_id"}, {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
      {"pad", "padding_token_id"}, {"cls", "cls_token_id"}, {"mask", "mask_token_id"}};
  std::vector<std::pair<std::string, int64_t>> ids;
  auto set_id = [&](const std::string& typ, int64_t id) {
    if (id < 0 || id >= vocab_size) return;
    for (const auto& [t, _] : ids)
      if (t == typ) return;
    ids.emplace_back(typ, id);
  };
  for (const char* typ : kTypes) {
    const std::string key = std::string(typ) + "_token";
    if (!tok_cfg.contains(key)) continue;
    const std::string content = token_content(tok_cfg[key]);
    if (content.empty()) continue;
    for (const json& a : added)
      if (a.value("content", "") == content) {
        set_id(typ, a.value("id", int64_t{-1}));
        break;
      }
  }
  for (const char* typ : kTypes) {
    const std::string key = std::string(typ) + "_token_id";
    if (config.contains(key) && config[key].is_number_integer()) set_id(typ, config[key].get<int64_t>());
  }
  for (const auto& [typ, id] : ids) w.add_u32("tokenizer.ggml." + kKey.at(typ), static_cast<uint32_t>(id));
  for (const char* typ : {"bos", "eos"}) {
    const std::string key = std::string("add_") + typ + "_token";
    const bool v = tok_cfg.contains(key) && tok_cfg[key].is_boolean() && tok_cfg[key].get<bool>();
    w.add_bool("tokenizer.ggml." + key, v);
  }
  const std::string tmpl = chat_template(dir, tok_cfg);
  if (tmpl.empty())
    LOCR_WARN("quantize: ", dir, " has no chat template; the GGUF gets no tokenizer.chat_template (give locr "
              "--chat-template FILE when serving it)");
  else
    w.add_string("tokenizer.chat_template", tmpl);
}

}  // namespace locr::model
