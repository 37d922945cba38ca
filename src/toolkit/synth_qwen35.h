// `locr make-model` for the Qwen3.5 family (LightOnOCR-3-0.8B / -4B: transformers'
// Qwen3_5ForConditionalGeneration, model_type "qwen3_5"): a complete Hugging Face model directory
// with random weights of the real shapes and names (model.language_model.*, model.visual.*;
// lm_head.weight only when untied), config.json as transformers 5.24 save_pretrained writes it,
// preprocessor / video preprocessor / generation configs in the hub form, the real Qwen3.5 chat
// template, and a synthetic byte-level BPE tokenizer (toolkit/synth_tokenizer.h) whose 33 added
// tokens sit at the real ids (248044 + i) and whose split regex is Qwen3.5's.
//
// Weights use the machinery of toolkit/synth_model.h (a pure function of seed, tensor name and
// element index; streamed to one model.safetensors). Initialisation, chosen so that activations
// stay O(1) through the recurrent (Gated DeltaNet) and attention layers and logits have unit spread:
//   linear weights (incl. in_proj_*, q/k/v/o, MLP, vision qkv/proj/fc, merger) N(0, 1/fan_in);
//   the vision patch embedding (Conv3d [hidden, 3, 2, 16, 16]) N(0, 1/1536) (fan_in = 3 * 2 * 16 * 16);
//   embed_tokens (and an untied lm_head) N(0, 1/hidden);
//   Qwen3_5RMSNorm weights (input / post-attention / final norms, q_norm, k_norm; the model scales
//     by 1 + w) N(0, 0.05^2);
//   the gated RMSNorm linear_attn.norm.weight (plain w) 1 + N(0, 0.05^2);
//   linear_attn.A_log = log(U(1, 16)) (decay rates A in [1, 16], as Mamba-2 / transformers' init);
//   linear_attn.dt_bias N(0, 0.1^2); linear_attn.conv1d.weight [C, 1, 4] N(0, 1/4);
//   vision LayerNorm weights 1 + N(0, 0.05^2), every bias (LayerNorm and linear) N(0, 0.02^2);
//   model.visual.pos_embed.weight N(0, 0.02^2).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "toolkit/synth_model.h"

namespace locr::toolkit {

struct Qwen35Preset {
  std::string name;
  // Text decoder (Qwen3_5TextModel): layers (i + 1) % full_attention_interval == 0 are gated full
  // attention, the others Gated DeltaNet ("linear_attention").
  int64_t text_hidden = 1024, text_intermediate = 3584, text_layers = 24, full_attention_interval = 4;
  int64_t text_heads = 8, text_kv_heads = 2, text_head_dim = 256;
  int64_t linear_key_heads = 16, linear_value_heads = 16, linear_key_head_dim = 128, linear_value_head_dim = 128,
          linear_conv_kernel = 4;
  std::array<int, 3> mrope_section = {11, 11, 10};  // sums to text_head_dim * 0.25 / 2
  int64_t vocab_size = 248320;         // embedding rows (padded past the tokenizer's ids)
  int64_t n_regular_tokens = 248044;   // tokenizer ids below the 33 added tokens
  int64_t max_position_embeddings = 262144;
  bool tie_word_embeddings = true;
  // Vision tower (Qwen3_5VisionModel, no DeepStack).
  int64_t vision_hidden = 768, vision_intermediate = 3072, vision_depth = 12, vision_heads = 12,
          num_position_embeddings = 2304, patch_size = 16, temporal_patch_size = 2, spatial_merge_size = 2;
  // Chat template: Qwen3.5-0.8B / 2B's (thinking only when enable_thinking is true) or that of
  // Qwen3.5-4B and larger (thinking unless enable_thinking is false).
  bool thinks_by_default = false;

  bool full_attention(int64_t layer) const { return (layer + 1) % full_attention_interval == 0; }
  int64_t conv_dim() const { return 2 * linear_key_heads * linear_key_head_dim + linear_value_heads * linear_value_head_dim; }
  // Id of added token i of qwen35_added_tokens() (0 = <|endoftext|>, 2 = <|im_end|>, 12 = <|image_pad|>).
  int64_t added_id(int i) const { return n_regular_tokens + i; }
};

// True for "lightonocr-3-0.8b", "lightonocr-3-4b", "tiny-qwen35" and "tiny-qwen35-k".
bool is_qwen35_preset(const std::string& name);
// "lightonocr-3-0.8b" (Qwen3.5-0.8B's shape), "lightonocr-3-4b" (Qwen3.5-4B's) or "tiny-qwen35"
// (4 layers [L, L, L, F] of hidden 128, the real head widths (attention 256, DeltaNet 128, vision
// 64), 2 vision blocks, a 4096-row vocabulary with the added tokens at 4000..4032) or "tiny-qwen35-k"
// (8 layers of hidden 256 / ffn 512, every text row whole 256-blocks, value heads = 2 x key heads,
// untied: for quantize --type q4_k_m).
Qwen35Preset qwen35_preset(const std::string& name);

// Every tensor, sorted by name (the order in the file).
std::vector<WeightSpec> qwen35_weight_specs(const Qwen35Preset& p);
int64_t qwen35_param_count(const Qwen35Preset& p);
int64_t qwen35_text_param_count(const Qwen35Preset& p);    // model.language_model.* and lm_head.weight
int64_t qwen35_vision_param_count(const Qwen35Preset& p);  // model.visual.*

// config.json (keys sorted, as save_pretrained writes them).
nlohmann::json qwen35_config_json(const Qwen35Preset& p, DType dtype);
nlohmann::ordered_json qwen35_generation_config_json(const Qwen35Preset& p);
nlohmann::ordered_json qwen35_preprocessor_config_json();
nlohmann::ordered_json qwen35_video_preprocessor_config_json();
// The real Qwen3.5 chat.template.jinja: Qwen3.5-0.8B's (thinks_by_default false) or -4B's.
const std::string& qwen35_chat_template(bool thinks_by_default);

// make_model for a Qwen3.5 preset: config.json, generation_config.json, preprocessor_config.json,
// video_preprocessor_config.json, chat_template.jinja, tokenizer.json, tokenizer_config.json,
// model.safetensors.
MakeModelResult make_qwen35_model(const MakeModelOptions& opts,
                                  const std::function<void(uint64_t, uint64_t)>& progress = {});

}  // namespace locr::toolkit
