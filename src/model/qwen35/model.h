// A Qwen3.5 model (LightOnOCR-3-0.8B / -4B) loaded from a Hugging Face model directory: config,
// weights, processor config, and its parts on the chosen kernel backend (the vision tower and the
// hybrid decoder).
#pragma once

#include <memory>
#include <string>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/load_options.h"
#include "model/model.h"
#include "model/qwen35/config.h"
#include "model/qwen35/decoder.h"
#include "model/qwen35/processor.h"
#include "model/qwen35/vision.h"
#include "model/qwen35/weights.h"
#include "tokenizer/tokenizer.h"

namespace locr::model::qwen35 {

class Model : public model::Model {
 public:
  // `dir`: a model directory whose config.json has model_type "qwen3_5". opts.backend picks the
  // kernels (ref, cpu-f32, cpu / cpu-bf16).
  static std::unique_ptr<Model> load(const std::string& dir, const LoadOptions& opts = {});
  // llama.cpp's GGUF files (model/qwen35/gguf.h): `text` is the text GGUF at `path` (opened by the
  // caller, which read its architecture), opts.mmproj its mmproj. The tokenizer from its metadata
  // (or a tokenizer.json next to it), the chat template from tokenizer.chat_template (or
  // --chat-template, or a chat_template.jinja next to it), sampling defaults from general.sampling.*.
  static std::unique_ptr<Model> load_gguf(std::shared_ptr<io::GgufFile> text, const std::string& path,
                                          const LoadOptions& opts = {});

  const Config& config() const { return config_; }
  const ProcessorConfig& processor_config() const { return proc_; }
  kernels::Ops& ops() const override { return *ops_; }
  const Decoder& decoder() const { return *decoder_; }
  const VisionTower& vision() const { return *vision_; }
  const Weights& weights() const { return weights_; }

  // model::Model
  const char* architecture() const override { return "qwen3_5"; }
  const tokenizer::Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ChatTemplate& chat_template() const override { return *template_; }
  const GenerationConfig& generation_config() const override { return gen_config_; }
  const ModelVariant& variant() const override { return variant_; }
  const std::string& backend() const override { return backend_; }
  int vocab_size() const override { return config_.text.vocab_size; }
  int hidden_size() const override { return config_.text.hidden_size; }
  int image_token_id() const override { return config_.image_token_id; }
  int max_position_embeddings() const override { return config_.text.max_position_embeddings; }
  bool has_vision() const override { return true; }
  using model::Model::build_prompt;
  RenderedChat render_chat(const nlohmann::json& messages, const nlohmann::json& template_kwargs = nullptr,
                           bool add_generation_prompt = true) const override;
  // Also the three M-RoPE position rows of the prompt and its rope_delta (model/model.h).
  Prompt build_prompt(RenderedChat chat, const std::vector<io::Image>& images) const override;
  int image_tokens(int height, int width) const override;
  using model::Model::image_tokens;
  // The patch rows of all images [patches, C * T * p * p] (transformers' pixel_values).
  Tensor pixel_values(const std::vector<ProcessedImage>& images) const override;
  std::array<int, 2> image_size(int height, int width) const override { return smart_resize(height, width, proc_); }
  ProcessedImage preprocess(const io::Image& image) const override { return qwen35::preprocess(image, proc_); }
  io::Image shrink_for_model(io::Image image) const override;
  int spatial_merge_size() const override { return config_.vision.spatial_merge_size; }
  void rope_positions(const std::vector<int32_t>& ids, const std::vector<ProcessedImage>& images,
                      std::vector<int64_t>* positions, int64_t* rope_delta) const override;
  DType kv_dtype() const override { return decoder_->kv_dtype(); }
  int64_t kv_bytes_per_block(int block_size) const override;
  int64_t state_bytes_per_sequence() const override { return StatePool::bytes_per_slot(config_.text); }
  // As model::activation_estimate for LightOnOCR, for a page of at most 2048 x 2048 pixels (the
  // processor's own bound, 16.7M pixels, is no bound in practice).
  int64_t activation_bytes(int64_t max_num_batched_tokens, int64_t max_num_seqs) const override;
  int64_t extra_weight_bytes() const override {
    return static_cast<int64_t>(ops().argmax_extra_bytes(weights_.text.lm_head));
  }
  ComputeShape compute_shape() const override;

  // The patch grids of preprocessed images, in order.
  static std::vector<Grid> grids(const std::vector<ProcessedImage>& images);
  // The encoder's input rows of the images (processor.h patches(), images in order).
  std::vector<float> vision_patches(const std::vector<ProcessedImage>& images) const;
  // [T, hidden] host embeddings of `ids` with image embedding rows (host [n image tokens, hidden])
  // at the image-token positions, in order.
  Tensor embed_prompt(const std::vector<int32_t>& ids, const Tensor* image_embeds) const;

 private:
  Model() = default;
  // After config, processor, tokenizer and weights: --quantization, the kernels, the packed weights,
  // the decoder (with its KV dtype) and the vision tower.
  void make_parts(const LoadOptions& opts);
  Config config_;
  ProcessorConfig proc_;
  GenerationConfig gen_config_;
  ModelVariant variant_;
  std::string backend_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> template_;
  nlohmann::json template_vars_;
  io::SafetensorsSet tensors_;
  Weights weights_;
  std::unique_ptr<kernels::Ops> ops_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<VisionTower> vision_;
};

}  // namespace locr::model::qwen35
