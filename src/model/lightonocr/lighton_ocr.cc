#include "model/lightonocr/lighton_ocr.h"

#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "kernels/devices.h"
#include "model/json_fields.h"
#include "model/kv_cache_dtype.h"
#include "model/lightonocr/activation_estimate.h"
#include "model/lightonocr/quantize_weights.h"

namespace locr::model {

using nlohmann::json;


ProcessorConfig load_processor_config(const std::string& dir, int align) {
  ProcessorConfig pc;
  if (align != 14 && align != 28)
    fail(ErrorKind::kInvalidArgument, "--image-align must be 14 or 28, got ", align);
  pc.align = align;
  for (const char* name : {"preprocessor_config.json", "processor_config.json"}) {
    const std::string path = io::join_path(dir, name);
    if (!io::file_exists(path)) continue;
    json j = read_json_file(path);
    // processor_config.json may nest the image processor's settings.
    const json& ip = j.contains("image_processor") && j["image_processor"].is_object() ? j["image_processor"] : j;
    if (ip.contains("size") && ip["size"].is_object() && ip["size"].contains("longest_edge"))
      pc.longest_edge = ip["size"]["longest_edge"].get<int>();
    if (ip.contains("patch_size")) {
      const json& p = ip["patch_size"];
      pc.patch_size = p.is_object() ? p.value("height", 14) : p.get<int>();
    }
    if (ip.contains("image_mean") && ip["image_mean"].size() == 3)
      for (int c = 0; c < 3; ++c) pc.image_mean[c] = ip["image_mean"][c].get<float>();
    if (ip.contains("image_std") && ip["image_std"].size() == 3)
      for (int c = 0; c < 3; ++c) pc.image_std[c] = ip["image_std"][c].get<float>();
    if (ip.contains("rescale_factor")) pc.rescale_factor = ip["rescale_factor"].get<double>();  // 1 / it = 255 exactly
    break;
  }
  return pc;
}

std::unique_ptr<LightOnOcr> LightOnOcr::load(const std::string& dir, const LoadOptions& opts) {
  if (dir.size() > 5 && dir.compare(dir.size() - 5, 5, ".gguf") == 0 && !io::is_directory(dir))
    return load_gguf(dir, opts);
  if (!opts.mmproj.empty())
    fail(ErrorKind::kInvalidArgument, "--mmproj ", opts.mmproj, " goes with a text GGUF model (TEXT.gguf), not with "
         "the model directory ", dir);
  if (!io::is_directory(dir))
    fail(ErrorKind::kNotFound, "model directory not found: ", dir,
         " (download one, e.g. lightonai/LightOnOCR-2-1B, and pass its path)");
  kernels::check_backend_usable(opts.backend);
  std::unique_ptr<LightOnOcr> m(new LightOnOcr());
  m->backend_ = opts.backend;
  m->config_ = ModelConfig::from_file(io::join_path(dir, "config.json"));
  {
    const json raw_config = read_json_file(io::join_path(dir, "config.json"));
    m->variant_ = detect_variant(dir, &raw_config);
  }
  const std::string gen_path = io::join_path(dir, "generation_config.json");
  if (io::file_exists(gen_path)) m->gen_config_ = GenerationConfig::from_json(read_json_file(gen_path));
  m->proc_config_ = load_processor_config(dir, opts.image_align);
  if (m->proc_config_.patch_size != m->config_.vision.patch_size)
    fail(ErrorKind::kInvalidArgument, "processor patch_size ", m->proc_config_.patch_size,
         " differs from the vision encoder's ", m->config_.vision.patch_size);

  m->tokenizer_ = tokenizer::Tokenizer::from_file(io::join_path(dir, "tokenizer.json"));
  const std::string tc_path = io::join_path(dir, "tokenizer_config.json");
  json tok_cfg = io::file_exists(tc_path) ? read_json_file(tc_path) : json::object();
  m->template_vars_ = template_vars_from(tok_cfg);
  if (m->gen_config_.eos_token_ids.empty() && m->template_vars_.contains("eos_token")) {
    const json& e = m->template_vars_["eos_token"];
    if (e.is_string()) {
      const int32_t id = m->tokenizer_->token_to_id(e.get<std::string>());
      if (id >= 0) m->gen_config_.eos_token_ids.push_back(id);
    }
  }
  const std::string tmpl = opts.chat_template_file.empty() ? load_chat_template_source(dir)
                                                           : io::read_file(opts.chat_template_file);
  m->template_ = ChatTemplate::parse(tmpl);

  m->tensors_ = io::SafetensorsSet::open_dir(dir);
  m->weights_ = load_weights(m->tensors_, m->config_);
  m->make_parts(opts);
  return m;
}

void LightOnOcr::make_parts(const LoadOptions& opts) {
  const std::optional<DType> kv = parse_kv_cache_dtype(opts.kv_cache_dtype);
  if (!opts.quantization.empty()) quantize_weights(weights_, opts.quantization);
  // Every backend runs the same TextDecoder / VisionEncoder / Projector; "cuda" uploads each weight
  // here (its prepare: BF16, or a quantized one in its blocks) and keeps activations on the device.
  if (!ops_) ops_ = make_model_ops(opts);
  prepare_weights(weights_, *ops_);
  if (kv == DType::kF8E4M3) LOCR_INFO("KV cache: FP8 E4M3 with one f32 scale per token and kv head");
  decoder_ = kv ? std::make_unique<TextDecoder>(config_.text, weights_.text, *ops_, *kv)
                : std::make_unique<TextDecoder>(config_.text, weights_.text, *ops_);
  encoder_ = std::make_unique<VisionEncoder>(config_.vision, weights_.vision, *ops_);
  projector_ = std::make_unique<Projector>(config_, weights_.projector, *ops_);
}

void LightOnOcr::check_host_backend(const char* what) const {
  if (!ops_->host_memory())
    fail(ErrorKind::kUnsupported, what, " runs on host memory; backend ", ops_->name(),
         " runs the model through its executor (runtime/executor_factory)");
}

void LightOnOcr::check_has_vision() const {
  if (!weights_.has_vision)
    fail(ErrorKind::kInvalidArgument, "this model has no vision encoder (a text GGUF loaded without --mmproj): "
         "image inputs need the model's mmproj GGUF, given with --mmproj");
}

RenderedChat LightOnOcr::render_chat(const json& messages, const json& template_kwargs,
                                     bool add_generation_prompt) const {
  return render_and_tokenize(*template_, *tokenizer_, template_vars_, messages, template_kwargs, add_generation_prompt,
                             config_.image_token_id);
}

int64_t LightOnOcr::activation_bytes(int64_t max_num_batched_tokens, int64_t max_num_seqs) const {
  return activation_estimate(config_, max_num_batched_tokens, max_num_seqs);
}

Model::ComputeShape LightOnOcr::compute_shape() const {
  const TextConfig& t = config_.text;
  const VisionConfig& v = config_.vision;
  ComputeShape s;
  const double H = t.hidden_size, qw = double(t.num_attention_heads) * t.head_dim,
               kvw = double(t.num_key_value_heads) * t.head_dim, I = t.intermediate_size;
  s.decoder_params = (H * qw * 2 + H * kvw * 2 + 3 * H * I) * t.num_hidden_layers;
  s.lm_head_params = double(t.vocab_size) * H;
  s.attention_width = qw;
  s.attention_layers = t.num_hidden_layers;
  const double V = v.hidden_size, VI = v.intermediate_size;
  s.vision_params = (4 * V * V + 3 * V * VI) * v.num_hidden_layers + V * 3 * v.patch_size * v.patch_size;
  s.vision_width = V;
  s.vision_layers = v.num_hidden_layers;
  return s;
}

int LightOnOcr::image_tokens(int height, int width) const {
  check_has_vision();
  return image_token_count(height, width, proc_config_, config_.spatial_merge_size);
}

Tensor LightOnOcr::pixel_values(const std::vector<ProcessedImage>& images) const {
  if (images.empty()) return Tensor();
  const ProcessedImage& img = images[0];
  const std::vector<float> px = normalized_pixels(img);
  Tensor t = Tensor::empty(DType::kF32, {3, img.height, img.width});
  std::memcpy(t.raw(), px.data(), t.nbytes());
  return t;
}

Prompt LightOnOcr::build_prompt(RenderedChat chat, const std::vector<io::Image>& images) const {
  Prompt p;
  p.text = std::move(chat.text);
  const int32_t image_id = config_.image_token_id;
  if (chat.n_images != images.size())
    fail(ErrorKind::kInvalidArgument, "the prompt has ", chat.n_images, " image placeholder(s) but ", images.size(),
         " image(s) were given");
  if (!images.empty()) check_has_vision();
  size_t next = 0;
  for (int32_t id : chat.ids) {
    if (id != image_id) {
      p.ids.push_back(id);
      continue;
    }
    p.images.push_back(preprocess(images[next++]));
    // One contiguous run of (H'/28)*(W'/28) image tokens; no row-break or end tokens.
    const int n = p.images.back().n_image_tokens(config_.spatial_merge_size);
    p.ids.insert(p.ids.end(), n, image_id);
  }
  return p;
}

std::vector<float> LightOnOcr::vision_patches(const std::vector<ProcessedImage>& images,
                                              std::vector<ImageGrid>* grids) const {
  std::vector<float> patches;
  for (const auto& img : images) {
    grids->push_back({img.grid_h, img.grid_w});
    const std::vector<float> p = extract_patches(img, config_.vision.patch_size);
    patches.insert(patches.end(), p.begin(), p.end());
  }
  return patches;
}

ImageEncoding LightOnOcr::encode_images(const std::vector<ProcessedImage>& images) const {
  ImageEncoding enc;
  if (images.empty()) return enc;
  check_has_vision();
  check_host_backend("encode_images");
  std::vector<ImageGrid> grids;
  const std::vector<float> patches = vision_patches(images, &grids);
  enc.vision_hidden = encoder_->forward(patches.data(), grids);
  enc.embeds = projector_->forward(enc.vision_hidden, grids);
  return enc;
}

Tensor LightOnOcr::embed_prompt(const std::vector<int32_t>& ids, const Tensor* image_embeds) const {
  check_host_backend("embed_prompt");
  const int64_t T = static_cast<int64_t>(ids.size()), H = config_.text.hidden_size;
  Tensor x = Tensor::empty(DType::kF32, {T, H});
  decoder_->embed(ids.data(), T, x.data<float>());
  int64_t next = 0;
  const int64_t available = image_embeds ? image_embeds->dim(0) : 0;
  for (int64_t t = 0; t < T; ++t) {
    if (ids[t] != config_.image_token_id) continue;
    if (next >= available)
      fail(ErrorKind::kInvalidArgument, "prompt has more image tokens than image features (", available, ")");
    std::memcpy(x.data<float>() + t * H, image_embeds->data<float>() + next * H, H * sizeof(float));
    ++next;
  }
  if (next != available)
    fail(ErrorKind::kInvalidArgument, "image features (", available, ") and image tokens (", next, ") do not match");
  return x;
}

}  // namespace locr::model
