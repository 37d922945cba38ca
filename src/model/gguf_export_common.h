// What both families' `locr quantize` (model/lightonocr/gguf_export.h for LightOnOCR-2,
// model/qwen35/gguf_export.h for Qwen3.5) share, as their callers see it: the --type, llama.cpp's
// Q4_K_M mix and fallbacks, the Q5_0 quantizer, the mmproj's default name and what an export
// returns. The writers' internal helpers are in model/gguf_export_parts.h.
//
// Fallbacks: a weight whose rows (ne[0] elements) are not whole blocks of its type is written in
// the type llama.cpp writes for it, and listed in GgufExportResult::fallbacks (the CLI names them).
// The converter (convert_hf_to_gguf.py, ModelBase.prepare_tensors: gguf.QuantError "falling back
// to F16") writes such a Q8_0 tensor as F16, whatever the checkpoint's dtype (f32 and bf16
// weights rounded to F16, f16 ones copied); f16 / bf16 / f32 never fall back. llama-quantize
// (llama-quant.cpp tensor_type_fallback) turns Q4_K into Q5_0 and Q6_K into Q8_0, and a type whose
// 32-element blocks still do not fit (Q8_0 or Q5_0 on rows that are not whole 32-blocks) into F16.
//
// q4_k_m is what llama.cpp's llama-quantize Q4_K_M writes from the converter's file (without an
// importance matrix): the types of llama_tensor_get_type for qwen3 (gguf_export_common.cc
// q4_k_m_type), its tensor order (outside the blocks first, then by block number, by name within),
// its metadata (the converter's, with general.quantization_version and general.file_type moved
// last), the quantizers bit-equal to quantize_row_q4_K_ref / q6_K_ref. It quantizes from the
// checkpoint's own floats (llama-quantize from the f16/bf16 file's). The mmproj is the q8_0 one
// (llama-quantize takes no clip model). Q5_0 blocks (the Q4_K fallback) are quantize_row_q5_0_ref's.
//
// Knowingly different from the converter (provenance only, nothing a loader reads): general.name
// is the model directory's name (the repository's in the HF cache) title-cased as the converter
// does for a directory, without the other general.* it guesses from a model card (basename,
// license, tags, ...); general.size_label is always counted from the tensors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/gguf.h"

namespace locr::model {

enum class GgufOutType { kF32, kF16, kBF16, kQ8_0, kQ4_K_M };

// "f32", "f16", "bf16", "q8_0", "q4_k_m" (case-insensitive). Anything else is a kInvalidArgument
// error naming the supported types.
GgufOutType parse_gguf_out_type(const std::string& s);
const char* gguf_out_type_name(GgufOutType t);

// The type llama.cpp's Q4_K_M mix chooses for the text tensor `name` (a 2-D weight with rows of
// `cols`) of a qwen3 or qwen35 model of n_layers layers, `tied` when token_embd is also the head,
// before the fallback for rows that are not whole blocks (llama_tensor_get_type_impl): see
// gguf_export_common.cc. (qwen35: attn_qkv counts as attn_v; every block has one of the two.)
io::GgmlType q4_k_m_choice(const std::string& name, int64_t cols, int n_layers, bool tied);
// llama-quantize's use_more_bits: whether layer i of n_layers is one of the layers whose attn_v (or
// attn_qkv) and ffn_down Q4_K_M keeps in Q6_K.
bool q4_k_m_more_bits(int i, int n_layers);
// What llama-quantize writes for a tensor it chose `type` for, with rows of `cols` elements
// (llama-quant.cpp tensor_type_fallback): `type` when the rows are whole blocks of it; else Q4_K ->
// Q5_0, Q6_K -> Q8_0, and F16 when the rows are not whole 32-blocks either (Q8_0 and Q5_0 included).
io::GgmlType llama_quantize_fallback(io::GgmlType type, int64_t cols);
// What the converter writes for a tensor it chose `type` for: F16 for a Q8_0 tensor whose rows are
// not whole 32-blocks (gguf.QuantError, "falling back to F16"), `type` otherwise.
io::GgmlType converter_fallback(io::GgmlType type, int64_t cols);
// The Q4_K_M type of a text tensor: llama_quantize_fallback(q4_k_m_choice(...), cols).
io::GgmlType q4_k_m_type(const std::string& name, int64_t cols, int n_layers, bool tied);

// llama.cpp's quantize_row_q5_0_ref: per 32 floats, d = (the value of largest magnitude) / -16 as
// F16, 5-bit quants min(31, (int8_t)(x / d + 16.5)), low nibbles in qs, fifth bits in qh. n is a
// multiple of 32; y receives n / 32 * 22 bytes.
void quantize_row_q5_0(const float* x, void* y, int64_t n);

// The converter's mmproj name for a text output: mmproj-<file name> in the same directory.
std::string default_mmproj_path(const std::string& text_path);

// A weight written in a wider type than the one chosen for it, because its rows are not whole
// blocks of that type (see "Fallbacks" above).
struct GgufFallback {
  bool mmproj = false;  // in the mmproj file (else the text model)
  std::string name;     // GGUF tensor name
  int64_t cols = 0;     // ne[0], the row length
  io::GgmlType chosen = io::GgmlType::kQ8_0, written = io::GgmlType::kF16;
};

struct GgufExportResult {
  int text_tensors = 0, mmproj_tensors = 0;  // mmproj_tensors 0: no vision encoder, no mmproj written
  uint64_t text_bytes = 0, mmproj_bytes = 0;
  int quantized = 0;  // tensors written quantized (Q8_0, Q5_0, Q4_K, Q6_K), both files
  int q4_k = 0, q5_0 = 0, q6_k = 0, q8_0 = 0;  // of which of each type
  std::vector<GgufFallback> fallbacks;  // in the files' tensor order, text first
};

}  // namespace locr::model
