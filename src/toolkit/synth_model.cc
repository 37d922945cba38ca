#include "toolkit/synth_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <future>

#include "core/error.h"
#include "core/thread_pool.h"
#include "io/file.h"
#include "toolkit/synth_qwen35.h"
#include "toolkit/synth_tokenizer.h"

namespace locr::toolkit {

namespace {

using ojson = nlohmann::ordered_json;

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Irwin-Hall(4) of 16-bit uniforms, standardised: mean 0, variance 1.
inline float approx_normal(uint64_t r) {
  const uint32_t s = static_cast<uint32_t>(r & 0xFFFF) + static_cast<uint32_t>((r >> 16) & 0xFFFF) +
                     static_cast<uint32_t>((r >> 32) & 0xFFFF) + static_cast<uint32_t>(r >> 48);
  constexpr float kMean = 2.0f * 65535.0f;
  constexpr float kInvSd = 1.0f / 37837.23f;  // sqrt(4 * (65536^2 - 1) / 12)
  return (static_cast<float>(s) - kMean) * kInvSd;
}

// Normal tensors: mean + sd * N(0, 1); log-uniform ones (log_uniform): log(lo + (hi - lo) U(0, 1)),
// lo in `mean`, hi - lo in `sd`.
struct TensorGen {
  float mean, sd;
  uint64_t key;
  bool log_uniform = false;
};

TensorGen tensor_gen(uint64_t seed, const WeightSpec& w) {
  TensorGen g{0.0f, 1.0f, mix64(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) ^ name_hash(w.name)};
  switch (w.kind) {
    case WeightKind::kLinear: g.sd = 1.0f / std::sqrt(static_cast<float>(w.fan_in)); break;
    case WeightKind::kEmbedding: g.sd = 1.0f / std::sqrt(static_cast<float>(w.shape[1])); break;
    case WeightKind::kNorm: g.mean = 1.0f; g.sd = 0.05f; break;
    case WeightKind::kNormal: g.mean = w.mean; g.sd = w.sd; break;
    case WeightKind::kLogUniform:
      LOCR_CHECK(w.lo > 0 && w.hi >= w.lo, "log-uniform range of ", w.name);
      g.log_uniform = true, g.mean = w.lo, g.sd = w.hi - w.lo;
      break;
  }
  return g;
}

inline uint64_t element_bits(const TensorGen& g, int64_t i) {
  return mix64(g.key + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull);
}

inline float gen_value(const TensorGen& g, int64_t i) {
  if (g.log_uniform) {  // rare (a few tiny tensors): one branch per element is fine
    const double u = static_cast<double>(element_bits(g, i) >> 11) * 0x1.0p-53;  // [0, 1)
    return static_cast<float>(std::log(g.mean + g.sd * u));
  }
  return g.mean + g.sd * approx_normal(element_bits(g, i));
}

void fill(const TensorGen& g, DType dt, int64_t begin, int64_t n, void* dst) {
  switch (dt) {
    case DType::kF32: {
      float* p = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = gen_value(g, begin + i);
      break;
    }
    case DType::kBF16: {
      uint16_t* p = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(gen_value(g, begin + i));
      break;
    }
    case DType::kF16: {
      uint16_t* p = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) p[i] = f32_to_f16(gen_value(g, begin + i));
      break;
    }
    default: LOCR_CHECK(false);
  }
}

const char* torch_dtype_name(DType dt) { return synth_torch_dtype_name(dt); }

void write_text(const std::string& dir, const std::string& name, const std::string& text) {
  io::write_file_atomic(io::join_path(dir, name), text);
}

const char* kChatTemplate =
    "{% set image_count = namespace(value=0) %}\n"
    "{% for message in messages %}\n"
    "{% if loop.first and message['role'] != 'system' %}\n"
    "<|im_start|>system<|im_end|>\n"
    "{% endif %}\n"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}\n"
    "{{ message['content'] }}<|im_end|>\n"
    "{% else %}\n"
    "{% for content in message['content'] %}\n"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}\n"
    "{% set image_count.value = image_count.value + 1 %}\n"
    "{% if add_vision_id %}\n"
    "Picture {{ image_count.value }}:\n"
    "{% endif -%}\n"
    "<|image_pad|>\n"
    "{%- elif 'text' in content %}\n"
    "{{ content['text'] }}\n"
    "{% endif %}\n"
    "{% endfor %}\n"
    "<|im_end|>\n"
    "{% endif %}\n"
    "{% endfor %}\n"
    "{% if add_generation_prompt %}\n"
    "<|im_start|>assistant\n"
    "{% endif %}";

}  // namespace

