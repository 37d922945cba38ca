#include "model/gguf_model_meta.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "model/gguf_binder.h"

namespace locr::model {

using nlohmann::json;

int gguf_token_id(const io::GgufFile& text, const std::string& token) {
  const json* toks = gguf_meta(text, "tokenizer.ggml.tokens");
  if (!toks || !toks->is_array()) return -1;
  for (size_t i = 0; i < toks->size(); ++i)
    if ((*toks)[i].is_string() && (*toks)[i].get_ref<const std::string&>() == token) return static_cast<int>(i);
  return -1;
}

std::string gguf_chat_template(const io::GgufFile& text) { return gguf_meta_string(text, "tokenizer.chat_template"); }

std::string gguf_dir_of(const std::string& path) {
  const std::filesystem::path p = std::filesystem::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

std::unique_ptr<tokenizer::Tokenizer> gguf_tokenizer(const io::GgufFile& text, const std::string& path,
                                          const tokenizer::TokenizerOptions& options) {
  const std::string beside = io::join_path(gguf_dir_of(path), "tokenizer.json");
  if (io::file_exists(beside)) {
    LOCR_INFO("gguf: tokenizer from ", beside, " (next to the GGUF; its tokenizer.ggml.* metadata is not used)");
    return tokenizer::Tokenizer::from_file(beside, options);
  }
  return tokenizer::Tokenizer::from_gguf(text, options);
}

std::string gguf_template_source(const io::GgufFile& text, const std::string& path,
                                 const std::string& chat_template_file) {
  if (!chat_template_file.empty()) return io::read_file(chat_template_file);
  std::string t = gguf_chat_template(text);
  if (!t.empty()) return t;
  const std::string beside = io::join_path(gguf_dir_of(path), "chat_template.jinja");
  if (io::file_exists(beside)) return io::read_file(beside);
  fail(ErrorKind::kNotFound, path, ": no chat template (no tokenizer.chat_template metadata, no ", beside,
       "); give one with --chat-template FILE");
}

GenerationConfig gguf_generation_config(const io::GgufFile& text) {
  GenerationConfig g;
  // LightOnOCR-2's generation_config.json (model-spec: do_sample, temperature 0.2, top_p 0.9,
  // top_k 0, eos [<|im_end|>, <|endoftext|>], bos = pad = <|endoftext|>); GGUF carries none of it.
  g.do_sample = true;
  g.temperature = 0.2f;
  g.top_p = 0.9f;
  g.top_k = 0;
  // The converter copies generation_config's sampling into general.sampling.* when it has them.
  g.temperature = static_cast<float>(gguf_meta_float(text, "general.sampling.temp", g.temperature));
  g.top_p = static_cast<float>(gguf_meta_float(text, "general.sampling.top_p", g.top_p));
  g.top_k = static_cast<int>(gguf_meta_int(text, "general.sampling.top_k", g.top_k));
  g.do_sample = g.temperature > 0;
  const int64_t eos = gguf_meta_int(text, "tokenizer.ggml.eos_token_id", -1);
  if (eos >= 0) g.eos_token_ids.push_back(static_cast<int>(eos));
  const int eot = gguf_token_id(text, "<|endoftext|>");
  if (eot >= 0 && eot != eos) g.eos_token_ids.push_back(eot);
  const int64_t pad = gguf_meta_int(text, "tokenizer.ggml.padding_token_id", eot);
  g.pad_token_id = static_cast<int>(pad);
  g.bos_token_id = static_cast<int>(gguf_meta_int(text, "tokenizer.ggml.bos_token_id", pad));
  return g;
}

}  // namespace locr::model
