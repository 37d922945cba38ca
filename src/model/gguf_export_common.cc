// What both families' `locr quantize` share; see gguf_export_common.h.
#include "model/gguf_export_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/dtype.h"
#include "core/error.h"
#include "model/gguf_export_parts.h"

namespace locr::model {

using io::GgmlType;
using namespace export_detail;

GgufOutType parse_gguf_out_type(const std::string& s) {
  std::string k = s;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k == "f32") return GgufOutType::kF32;
  if (k == "f16") return GgufOutType::kF16;
  if (k == "bf16") return GgufOutType::kBF16;
  if (k == "q8_0") return GgufOutType::kQ8_0;
  if (k == "q4_k_m") return GgufOutType::kQ4_K_M;
  if (k.rfind("q4_k", 0) == 0 || k.rfind("q5_k", 0) == 0 || k.rfind("q6_k", 0) == 0 || k.rfind("q4_", 0) == 0)
    fail(ErrorKind::kInvalidArgument, "--type ", s, " is not supported yet: locr quantize writes q4_k_m, q8_0, f16, "
         "bf16 or f32 (for other K-quants, run llama.cpp's llama-quantize on an f16/bf16 file locr wrote)");
  fail(ErrorKind::kInvalidArgument, "--type ", s.empty() ? std::string("''") : s, " is not a GGUF type locr quantize "
       "writes: use q4_k_m, q8_0, f16, bf16 or f32");
}

const char* gguf_out_type_name(GgufOutType t) {
  switch (t) {
    case GgufOutType::kF32: return "f32";
    case GgufOutType::kF16: return "f16";
    case GgufOutType::kBF16: return "bf16";
    case GgufOutType::kQ8_0: return "q8_0";
    case GgufOutType::kQ4_K_M: return "q4_k_m";
  }
  return "?";
}

bool q4_k_m_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// llama.cpp's Q4_K_M mix for a qwen3 model without an importance matrix (llama-quant.cpp,
// llama_tensor_get_type_impl with LLAMA_FTYPE_MOSTLY_Q4_K_M): the head (output.weight, or
// token_embd when the embeddings are tied) Q6_K, or Q8_0 when its rows are not whole 256-blocks;
// attn_v and ffn_down of the use_more_bits layers Q6_K (with one layer per tensor, the counters are
// the layer index); every other 2-D weight Q4_K.
io::GgmlType q4_k_m_choice(const std::string& name, int64_t cols, int n_layers, bool tied) {
  int layer = -1;
  std::sscanf(name.c_str(), "blk.%d.", &layer);
  if (name == "output.weight" || (tied && name == "token_embd.weight"))
    return cols % 256 != 0 ? GgmlType::kQ8_0 : GgmlType::kQ6_K;
  // llama-quant.cpp's category_is_attn_v takes attn_qkv (Qwen3.5's DeltaNet input projection) with
  // attn_v; with one of them per block, its counter is the block number, as ffn_down's is.
  if ((name.find("attn_v.weight") != std::string::npos || name.find("attn_qkv.weight") != std::string::npos ||
       name.find("ffn_down") != std::string::npos) &&
      q4_k_m_more_bits(layer, n_layers))
    return GgmlType::kQ6_K;
  return GgmlType::kQ4_K;
}

// llama-quant.cpp tensor_type_fallback: when ne[0] % ggml_blck_size(type) != 0, Q4_K -> Q5_0,
// Q6_K -> Q8_0, a 32-block type (Q8_0) stays; then "must use F16 due to unusual shape" when the
// rows are not whole blocks of that either.
io::GgmlType llama_quantize_fallback(io::GgmlType type, int64_t cols) {
  if (cols % block_size(type) == 0) return type;
  GgmlType t = type;
  if (type == GgmlType::kQ4_K) t = GgmlType::kQ5_0;
  else if (type == GgmlType::kQ6_K) t = GgmlType::kQ8_0;
  else if (block_size(type) > 32)
    fail(ErrorKind::kInternal, "no tensor type fallback is defined for type ", type_name(type));
  return cols % block_size(t) == 0 ? t : GgmlType::kF16;
}

// convert_hf_to_gguf.py (ModelBase.prepare_tensors): gguf.quants.quantize raises QuantError for a
// Q8_0 tensor whose last dimension is not whole 32-blocks, and the converter writes it as F16.
io::GgmlType converter_fallback(io::GgmlType type, int64_t cols) {
  return type == GgmlType::kQ8_0 && cols % 32 != 0 ? GgmlType::kF16 : type;
}

io::GgmlType q4_k_m_type(const std::string& name, int64_t cols, int n_layers, bool tied) {
  return llama_quantize_fallback(q4_k_m_choice(name, cols, n_layers, tied), cols);
}

// ggml-quants.c quantize_row_q5_0_ref (block_q5_0: ggml_half d, uint8_t qh[4], uint8_t qs[16]).
void quantize_row_q5_0(const float* x, void* y, int64_t n) {
  if (n % 32 != 0) fail(ErrorKind::kInternal, "quantize_row_q5_0: ", n, " is not a multiple of 32");
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / 32; ++b, x += 32, out += 22) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = f32_to_f16(d);
    std::memcpy(out, &dh, 2);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const float x0 = x[j] * id;
      const float x1 = x[16 + j] * id;
      const uint8_t xi0 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x0 + 16.5f)));
      const uint8_t xi1 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x1 + 16.5f)));
      out[6 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(out + 2, &qh, 4);
  }
}

std::string default_mmproj_path(const std::string& text_path) {
  const std::filesystem::path p(text_path);
  return (p.parent_path() / ("mmproj-" + p.filename().string())).string();
}

}  // namespace locr::model
