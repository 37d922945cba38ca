// `locr quantize`: a LightOnOCR model directory (safetensors, HF layout) written as the two GGUF
// files llama.cpp's convert_hf_to_gguf.py writes for it, and that llama.cpp (and locr) load: a text
// model of arch `qwen3` and an mmproj of arch `clip` with projector type `lightonocr`. The inverse
// of model/gguf_checkpoint.h; tensor names, metadata keys, their order and types, the tensor order
// (the checkpoint's, by name) and each tensor's type are the converter's (llama.cpp as vendored by
// llama-cpp-python 0.3.36, the one tools/reference/make_gguf_model_fixtures.py runs):
//
//   --type   2-D weights               1-D (norms)   v.patch_embd, mm.patch_merger   general.file_type
//   f32      F32                       F32           F32                             0
//   f16      F16                       F32           F16                             1
//   bf16     BF16                      F32           F32                             32
//   q8_0     Q8_0 (kernels' quantizer, F32           F32                             7
//            bit-equal to llama.cpp's)
//   q4_k_m   text: llama-quantize's    F32           F32                             15 (mmproj: 7)
//            Q4_K_M mix (Q4_K; head,
//            more-bits attn_v/ffn_down
//            Q6_K), mmproj as q8_0
//
// q4_k_m is what llama.cpp's llama-quantize Q4_K_M writes from the converter's file (without an
// importance matrix): the types of llama_tensor_get_type for qwen3 (gguf_export.cc q4_k_m_type),
// its tensor order (outside the blocks first, then by block number, by name within), its metadata
// (the converter's, with general.quantization_version and general.file_type moved last), the
// quantizers bit-equal to quantize_row_q4_K_ref / q6_K_ref. It quantizes from the checkpoint's own
// floats (llama-quantize from the f16/bf16 file's). The mmproj is the q8_0 one (llama-quantize
// takes no clip model). A Q4_K tensor whose rows are not whole 256-element super-blocks is an error
// (llama-quantize falls back to Q5_0, which locr does not write); a Q6_K one becomes Q8_0, as there.
//
// The vision attn_q / attn_k rows are permuted as the converter's LlamaModel.permute does (the
// loader's unpermute_rows undoes it); the text model's are not (Qwen3). The tokenizer is written
// as tokenizer.ggml.* (gpt2 / qwen2, tokens with their types, merges, special ids, add_bos/eos),
// with tokenizer.chat_template; general.sampling.* from generation_config.json.
//
// Knowingly different from the converter (provenance only, nothing a loader reads): general.name
// is the model directory's name (the repository's in the HF cache) title-cased as the converter
// does for a directory, without the other general.* it guesses from a model card (basename,
// license, tags, ...); general.size_label is always counted from the tensors.
// Where the converter falls back to F16 for a Q8_0 tensor whose rows are not whole 32-blocks,
// this is an error (--type q8_0 promises Q8_0 weights).
#pragma once

#include <cstdint>
#include <string>

#include "io/gguf.h"

namespace locr::model {

enum class GgufOutType { kF32, kF16, kBF16, kQ8_0, kQ4_K_M };

// "f32", "f16", "bf16", "q8_0", "q4_k_m" (case-insensitive). Anything else is a kInvalidArgument
// error naming the supported types.
GgufOutType parse_gguf_out_type(const std::string& s);
const char* gguf_out_type_name(GgufOutType t);

// The type llama.cpp's Q4_K_M mix gives the text tensor `name` (a 2-D weight with rows of `cols`)
// of a qwen3 model of n_layers layers, `tied` when token_embd is also the head: see gguf_export.cc.
io::GgmlType q4_k_m_type(const std::string& name, int64_t cols, int n_layers, bool tied);

// The converter's mmproj name for a text output: mmproj-<file name> in the same directory.
std::string default_mmproj_path(const std::string& text_path);

struct GgufExportResult {
  int text_tensors = 0, mmproj_tensors = 0;  // mmproj_tensors 0: no vision encoder, no mmproj written
  uint64_t text_bytes = 0, mmproj_bytes = 0;
  int quantized = 0;  // tensors written quantized (Q8_0, Q4_K, Q6_K)
  int q4_k = 0, q6_k = 0;  // of which Q4_K, Q6_K (q4_k_m)
};

// Writes the model in `model_dir` to text_path (and mmproj_path). Everything is checked (the
// checkpoint as load_weights does, the output directories, for q8_0 every quantized tensor's row
// width) before a byte is written; each file is written atomically.
GgufExportResult export_gguf(const std::string& model_dir, const std::string& text_path, const std::string& mmproj_path,
                             GgufOutType type);

}  // namespace locr::model
