// LightOnOcr::load for llama.cpp's GGUF files: TEXT.gguf (+ --mmproj MMPROJ.gguf), as llama-server
// takes them. Config, preprocessing and weights come from model/lightonocr/gguf_checkpoint.h, the
// tokenizer, the chat template and the generation defaults from model/gguf_model_meta.h.

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "kernels/devices.h"
#include "model/gguf_model_meta.h"
#include "model/lightonocr/gguf_checkpoint.h"
#include "model/lightonocr/lighton_ocr.h"

namespace locr::model {

using nlohmann::json;

std::unique_ptr<LightOnOcr> LightOnOcr::load_gguf(const std::string& path, const LoadOptions& opts) {
  if (!io::file_exists(path)) fail(ErrorKind::kNotFound, "model file not found: ", path);
  kernels::check_backend_usable(opts.backend);
  const GgufCheckpoint ck = open_gguf_checkpoint(path, opts.mmproj);
  std::unique_ptr<LightOnOcr> m(new LightOnOcr());
  m->backend_ = opts.backend;
  m->config_ = gguf_model_config(ck);
  if (!ck.mmproj)
    LOCR_INFO("gguf: no --mmproj: a text-only model (requests with images are refused)");
  {
    const json& md = ck.text->metadata();
    const std::string name = md.contains("general.name") && md["general.name"].is_string()
                                 ? md["general.name"].get<std::string>() : std::string();
    m->variant_ = variant_from_name(name);
    if (!m->variant_.known()) m->variant_ = detect_variant(path, nullptr);
  }
  m->gen_config_ = gguf_generation_config(*ck.text);
  LOCR_INFO("gguf: no generation_config in GGUF: sampling from general.sampling.* where present, else LightOnOCR-2's "
            "defaults (temperature 0.2, top_p 0.9, top_k 0); eos ids from tokenizer.ggml.eos_token_id and <|endoftext|>");
  m->proc_config_ = gguf_processor_config(ck, opts.image_align);
  if (ck.mmproj)
    LOCR_INFO("gguf: preprocessing from the mmproj: longest edge ", m->proc_config_.longest_edge,
              " (clip.vision.image_size), patch ", m->proc_config_.patch_size, ", mean/std; not in GGUF, LightOnOCR's "
              "defaults: rescale 1/255, HF's resize (never upscale), vision RoPE theta 1e4, projector norm eps = the "
              "text rms_norm_eps");
  if (ck.mmproj && m->proc_config_.patch_size != m->config_.vision.patch_size)
    fail(ErrorKind::kInvalidArgument, "processor patch_size ", m->proc_config_.patch_size,
         " differs from the vision encoder's ", m->config_.vision.patch_size);

  m->tokenizer_ = gguf_tokenizer(*ck.text, path, {});
  if (m->tokenizer_->vocab_size() > m->config_.text.vocab_size)
    fail(ErrorKind::kInvalidArgument, path, ": the tokenizer has ", m->tokenizer_->vocab_size(),
         " tokens, more than the embedding's ", m->config_.text.vocab_size, " rows");
  // The template's special-token variables, from the GGUF's ids.
  const auto token_of = [&](const char* key) -> json {
    const json& md = ck.text->metadata();
    if (!md.contains(key) || !md[key].is_number_integer() || !md.contains("tokenizer.ggml.tokens")) return nullptr;
    const json& toks = md["tokenizer.ggml.tokens"];
    const int64_t id = md[key].get<int64_t>();
    return id >= 0 && id < static_cast<int64_t>(toks.size()) && toks[id].is_string() ? toks[id] : json(nullptr);
  };
  m->template_vars_["eos_token"] = token_of("tokenizer.ggml.eos_token_id");
  m->template_vars_["pad_token"] = token_of("tokenizer.ggml.padding_token_id");
  m->template_vars_["bos_token"] = nullptr;  // LightOnOCR's tokenizer_config: bos_token null
  m->template_ = ChatTemplate::parse(gguf_template_source(*ck.text, path, opts.chat_template_file));

  // The quantized types without kernels are dequantized for what the backend computes in: F32 for
  // the FP32 paths (ref, cpu-f32: the same numbers as the dequantized reference), BF16 otherwise
  // (what cpu-bf16 and CUDA would round the weights to when packing them).
  const DType deq = opts.backend == "ref" || opts.backend == "cpu-f32" ? DType::kF32 : DType::kBF16;
  // The kernels first: the weights in buffers of their own are packed (CUDA: uploaded) as they are bound.
  m->ops_ = make_model_ops(opts);
  // Q8_0, Q4_K and Q6_K tensors stay as stored on every backend (the CPU's integer kernels, ref's
  // exact dequantization per element, CUDA's GEMV and dequantizing GEMM on the blocks uploaded as they are).
  m->weights_ = load_gguf_weights(ck, m->config_, deq, m->ops_.get(), /*keep_quantized=*/true);
  m->make_parts(opts);
  return m;
}

}  // namespace locr::model
