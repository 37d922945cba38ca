#include "model/qwen35/model.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "kernels/devices.h"
#include "model/json_fields.h"
#include "model/kv_cache_dtype.h"

namespace locr::model::qwen35 {

std::unique_ptr<Model> Model::load(const std::string& dir, const LoadOptions& opts) {
  kernels::check_backend_usable(opts.backend);
  std::unique_ptr<Model> m(new Model());
  m->config_ = Config::from_file(dir + "/config.json");
  m->proc_ = load_processor_config(dir);
  if (m->proc_.patch_size != m->config_.vision.patch_size || m->proc_.merge_size != m->config_.vision.spatial_merge_size ||
      m->proc_.temporal_patch_size != m->config_.vision.temporal_patch_size)
    fail(ErrorKind::kInvalidArgument, dir, "/preprocessor_config.json: patch ", m->proc_.patch_size, ", merge ",
         m->proc_.merge_size, ", temporal ", m->proc_.temporal_patch_size, " differ from config.json's vision_config");
  const std::string gen_path = io::join_path(dir, "generation_config.json");
  if (io::file_exists(gen_path)) m->gen_config_ = GenerationConfig::from_json(read_json_file(gen_path));
  // transformers ignores tokenizer.json's pre-tokenizer for Qwen3.5 and builds its own (tokenizer/tokenizer.h).
  m->tokenizer_ = tokenizer::Tokenizer::from_file(io::join_path(dir, "tokenizer.json"),
                                       tokenizer::TokenizerOptions::for_model_type(m->config_.model_type));
  const std::string tc_path = io::join_path(dir, "tokenizer_config.json");
  const nlohmann::json tok_cfg = io::file_exists(tc_path) ? read_json_file(tc_path) : nlohmann::json::object();
  m->template_vars_ = template_vars_from(tok_cfg);
  m->template_ = ChatTemplate::parse(opts.chat_template_file.empty() ? load_chat_template_source(dir)
                                                                     : io::read_file(opts.chat_template_file));
  m->variant_ = detect_variant(dir, nullptr);
  m->backend_ = opts.backend;
  m->tensors_ = io::SafetensorsSet::open_dir(dir);
  m->weights_ = load_weights(m->tensors_, m->config_);
  m->make_parts(opts);
  return m;
}

void Model::make_parts(const LoadOptions& opts) {
  if (!opts.quantization.empty()) quantize_weights(weights_, opts.quantization);
  ops_ = make_model_ops(opts);
  prepare_weights(weights_, *ops_);
  const std::optional<DType> kv = parse_kv_cache_dtype(opts.kv_cache_dtype);
  if (kv == DType::kF8E4M3) LOCR_INFO("KV cache: FP8 E4M3 with one f32 scale per token and kv head");
  decoder_ = kv ? std::make_unique<Decoder>(config_.text, weights_.text, *ops_, *kv)
                : std::make_unique<Decoder>(config_.text, weights_.text, *ops_);
  vision_ = std::make_unique<VisionTower>(config_.vision, weights_.vision, *ops_);
}

RenderedChat Model::render_chat(const nlohmann::json& messages, const nlohmann::json& template_kwargs,
                                bool add_generation_prompt) const {
  return render_and_tokenize(*template_, *tokenizer_, template_vars_, messages, template_kwargs, add_generation_prompt,
                             config_.image_token_id);
}

std::vector<Grid> Model::grids(const std::vector<ProcessedImage>& images) {
  std::vector<Grid> g;
  for (const ProcessedImage& img : images) g.push_back({img.grid_h, img.grid_w});
  return g;
}

int Model::image_tokens(int height, int width) const { return qwen35::image_tokens(height, width, proc_); }

Tensor Model::pixel_values(const std::vector<ProcessedImage>& images) const {
  if (images.empty()) return Tensor();
  const std::vector<float> p = vision_patches(images);
  const int64_t cols = config_.vision.patch_values();
  Tensor t = Tensor::empty(DType::kF32, {static_cast<int64_t>(p.size()) / cols, cols});
  std::memcpy(t.raw(), p.data(), t.nbytes());
  return t;
}

io::Image Model::shrink_for_model(io::Image image) const {
  if (image.width <= 0 || image.height <= 0) return image;
  const auto [th, tw] = smart_resize(image.height, image.width, proc_);
  // Only when preprocess() of the result resizes no further (a size within the pixel bounds).
  if (smart_resize(th, tw, proc_) != std::array<int, 2>{th, tw}) return image;
  io::flatten_alpha_on_white(image);  // as preprocess() does (convert_to_rgb)
  if (th == image.height && tw == image.width) return image;
  io::Image out;
  out.height = th;
  out.width = tw;
  out.rgb = model::resize_bicubic_aa(image.rgb.data(), image.height, image.width, th, tw);
  return out;
}

void Model::rope_positions(const std::vector<int32_t>& ids, const std::vector<ProcessedImage>& images,
                           std::vector<int64_t>* positions, int64_t* rope_delta) const {
  int64_t next = 0;
  *positions = qwen35::rope_positions(ids, config_.image_token_id, grids(images), config_.vision.spatial_merge_size,
                                      &next);
  *rope_delta = next - static_cast<int64_t>(ids.size());
}

int64_t Model::kv_bytes_per_block(int block_size) const {
  return KvPool::bytes_per_block(kv_shape(config_.text), block_size, kv_dtype());
}

int64_t Model::activation_bytes(int64_t max_num_batched_tokens, int64_t max_num_seqs) const {
  const TextConfig& t = config_.text;
  const VisionConfig& v = config_.vision;
  const int64_t f = sizeof(float);
  // Text step: hidden, the gated attention's q + gate / k / v / o, the DeltaNet's projections
  // (conv channels, z, b, a) and output, gate / up / down, for every batched row; logits per sequence.
  const int64_t text_row = 6LL * t.hidden_size + 3LL * t.num_attention_heads * t.head_dim +
                           2LL * t.num_key_value_heads * t.head_dim + 2LL * t.conv_dim() +
                           3LL * t.linear_num_value_heads * t.linear_value_head_dim + 3LL * t.intermediate_size;
  const int64_t text = max_num_batched_tokens * text_row * f + max_num_seqs * t.vocab_size * f;
  // Vision: a 2048 x 2048 page's patches through the tower (residual, norm, qkv, attention,
  // MLP, patches, rotary and position rows), the whole tower's buffers at once.
  const int64_t pixels = std::min<int64_t>(proc_.max_pixels, 2048LL * 2048);
  const int64_t patches = pixels / (static_cast<int64_t>(v.patch_size) * v.patch_size);
  const int64_t vision =
      patches * (7LL * v.hidden_size + v.intermediate_size + v.patch_values() + v.head_dim()) * f;
  return text + vision;
}

Model::ComputeShape Model::compute_shape() const {
  const TextConfig& t = config_.text;
  const VisionConfig& v = config_.vision;
  ComputeShape s;
  const double H = t.hidden_size, I = t.intermediate_size, qw = double(t.num_attention_heads) * t.head_dim,
               kvw = double(t.num_key_value_heads) * t.head_dim;
  const double vw = double(t.linear_num_value_heads) * t.linear_value_head_dim;
  const double mlp = 3 * H * I;
  // Gated attention: [q; gate; k; v] and o. Gated DeltaNet: [qkv; z; b; a] and out.
  const double full = H * (2 * qw + 2 * kvw) + qw * H;
  const double linear = H * (t.conv_dim() + vw + 2.0 * t.linear_num_value_heads) + vw * H;
  s.decoder_params = (full + mlp) * t.n_full_layers() + (linear + mlp) * t.n_linear_layers();
  s.lm_head_params = double(t.vocab_size) * H;
  s.attention_width = qw;
  s.attention_layers = t.n_full_layers();
  const double V = v.hidden_size, VI = v.intermediate_size, m2 = double(v.spatial_merge_size) * v.spatial_merge_size;
  // Blocks (qkv, proj, fc1, fc2), the patch embedding, and the merger per patch (its rows are m2 patches).
  s.vision_params = (4 * V * V + 2 * V * VI) * v.depth + V * v.patch_values() +
                    (m2 * V * m2 * V + m2 * V * v.out_hidden_size) / m2;
  s.vision_width = V;
  s.vision_layers = v.depth;
  return s;
}

Prompt Model::build_prompt(RenderedChat chat, const std::vector<io::Image>& images) const {
  Prompt p;
  p.text = std::move(chat.text);
  if (chat.n_images != images.size())
    fail(ErrorKind::kInvalidArgument, "the prompt has ", chat.n_images, " image placeholder(s) but ", images.size(),
         " image(s) were given");
  const int m = config_.vision.spatial_merge_size;
  size_t next = 0;
  for (int32_t id : chat.ids) {
    if (id != config_.image_token_id) {
      p.ids.push_back(id);
      continue;
    }
    p.images.push_back(preprocess(images[next++]));
    const ProcessedImage& img = p.images.back();
    p.ids.insert(p.ids.end(), static_cast<size_t>(img.grid_h / m) * (img.grid_w / m), config_.image_token_id);
  }
  rope_positions(p.ids, p.images, &p.positions, &p.rope_delta);
  return p;
}

std::vector<float> Model::vision_patches(const std::vector<ProcessedImage>& images) const {
  std::vector<float> out;
  for (const ProcessedImage& img : images) {
    const std::vector<float> p = patches(img, proc_);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

Tensor Model::embed_prompt(const std::vector<int32_t>& ids, const Tensor* image_embeds) const {
  LOCR_CHECK(ops_->host_memory(), "embed_prompt runs on host backends");
  const int64_t T = static_cast<int64_t>(ids.size()), H = config_.text.hidden_size;
  Tensor x = Tensor::empty(DType::kF32, {T, H});
  decoder_->embed(ids.data(), T, x.data<float>());
  const int64_t available = image_embeds ? image_embeds->dim(0) : 0;
  int64_t next = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (ids[t] != config_.image_token_id) continue;
    if (next >= available)
      fail(ErrorKind::kInvalidArgument, "prompt has more image tokens than image embeddings (", available, ")");
    std::memcpy(x.data<float>() + t * H, image_embeds->data<float>() + next * H, H * sizeof(float));
    ++next;
  }
  if (next != available)
    fail(ErrorKind::kInvalidArgument, "image embeddings (", available, ") and image tokens (", next, ") do not match");
  return x;
}

}  // namespace locr::model::qwen35