SynthPreset synth_preset(const std::string& name) {
  SynthPreset p;
  p.name = name;
  if (name == "lightonocr-2-1b") return p;
  if (name == "tiny") {
    p.text_hidden = 64, p.text_intermediate = 128, p.text_layers = 2, p.text_heads = 4, p.text_kv_heads = 2,
    p.text_head_dim = 32;
    p.vision_hidden = 32, p.vision_intermediate = 96, p.vision_layers = 2, p.vision_heads = 2;
    return p;
  }
  if (name == "tiny-hd64") {  // tiny, with the head_dim (64) the CUDA attention kernels take
    p.text_hidden = 128, p.text_intermediate = 256, p.text_layers = 2, p.text_heads = 4, p.text_kv_heads = 2,
    p.text_head_dim = 64;
    p.vision_hidden = 128, p.vision_intermediate = 256, p.vision_layers = 2, p.vision_heads = 2;
    return p;
  }
  if (name == "tiny-k") {  // text widths of whole 256-element super-blocks, 8 layers (Q4_K_M's layer pattern)
    p.text_hidden = 256, p.text_intermediate = 512, p.text_layers = 8, p.text_heads = 4, p.text_kv_heads = 2,
    p.text_head_dim = 64;
    p.vision_hidden = 32, p.vision_intermediate = 96, p.vision_layers = 2, p.vision_heads = 2;
    return p;
  }
  fail(ErrorKind::kInvalidArgument, "unknown preset '", name,
       "' (expected lightonocr-2-1b, tiny, tiny-hd64, tiny-k, lightonocr-3-0.8b, lightonocr-3-4b or tiny-qwen35)");
}

std::vector<WeightSpec> synth_weight_specs(const SynthPreset& p) {
  std::vector<WeightSpec> w;
  auto lin = [&](const std::string& n, int64_t out, int64_t in) { w.push_back({n, {out, in}, WeightKind::kLinear, in}); };
  auto norm = [&](const std::string& n, int64_t d) { w.push_back({n, {d}, WeightKind::kNorm, 0}); };
  const int64_t vh = p.vision_hidden, th = p.text_hidden, ps = p.patch_size;
  const std::string ve = "model.vision_encoder.";
  w.push_back({ve + "patch_conv.weight", {vh, 3, ps, ps}, WeightKind::kLinear, 3 * ps * ps});
  norm(ve + "ln_pre.weight", vh);
  for (int64_t l = 0; l < p.vision_layers; ++l) {
    const std::string b = ve + "transformer.layers." + std::to_string(l) + ".";
    norm(b + "attention_norm.weight", vh);
    for (const char* x : {"q", "k", "v", "o"}) lin(b + "attention." + x + "_proj.weight", vh, vh);
    norm(b + "ffn_norm.weight", vh);
    lin(b + "feed_forward.gate_proj.weight", p.vision_intermediate, vh);
    lin(b + "feed_forward.up_proj.weight", p.vision_intermediate, vh);
    lin(b + "feed_forward.down_proj.weight", vh, p.vision_intermediate);
  }
  const std::string vp = "model.vision_projection.";
  norm(vp + "norm.weight", vh);
  lin(vp + "patch_merger.merging_layer.weight", vh, vh * 4);
  lin(vp + "linear_1.weight", th, vh);
  lin(vp + "linear_2.weight", th, th);
  const std::string lm = "model.language_model.";
  w.push_back({lm + "embed_tokens.weight", {p.vocab_size, th}, WeightKind::kEmbedding, th});
  const int64_t qd = p.text_heads * p.text_head_dim, kvd = p.text_kv_heads * p.text_head_dim;
  for (int64_t l = 0; l < p.text_layers; ++l) {
    const std::string b = lm + "layers." + std::to_string(l) + ".";
    norm(b + "input_layernorm.weight", th);
    lin(b + "self_attn.q_proj.weight", qd, th);
    lin(b + "self_attn.k_proj.weight", kvd, th);
    lin(b + "self_attn.v_proj.weight", kvd, th);
    lin(b + "self_attn.o_proj.weight", th, qd);
    norm(b + "self_attn.q_norm.weight", p.text_head_dim);
    norm(b + "self_attn.k_norm.weight", p.text_head_dim);
    norm(b + "post_attention_layernorm.weight", th);
    lin(b + "mlp.gate_proj.weight", p.text_intermediate, th);
    lin(b + "mlp.up_proj.weight", p.text_intermediate, th);
    lin(b + "mlp.down_proj.weight", th, p.text_intermediate);
  }
  norm(lm + "norm.weight", th);
  if (!p.tie_word_embeddings) w.push_back({"lm_head.weight", {p.vocab_size, th}, WeightKind::kLinear, th});
  std::sort(w.begin(), w.end(), [](const WeightSpec& a, const WeightSpec& b) { return a.name < b.name; });
  return w;
}

