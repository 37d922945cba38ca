// The weights of a Qwen3.5 checkpoint (transformers' Qwen3_5ForConditionalGeneration names:
// model.language_model.*, model.visual.*, lm_head.weight when untied; mtp.* is the multi-token
// prediction head, not read), bound by name and shape-checked against the config.
//
// Load-time rewrites, each exact:
//   - every Qwen3_5RMSNorm weight w becomes (1 + w) in F32 (transformers: x_normed * (1.0 + w.float()));
//   - q_proj's rows, [q | gate] interleaved per head, are regrouped to [all q | all gates];
//   - the Gated DeltaNet conv weight [C, 1, K] is read as [C, K].
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/qwen35/config.h"
#include "model/quantize_matrix.h"

namespace locr::model::qwen35 {

using kernels::Matrix;
using kernels::StackedMatrix;

struct DeltaNetWeights {
  // [in_proj_qkv; in_proj_z; in_proj_b; in_proj_a]: one GEMM gives [qkv | z | b | a] of a row.
  StackedMatrix in_proj;
  Matrix conv;     // [conv_dim, K]
  Matrix a_log;    // [1, n_v_heads]
  Matrix dt_bias;  // [1, n_v_heads]
  Matrix norm;     // [1, v_dim]: the gated RMSNorm's plain weight
  Matrix out_proj; // [hidden, n_v_heads * v_dim]
};

struct AttentionWeights {
  // [q; gate; k; v] (q_proj regrouped): one GEMM gives [q | gate | k | v] of a row.
  StackedMatrix qgkv;
  Matrix q_norm, k_norm;  // [1, head_dim], (1 + w)
  Matrix o_proj;          // [hidden, heads * head_dim]
};

struct LayerWeights {
  bool full_attention = false;
  Matrix input_layernorm, post_attention_layernorm;  // (1 + w)
  DeltaNetWeights linear;                            // when !full_attention
  AttentionWeights attn;                             // when full_attention
  StackedMatrix gate_up;                             // [gate; up]
  Matrix down_proj;
};

struct TextWeights {
  // The DeltaNet layers' value heads in llama.cpp's tiled order (a GGUF file's, when value heads
  // outnumber key heads: every value-head axis as the converter reordered it, kernels::DeltaNetParams
  // ::tiled), else transformers' grouped order.
  bool tiled_v_heads = false;
  Matrix embed_tokens;  // [vocab, hidden]
  std::vector<LayerWeights> layers;
  Matrix norm;     // (1 + w)
  Matrix lm_head;  // [vocab, hidden]; the embedding table when tied
};

struct Linear {
  Matrix w, b;  // [out, in], [1, out]
};

struct VisionBlockWeights {
  Matrix norm1_w, norm1_b, norm2_w, norm2_b;
  Linear qkv, proj, fc1, fc2;
};

struct VisionWeights {
  Linear patch_embed;  // [hidden, C * T * p * p] (the Conv3d kernel flattened in (c, t, y, x) order)
  Matrix pos_embed;    // [num_position_embeddings, hidden]
  std::vector<VisionBlockWeights> blocks;
  Matrix merger_norm_w, merger_norm_b;  // [1, hidden]
  Linear merger_fc1, merger_fc2;        // [4h, 4h], [out, 4h]
};

struct Weights {
  TextWeights text;
  VisionWeights vision;
};

// q_proj [heads * 2 * hd, H], each head's hd query rows then its hd gate rows (the checkpoint's
// layout, and the GGUF's attn_q), regrouped into {queries of every head, gates of every head}: a copy
// in w's dtype (whole rows, so quantized rows too).
std::pair<Matrix, Matrix> split_query_gate(const Matrix& w, int64_t heads, int64_t hd);

// Binds and shape-checks every tensor (errors name the tensor; a tensor nothing reads is an error,
// except mtp.*).
Weights load_weights(const io::SafetensorsSet& st, const Config& cfg);

// Lets `ops` lay out every matmul weight once (Ops::prepare_stack / prepare).
void prepare_weights(Weights& w, kernels::Ops& ops);

// `--quantization q8_0 | q4_k | q4_k_m` at load (before prepare_weights), as
// model/lightonocr/quantize_weights.h does it for LightOnOCR: every linear layer of the text decoder
// (the stacked attention and DeltaNet input projections part by part, o / out / gate / up / down) and
// of the vision tower and merger, and the LM head (a tied one gets its own copy); kept as stored:
// norms, the embedding table, the conv1d, A_log / dt_bias, biases, the position table and the patch
// embedding. q4_k_m is llama.cpp's mix as `locr quantize --type q4_k_m` writes it for this family
// (the vision tower Q8_0).
QuantizeCounts quantize_weights(Weights& w, const std::string& method);

}  // namespace locr::model::qwen35
