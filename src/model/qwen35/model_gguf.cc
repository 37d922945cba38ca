// qwen35::Model::load_gguf: a Qwen3.5 model from llama.cpp's GGUF files (model/qwen35/gguf.h).

#include "core/error.h"
#include "core/log.h"
#include "kernels/devices.h"
#include "model/gguf_binder.h"
#include "model/gguf_model_meta.h"
#include "model/qwen35/gguf.h"
#include "model/qwen35/model.h"

namespace locr::model::qwen35 {

std::unique_ptr<Model> Model::load_gguf(std::shared_ptr<io::GgufFile> text, const std::string& path,
                                        const LoadOptions& opts) {
  kernels::check_backend_usable(opts.backend);
  if (opts.image_align != 28)
    fail(ErrorKind::kUnsupported, "--image-align is not supported for Qwen3.5 models (their processor aligns to ",
         "patch x merge, 32 px)");
  const GgufFiles f = open_gguf(std::move(text), opts.mmproj);
  std::unique_ptr<Model> m(new Model());
  m->config_ = gguf_config(f);
  m->proc_ = gguf_processor_config(f, gguf_dir_of(path));
  if (m->proc_.patch_size != m->config_.vision.patch_size || m->proc_.merge_size != m->config_.vision.spatial_merge_size ||
      m->proc_.temporal_patch_size != m->config_.vision.temporal_patch_size)
    fail(ErrorKind::kInvalidArgument, gguf_dir_of(path), "/preprocessor_config.json: patch ", m->proc_.patch_size,
         ", merge ", m->proc_.merge_size, ", temporal ", m->proc_.temporal_patch_size, " differ from the mmproj's");
  m->gen_config_ = gguf_generation_config(*f.text);
  LOCR_INFO("gguf: no generation_config in GGUF: sampling from general.sampling.*; eos ids from "
            "tokenizer.ggml.eos_token_id and <|endoftext|>");
  // transformers builds Qwen3.5's pre-tokenizer in code (tokenizer/tokenizer.h); llama.cpp calls it "qwen35".
  const std::string pre = gguf_meta_string(*f.text, "tokenizer.ggml.pre");
  if (pre != "qwen35")
    LOCR_INFO("gguf: tokenizer.ggml.pre is '", pre, "'; locr uses Qwen3.5's own pre-tokenizer (\"qwen35\"), as "
              "transformers does for this model type whatever the file says");
  m->tokenizer_ = gguf_tokenizer(*f.text, path, tokenizer::TokenizerOptions::for_model_type("qwen3_5"));
  if (m->tokenizer_->vocab_size() > m->config_.text.vocab_size)
    fail(ErrorKind::kInvalidArgument, path, ": the tokenizer has ", m->tokenizer_->vocab_size(),
         " tokens, more than the embedding's ", m->config_.text.vocab_size, " rows");
  const auto token_of = [&](const char* key) -> nlohmann::json {
    const int64_t id = gguf_meta_int(*f.text, key, -1);
    const nlohmann::json* toks = gguf_meta(*f.text, "tokenizer.ggml.tokens");
    return toks && id >= 0 && id < static_cast<int64_t>(toks->size()) && (*toks)[id].is_string() ? (*toks)[id]
                                                                                                 : nlohmann::json();
  };
  m->template_vars_["eos_token"] = token_of("tokenizer.ggml.eos_token_id");
  m->template_vars_["pad_token"] = token_of("tokenizer.ggml.padding_token_id");
  m->template_vars_["bos_token"] = nullptr;  // Qwen3.5's tokenizer_config: bos_token null
  m->template_ = ChatTemplate::parse(gguf_template_source(*f.text, path, opts.chat_template_file));
  {
    const std::string name = gguf_meta_string(*f.text, "general.name");
    m->variant_ = variant_from_name(name);
    if (!m->variant_.known()) m->variant_ = detect_variant(path, nullptr);
  }
  m->backend_ = opts.backend;
  // Quantized tensors without kernels are dequantized for what the backend computes in (as LightOnOCR's GGUF).
  const DType deq = opts.backend == "ref" || opts.backend == "cpu-f32" ? DType::kF32 : DType::kBF16;
  m->weights_ = load_gguf_weights(f, m->config_, deq, /*keep_quantized=*/true);
  m->make_parts(opts);
  drop_packed_copies(m->weights_, f);
  return m;
}

}  // namespace locr::model::qwen35
