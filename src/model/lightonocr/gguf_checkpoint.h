// LightOnOCR from llama.cpp's GGUF files, as llama-server takes them: a text model of arch
// `qwen3` and an `mmproj` of arch `clip` with projector type `lightonocr` (model-spec §11).
//
// What is read from where:
//   text GGUF    qwen3.* -> TextConfig; token_embd / blk.N.* / output_norm [/ output] -> TextWeights;
//                tokenizer.ggml.eos/padding_token_id and tokens -> GenerationConfig ids, the image token
//                (the tokenizer, chat template and generation defaults: model/gguf_model_meta.h, which
//                Qwen3.5's GGUF reader shares)
//   mmproj GGUF  clip.vision.* -> VisionConfig and the preprocessing (image size = longest edge,
//                patch size, mean/std, spatial merge size, layer norm eps); v.* and mm.* -> weights
// What GGUF lacks is taken from the model's documented defaults (model-spec; each says so once in
// the log): generation_config (temperature 0.2, top_p 0.9, top_k 0 unless general.sampling.* say
// otherwise; eos = tokenizer.ggml.eos_token_id and <|endoftext|>), rescale 1/255,
// vision RoPE theta 1e4, and the projector RMSNorm eps (HF uses the text rms_norm_eps, not the
// clip eps that llama.cpp uses).
//
// The converter row-permutes the vision q/k weights for ggml's interleaved RoPE
// (LlamaModel.permute); binding undoes it, so the weights are the HF rotate-half layout again.
// Quantized tensors without native kernels (Q5_K, Q4_0, ...) are dequantized
// once at load (bind_gguf_matrix, model/gguf_binder.h) to F32 or
// BF16, with one notice per file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "io/gguf.h"
#include "kernels/ops.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/processor.h"
#include "model/lightonocr/weights.h"

namespace locr::model {

struct GgufCheckpoint {
  std::shared_ptr<io::GgufFile> text;    // general.architecture "qwen3"
  std::shared_ptr<io::GgufFile> mmproj;  // "clip", projector "lightonocr"; null: a text-only model
};

// Opens both files and checks what they are (arch, projector type); mmproj_path may be empty.
GgufCheckpoint open_gguf_checkpoint(const std::string& text_path, const std::string& mmproj_path);

ModelConfig gguf_model_config(const GgufCheckpoint& ck);
ProcessorConfig gguf_processor_config(const GgufCheckpoint& ck, int align);

// Binds and shape-checks every tensor of both files into ModelWeights (has_vision = false without
// an mmproj). Missing tensors, wrong shapes and tensors no code reads are errors naming them, as
// load_weights. `dequantize_to` (F32 or BF16) is the type quantized tensors are expanded to, except
// the Q8_0, Q4_K and Q6_K 2-D ones with `keep_quantized` (every backend has kernels for them: the
// CPU's integer kernels, kernels/cpu/quant_q8_0.h, quant_q4_k.h, quant_q6_k.h; CUDA's in
// kernels/cuda/quant_gemv.cu), which stay in the mapped file as
// DType::kQ8_0 / kQ4_K / kQ6_K matrices. With
// `pack`, each matmul weight held in a buffer of its own (dequantized, or the permuted vision q/k)
// is packed by that backend as it is bound and the buffer dropped (its `data` is then null): the
// load never holds two copies of every weight.
ModelWeights load_gguf_weights(const GgufCheckpoint& ck, const ModelConfig& cfg, DType dequantize_to,
                               kernels::Ops* pack = nullptr, bool keep_quantized = false);

// For each HF row of a [n_heads * head_dim, cols] q/k weight, the row of the converter's permuted
// layout it is found at: HF row h*hd + s*hd/2 + j is GGUF row h*hd + 2j + s.
std::vector<int64_t> unpermute_rows(int64_t n_heads, int64_t head_dim);

}  // namespace locr::model
