#include "model/qwen35/model.h"

#include <cstring>

#include "core/error.h"
#include "io/file.h"
#include "model/json_fields.h"

namespace locr::model::qwen35 {

std::unique_ptr<Model> Model::load(const std::string& dir, const LoadOptions& opts) {
  std::unique_ptr<Model> m(new Model());
  m->config_ = Config::from_file(dir + "/config.json");
  m->proc_ = load_processor_config(dir);
  if (m->proc_.patch_size != m->config_.vision.patch_size || m->proc_.merge_size != m->config_.vision.spatial_merge_size ||
      m->proc_.temporal_patch_size != m->config_.vision.temporal_patch_size)
    fail(ErrorKind::kInvalidArgument, dir, "/preprocessor_config.json: patch ", m->proc_.patch_size, ", merge ",
         m->proc_.merge_size, ", temporal ", m->proc_.temporal_patch_size, " differ from config.json's vision_config");
  if (opts.backend == "cuda")
    fail(ErrorKind::kUnsupported, "the Qwen3.5 family runs on the ref and cpu backends so far, not on cuda");
  const std::string gen_path = io::join_path(dir, "generation_config.json");
  if (io::file_exists(gen_path)) m->gen_config_ = GenerationConfig::from_json(read_json_file(gen_path));
  // transformers ignores tokenizer.json's pre-tokenizer for Qwen3.5 and builds its own (model/tokenizer.h).
  m->tokenizer_ = Tokenizer::from_file(io::join_path(dir, "tokenizer.json"),
                                       TokenizerOptions::for_model_type(m->config_.model_type));
  const std::string tc_path = io::join_path(dir, "tokenizer_config.json");
  const nlohmann::json tok_cfg = io::file_exists(tc_path) ? read_json_file(tc_path) : nlohmann::json::object();
  m->template_vars_ = template_vars_from(tok_cfg);
  m->template_ = ChatTemplate::parse(opts.chat_template_file.empty() ? load_chat_template_source(dir)
                                                                     : io::read_file(opts.chat_template_file));
  m->variant_ = detect_variant(dir, nullptr);
  m->backend_ = opts.backend;
  m->tensors_ = io::SafetensorsSet::open_dir(dir);
  m->weights_ = load_weights(m->tensors_, m->config_);
  m->ops_ = make_model_ops(opts);
  prepare_weights(m->weights_, *m->ops_);
  m->decoder_ = std::make_unique<Decoder>(m->config_.text, m->weights_.text, *m->ops_);
  m->vision_ = std::make_unique<VisionTower>(m->config_.vision, m->weights_.vision, *m->ops_);
  return m;
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
    p.images.push_back(preprocess(images[next++], proc_));
    const ProcessedImage& img = p.images.back();
    p.ids.insert(p.ids.end(), static_cast<size_t>(img.grid_h / m) * (img.grid_w / m), config_.image_token_id);
  }
  int64_t next_position = 0;
  p.positions = rope_positions(p.ids, config_.image_token_id, grids(p.images), m, &next_position);
  p.rope_delta = next_position - static_cast<int64_t>(p.ids.size());
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