int64_t synth_param_count(const SynthPreset& p) {
  int64_t n = 0;
  for (const auto& w : synth_weight_specs(p)) {
    int64_t e = 1;
    for (int64_t d : w.shape) e *= d;
    n += e;
  }
  return n;
}

float synth_weight_value(uint64_t seed, const WeightSpec& spec, int64_t i) { return gen_value(tensor_gen(seed, spec), i); }

const char* synth_torch_dtype_name(DType dt) {
  switch (dt) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    default: return "bfloat16";
  }
}

ojson synth_config_json(const SynthPreset& p, DType dtype) {
  ojson text;
  text["architectures"] = {"Qwen3ForCausalLM"};
  text["attention_bias"] = false;
  text["attention_dropout"] = 0;
  text["dtype"] = torch_dtype_name(dtype);
  text["head_dim"] = p.text_head_dim;
  text["hidden_act"] = "silu";
  text["hidden_size"] = p.text_hidden;
  text["initializer_range"] = 0.02;
  text["intermediate_size"] = p.text_intermediate;
  text["layer_types"] = std::vector<std::string>(static_cast<size_t>(p.text_layers), "full_attention");
  text["max_position_embeddings"] = p.max_position_embeddings;
  text["max_window_layers"] = 28;
  text["model_type"] = "qwen3";
  text["num_attention_heads"] = p.text_heads;
  text["num_hidden_layers"] = p.text_layers;
  text["num_key_value_heads"] = p.text_kv_heads;
  text["rms_norm_eps"] = 1e-06;
  text["rope_parameters"] = {{"rope_theta", 1000000}, {"rope_type", "default"}};
  text["rope_theta"] = 1000000;
  text["sliding_window"] = nullptr;
  text["use_cache"] = true;
  text["use_sliding_window"] = false;
  text["tie_word_embeddings"] = p.tie_word_embeddings;
  text["vocab_size"] = p.vocab_size;
  text["use_qk_norm"] = true;
  ojson vision;
  vision["attention_dropout"] = 0;
  vision["dtype"] = torch_dtype_name(dtype);
  vision["head_dim"] = p.vision_hidden / p.vision_heads;
  vision["hidden_act"] = "silu";
  vision["hidden_size"] = p.vision_hidden;
  vision["image_size"] = 1540;
  vision["initializer_range"] = 0.02;
  vision["intermediate_size"] = p.vision_intermediate;
  vision["model_type"] = "pixtral";
  vision["num_attention_heads"] = p.vision_heads;
  vision["num_channels"] = 3;
  vision["num_hidden_layers"] = p.vision_layers;
  vision["patch_size"] = p.patch_size;
  vision["rope_parameters"] = {{"rope_theta", 10000}, {"rope_type", "default"}};
  vision["rope_theta"] = 10000;
  ojson c;
  c["architectures"] = {"LightOnOCRForConditionalGeneration"};
  c["dtype"] = torch_dtype_name(dtype);
  c["eos_token_id"] = p.n_regular_tokens + 2;    // <|im_end|>
  c["image_token_id"] = p.n_regular_tokens + 12;  // <|image_pad|>
  c["model_type"] = "mistral3";
  c["multimodal_projector_bias"] = false;
  c["pad_token_id"] = p.n_regular_tokens;  // <|endoftext|>
  c["projector_hidden_act"] = "gelu";
  c["spatial_merge_size"] = 2;
  c["text_config"] = text;
  c["transformers_version"] = "5.0.0.dev0";
  c["use_cache"] = false;
  c["vision_config"] = vision;
  c["vision_feature_layer"] = -1;
  return c;
}

