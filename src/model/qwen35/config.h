// Configuration of the Qwen3.5 family (LightOnOCR-3-0.8B / -4B: transformers'
// Qwen3_5ForConditionalGeneration, model_type "qwen3_5"), parsed from config.json as transformers 5.24
// reads it (configuration_qwen3_5.py), with its defaults. Field names keep the HF spelling.
// Validated once at load; the model code trusts it afterwards.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace locr::model::qwen35 {

struct TextConfig {
  int vocab_size = 248320;
  int hidden_size = 4096;
  int intermediate_size = 12288;
  int num_hidden_layers = 32;
  int num_attention_heads = 16;
  int num_key_value_heads = 4;
  int head_dim = 256;
  float rms_norm_eps = 1e-6f;
  bool tie_word_embeddings = false;
  int max_position_embeddings = 32768;
  // rope_parameters: rotary on the first partial_rotary_factor of each head, multimodal (T, H, W)
  // sections interleaved over the frequencies (mrope_section[0] is never read).
  double rope_theta = 1e7;
  double partial_rotary_factor = 0.25;
  std::array<int, 3> mrope_section = {11, 11, 10};
  // Gated DeltaNet ("linear_attention") layers.
  int linear_conv_kernel_dim = 4;
  int linear_key_head_dim = 128;
  int linear_value_head_dim = 128;
  int linear_num_key_heads = 16;
  int linear_num_value_heads = 32;
  std::vector<bool> full_attention;  // per layer: true = gated full attention, false = Gated DeltaNet

  int rotary_dim() const { return static_cast<int>(head_dim * partial_rotary_factor); }
  int n_full_layers() const;
  int n_linear_layers() const { return num_hidden_layers - n_full_layers(); }
  // The conv's channels: [q | k | v] of all heads.
  int conv_dim() const { return 2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * linear_value_head_dim; }
};

struct VisionConfig {
  int depth = 27;
  int hidden_size = 1152;
  int intermediate_size = 4304;
  int num_heads = 16;
  int in_channels = 3;
  int patch_size = 16;
  int temporal_patch_size = 2;
  int spatial_merge_size = 2;
  int out_hidden_size = 3584;
  int num_position_embeddings = 2304;
  double rope_theta = 10000.0;
  float norm_eps = 1e-6f;  // nn.LayerNorm(eps=1e-6) in the blocks and the merger, not in config.json
  int head_dim() const { return hidden_size / num_heads; }
  int grid_side() const;  // sqrt(num_position_embeddings)
  // Floats of one patch: in_channels x temporal_patch_size x patch_size x patch_size.
  int patch_values() const { return in_channels * temporal_patch_size * patch_size * patch_size; }
};

struct Config {
  std::string model_type;  // "qwen3_5"
  TextConfig text;
  VisionConfig vision;
  int image_token_id = 248056;
  int video_token_id = 248057;
  int vision_start_token_id = 248053;
  int vision_end_token_id = 248054;

  static Config from_json(const nlohmann::json& j, const std::string& source = "config.json");
  static Config from_file(const std::string& path);
};

// True when config.json describes a Qwen3.5 model (model_type "qwen3_5"), the architecture this
// folder implements.
bool is_qwen35_config(const nlohmann::json& j);

}  // namespace locr::model::qwen35
