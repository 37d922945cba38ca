// `locr make-model`: a complete Hugging Face model directory for LightOnOCR-2 with random weights
// (config.json in the hub form, model.safetensors with the real tensor names, a synthetic tokenizer
// with the real special-token ids, the real chat template, processor and generation configs).
// The Qwen3.5 family (LightOnOCR-3-0.8B / -4B) reuses this machinery: toolkit/synth_qwen35.h.
//
// Weights are a pure function of (seed, tensor name, element index): a counter-based hash gives
// four 16-bit uniforms per element, summed (Irwin-Hall, close to a normal with bounded tails).
// Linear and conv weights: N(0, 1/fan_in); embeddings N(0, 1/hidden) so tied-head logits have
// unit spread; norm weights 1 + N(0, 0.05^2). The file is filled in parallel and streamed to disk.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace locr::toolkit {

struct SynthPreset {
  std::string name;
  // Text decoder (Qwen3).
  int64_t text_hidden = 1024, text_intermediate = 3072, text_layers = 28, text_heads = 16, text_kv_heads = 8,
          text_head_dim = 128, vocab_size = 151936, max_position_embeddings = 16384;
  bool tie_word_embeddings = true;
  // Vision encoder (Pixtral).
  int64_t vision_hidden = 1024, vision_intermediate = 4096, vision_layers = 24, vision_heads = 16, patch_size = 14;
  int64_t n_regular_tokens = 151643;  // tokenizer ids below the added tokens
};

// "lightonocr-2-1b" (the real shapes), "tiny" (2+2 layers, hidden 64/32, the real vocabulary) or
// "tiny-hd64" (2+2 layers, hidden 128, head_dim 64 in both towers: the CUDA kernels' head size) or
// "tiny-k" (8 text layers of hidden 256 / ffn 512, widths of whole K-quant super-blocks, and the
// tiny vision tower: for `locr quantize --type q4_k_m`). The Qwen3.5 family's presets
// (lightonocr-3-0.8b, lightonocr-3-4b, tiny-qwen35, tiny-qwen35-k) are in toolkit/synth_qwen35.h.
SynthPreset synth_preset(const std::string& name);

// kLinear: N(0, 1/fan_in); kEmbedding: N(0, 1/shape[1]); kNorm: 1 + N(0, 0.05^2);
// kNormal: N(mean, sd^2); kLogUniform: log(U(lo, hi)).
enum class WeightKind { kLinear, kEmbedding, kNorm, kNormal, kLogUniform };

struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
  WeightKind kind;
  int64_t fan_in;  // for kLinear (conv: in_channels * k * k)
  float mean = 0, sd = 0;  // for kNormal
  float lo = 0, hi = 0;    // for kLogUniform
};

// Every tensor of the checkpoint, sorted by name (the order in the file).
std::vector<WeightSpec> synth_weight_specs(const SynthPreset& p);
int64_t synth_param_count(const SynthPreset& p);

// Element i of tensor `name` for `seed` (before conversion to the output dtype).
float synth_weight_value(uint64_t seed, const WeightSpec& spec, int64_t i);
// transformers' name of a dtype in config.json ("bfloat16", "float16", "float32").
const char* synth_torch_dtype_name(DType dt);

nlohmann::ordered_json synth_config_json(const SynthPreset& p, DType dtype);
nlohmann::ordered_json synth_generation_config_json(const SynthPreset& p);
nlohmann::ordered_json synth_processor_config_json();
// The LightOnOCR chat template (chat_template.jinja of the hub repositories).
const char* lightonocr_chat_template();

struct MakeModelOptions {
  std::string preset = "lightonocr-2-1b";
  uint64_t seed = 0;
  DType dtype = DType::kBF16;  // kBF16, kF16 or kF32
  std::string out_dir;
};

struct MakeModelResult {
  int64_t n_params = 0;
  uint64_t weights_bytes = 0;  // size of model.safetensors
  double weights_seconds = 0, total_seconds = 0;
};

// Writes the directory (created if missing; existing files are replaced). `progress` is called
// with (bytes written, total bytes) while the weights are written. Qwen3.5 presets
// (is_qwen35_preset) go to make_qwen35_model.
MakeModelResult make_model(const MakeModelOptions& opts,
                           const std::function<void(uint64_t, uint64_t)>& progress = {});

// Streams `specs` (in that order) to a single safetensors file at `path` (written to path.tmp,
// then renamed), every tensor filled by the thread pool from synth_weight_value(seed, ...).
// Fills res->n_params and res->weights_bytes / weights_seconds.
void write_synth_safetensors(const std::string& path, const std::vector<WeightSpec>& specs, uint64_t seed,
                             DType dtype, const std::function<void(uint64_t, uint64_t)>& progress,
                             MakeModelResult* res);

}  // namespace locr::toolkit