ojson synth_generation_config_json(const SynthPreset& p) {
  ojson g;
  g["bos_token_id"] = p.n_regular_tokens;
  g["do_sample"] = true;
  g["eos_token_id"] = {p.n_regular_tokens + 2, p.n_regular_tokens};
  g["pad_token_id"] = p.n_regular_tokens;
  g["temperature"] = 0.2;
  g["top_k"] = 0;
  g["top_p"] = 0.9;
  g["transformers_version"] = "5.0.0.dev0";
  return g;
}

ojson synth_processor_config_json() {
  ojson ip;
  ip["crop_size"] = nullptr;
  ip["data_format"] = "channels_first";
  ip["default_to_square"] = true;
  ip["device"] = nullptr;
  ip["disable_grouping"] = nullptr;
  ip["do_center_crop"] = nullptr;
  ip["do_convert_rgb"] = true;
  ip["do_normalize"] = true;
  ip["do_pad"] = nullptr;
  ip["do_rescale"] = true;
  ip["do_resize"] = true;
  ip["image_mean"] = {0.48145466, 0.4578275, 0.40821073};
  ip["image_processor_type"] = "PixtralImageProcessorFast";
  ip["image_seq_length"] = nullptr;
  ip["image_std"] = {0.26862954, 0.26130258, 0.27577711};
  ip["input_data_format"] = nullptr;
  ip["pad_size"] = nullptr;
  ip["patch_size"] = 14;
  ip["processor_class"] = "PixtralProcessor";
  ip["resample"] = 3;
  ip["rescale_factor"] = 0.00392156862745098;
  ip["return_tensors"] = nullptr;
  ip["size"] = {{"longest_edge", 1540}};
  ojson j;
  j["image_break_token"] = "<|vision_pad|>";
  j["image_end_token"] = "<|vision_end|>";
  j["image_processor"] = ip;
  j["image_token"] = "<|image_pad|>";
  j["patch_size"] = 14;
  j["processor_class"] = "PixtralProcessor";
  j["spatial_merge_size"] = 2;
  return j;
}

const char* lightonocr_chat_template() { return kChatTemplate; }

