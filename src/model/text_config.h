// LightOnOCR-2's text_config, its Qwen3 decoder's (read from config.json by ModelConfig::from_json,
// model/lightonocr/config.h, or from a GGUF by gguf_model_config, model/lightonocr/gguf_checkpoint.h).
// Shared, not in model/lightonocr/: it is also the KV shape model::KvPool is built from
// (num_hidden_layers, num_key_value_heads, head_dim; model/kv_pool.h), which Qwen3.5 fills in for
// its full-attention layers (qwen35::kv_shape, model/qwen35/decoder.h).
#pragma once

namespace locr::model {

struct TextConfig {
  int hidden_size = 1024;
  int intermediate_size = 3072;
  int num_hidden_layers = 28;
  int num_attention_heads = 16;
  int num_key_value_heads = 8;
  int head_dim = 128;
  int vocab_size = 151936;
  float rms_norm_eps = 1e-6f;
  double rope_theta = 1e6;
  int max_position_embeddings = 16384;
  bool tie_word_embeddings = true;
};

}  // namespace locr::model
