// LightOnOCR from llama.cpp's GGUF files, as llama-server takes them: a text model of arch
// `qwen3` and an `mmproj` of arch `clip` with projector type `lightonocr` (model-spec §11).
//
// What is read from where:
//   text GGUF    qwen3.* -> TextConfig; token_embd / blk.N.* / output_norm [/ output] -> TextWeights;
//                tokenizer.ggml.eos/padding_token_id and tokens -> GenerationConfig ids, the image token
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
// once at load (bind_gguf_matrix) to F32 or
// BF16, with one notice per file.
#pragma once

#include <memory>
#include <string>

#include "core/dtype.h"
#include "io/gguf.h"
#include "model/config.h"
#include "model/processor.h"
#include "tokenizer/tokenizer.h"
#include "model/weights.h"

namespace locr::model {

struct GgufCheckpoint {
  std::shared_ptr<io::GgufFile> text;    // general.architecture "qwen3"
  std::shared_ptr<io::GgufFile> mmproj;  // "clip", projector "lightonocr"; null: a text-only model
};

// Opens both files and checks what they are (arch, projector type); mmproj_path may be empty.
GgufCheckpoint open_gguf_checkpoint(const std::string& text_path, const std::string& mmproj_path);

ModelConfig gguf_model_config(const GgufCheckpoint& ck);
ProcessorConfig gguf_processor_config(const GgufCheckpoint& ck, int align);
// The documented LightOnOCR-2 defaults with the ids of the GGUF's tokenizer metadata.
GenerationConfig gguf_generation_config(const io::GgufFile& text);
// Id of `token` in tokenizer.ggml.tokens, or -1.
int gguf_token_id(const io::GgufFile& text, const std::string& token);
// The chat template embedded in the text GGUF (tokenizer.chat_template); empty when none.
std::string gguf_chat_template(const io::GgufFile& text);
// The directory a GGUF file is in ("." for a bare name).
std::string gguf_dir_of(const std::string& path);
// The tokenizer of a GGUF model: from its tokenizer.ggml.* metadata (tokenizer/from_gguf.h), as
// llama-server builds it. A tokenizer.json next to the text GGUF at `path` wins when present (a HF
// tokenizer that travels with the file; it differs only in which <|...|> tokens decoding skips).
std::unique_ptr<tokenizer::Tokenizer> gguf_tokenizer(const io::GgufFile& text, const std::string& path,
                                          const tokenizer::TokenizerOptions& options);
// The chat template: `chat_template_file` (--chat-template) when given, else the GGUF's
// tokenizer.chat_template, else a chat_template.jinja next to the file; else an error naming all three.
std::string gguf_template_source(const io::GgufFile& text, const std::string& path,
                                 const std::string& chat_template_file);

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

// The one place a GGUF tensor becomes a Matrix [rows, cols]: F32, F16 and BF16 point into the
// mapped file, and so do Q8_0, Q4_K and Q6_K with `keep_quantized` (DType::kQ8_0 / kQ4_K / kQ6_K, run natively,
// when the rows are whole blocks: native_quantized_dtype); any other type is
// dequantized to `dequantize_to` into a buffer the Matrix owns. `row_of` (may be null) gives, for
// each output row, the file row it comes from (a copy then, in the same type).
Matrix bind_gguf_matrix(const std::shared_ptr<io::GgufFile>& file, const io::GgufTensor& t, int64_t rows,
                        int64_t cols, DType dequantize_to, const std::vector<int64_t>* row_of = nullptr,
                        bool keep_quantized = false);

// The DType a GGUF tensor of ggml type `type` with rows of `cols` runs as natively: kQ8_0, kQ4_K, kQ6_K, or
// kF32 meaning "not natively" (other types, or rows that are not a whole number of blocks).
DType native_quantized_dtype(uint32_t type, int64_t cols);

// For each HF row of a [n_heads * head_dim, cols] q/k weight, the row of the converter's permuted
// layout it is found at: HF row h*hd + s*hd/2 + j is GGUF row h*hd + 2j + s.
std::vector<int64_t> unpermute_rows(int64_t n_heads, int64_t head_dim);

}  // namespace locr::model