MakeModelResult make_model(const MakeModelOptions& opts, const std::function<void(uint64_t, uint64_t)>& progress) {
  if (is_qwen35_preset(opts.preset)) return make_qwen35_model(opts, progress);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  if (opts.dtype != DType::kBF16 && opts.dtype != DType::kF16 && opts.dtype != DType::kF32)
    fail(ErrorKind::kInvalidArgument, "--dtype must be bf16, f16 or f32");
  if (opts.out_dir.empty()) fail(ErrorKind::kInvalidArgument, "--out DIR is required");
  const SynthPreset p = synth_preset(opts.preset);
  std::error_code ec;
  std::filesystem::create_directories(opts.out_dir, ec);
  if (ec) fail(ErrorKind::kIo, "cannot create ", opts.out_dir, ": ", ec.message());

  // Small files first.
  write_text(opts.out_dir, "config.json", synth_config_json(p, opts.dtype).dump(2) + "\n");
  write_text(opts.out_dir, "generation_config.json", synth_generation_config_json(p).dump(2) + "\n");
  write_text(opts.out_dir, "processor_config.json", synth_processor_config_json().dump(2) + "\n");
  write_text(opts.out_dir, "chat_template.jinja", kChatTemplate);
  write_text(opts.out_dir, "tokenizer_config.json", tokenizer_config_json(static_cast<int>(p.n_regular_tokens)).dump(2) + "\n");
  write_text(opts.out_dir, "tokenizer.json",
             tokenizer_json(make_synthetic_bpe(static_cast<int>(p.n_regular_tokens))));

  MakeModelResult res;
  write_synth_safetensors(io::join_path(opts.out_dir, "model.safetensors"), synth_weight_specs(p), opts.seed,
                          opts.dtype, progress, &res);
  res.total_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return res;
}

void write_synth_safetensors(const std::string& path, const std::vector<WeightSpec>& specs, uint64_t seed,
                             DType dtype, const std::function<void(uint64_t, uint64_t)>& progress,
                             MakeModelResult* res) {
  using clock = std::chrono::steady_clock;
  if (dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF32)
    fail(ErrorKind::kInvalidArgument, "--dtype must be bf16, f16 or f32");
  // Header, then every tensor streamed in pieces filled by the thread pool while the previous
  // piece is written.
  const size_t es = dtype_size(dtype);
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  res->n_params = 0;
  for (const auto& w : specs) {
    int64_t n = 1;
    for (int64_t d : w.shape) n *= d;
    res->n_params += n;
    header[w.name] = {{"dtype", dtype_name(dtype)}, {"shape", w.shape}, {"data_offsets", {offset, offset + n * es}}};
    offset += static_cast<uint64_t>(n) * es;
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');
  const uint64_t total = 8 + h.size() + offset;

  const auto tw = clock::now();
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(ErrorKind::kIo, "cannot write ", tmp);
  const uint64_t hn = h.size();
  bool ok = std::fwrite(&hn, 8, 1, f) == 1 && std::fwrite(h.data(), 1, h.size(), f) == h.size();
  constexpr int64_t kPiece = 16 << 20;  // elements per piece
  constexpr int64_t kGrain = 1 << 16;
  std::vector<char> bufs[2];
  std::future<bool> pending;
  int cur = 0;
  uint64_t written = 8 + h.size();
  ThreadPool& pool = ThreadPool::global();
  for (const auto& w : specs) {
    const TensorGen g = tensor_gen(seed, w);
    int64_t n = 1;
    for (int64_t d : w.shape) n *= d;
    for (int64_t begin = 0; begin < n && ok; begin += kPiece) {
      const int64_t len = std::min(kPiece, n - begin);
      auto& buf = bufs[cur];
      // The buffer written two pieces ago: its write finished when `pending` was last taken.
      buf.resize(static_cast<size_t>(len) * es);
      pool.parallel_for(len, kGrain, [&](int64_t b, int64_t e, int) { fill(g, dtype, begin + b, e - b, buf.data() + b * es); });
      if (pending.valid()) ok = pending.get() && ok;
      pending = std::async(std::launch::async, [f, &buf] { return std::fwrite(buf.data(), 1, buf.size(), f) == buf.size(); });
      written += buf.size();
      cur ^= 1;
      if (progress) progress(written, total);
    }
  }
  if (pending.valid()) ok = pending.get() && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    fail(ErrorKind::kIo, "write failed for ", tmp, " (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail(ErrorKind::kIo, "cannot rename ", tmp, " to ", path);
  res->weights_bytes = total;
  res->weights_seconds = std::chrono::duration<double>(clock::now() - tw).count();
}

}  // namespace locr::toolkit
