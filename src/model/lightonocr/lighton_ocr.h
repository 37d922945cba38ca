// LightOnOCR: the whole model loaded from a Hugging Face model directory — config, weights,
// tokenizer, chat template, generation and processor configs — or from llama.cpp's GGUF files
// (a text `.gguf` plus an optional `mmproj`, model/lightonocr/gguf_checkpoint.h), and the steps
// that turn a chat request into decoder input: prompt rendering and tokenisation with image-token
// expansion, image encoding (Pixtral + projector) and the embedding merge.
//
// Not here: scheduling, KV cache management across requests, sampling (runtime/).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/image.h"
#include "io/safetensors.h"
#include "kernels/ops.h"
#include "model/chat_template.h"
#include "model/lightonocr/config.h"
#include "model/lightonocr/processor.h"
#include "model/lightonocr/text_decoder.h"
#include "model/lightonocr/vision_encoder.h"
#include "model/lightonocr/weights.h"
#include "model/load_options.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "model/variant.h"

namespace locr::model {

class LightOnOcr : public Model {
 public:
  // `path`: a model directory, or a text GGUF file (`*.gguf`) with opts.mmproj.
  static std::unique_ptr<LightOnOcr> load(const std::string& path, const LoadOptions& opts = {});

  const ModelConfig& config() const { return config_; }
  const GenerationConfig& generation_config() const override { return gen_config_; }
  const ProcessorConfig& processor_config() const { return proc_config_; }
  // Which checkpoint this is (model/variant.h): what its output can carry (figure boxes, grounding).
  const ModelVariant& variant() const override { return variant_; }
  // False for a text GGUF loaded without an mmproj: image inputs are refused (kInvalidArgument).
  bool has_vision() const override { return weights_.has_vision; }
  const tokenizer::Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ChatTemplate& chat_template() const override { return *template_; }
  kernels::Ops& ops() const override { return *ops_; }
  // The backend named at load ("cuda" for the GPU executor; otherwise a CPU kernel backend).
  const std::string& backend() const override { return backend_; }
  // The checkpoint's weights (memory-mapped views; the backend's prepared copies hang off them).
  const ModelWeights& weights() const { return weights_; }
  const TextDecoder& decoder() const { return *decoder_; }
  const VisionEncoder& encoder() const { return *encoder_; }
  const Projector& projector() const { return *projector_; }

  const char* architecture() const override { return "lightonocr"; }
  int vocab_size() const override { return config_.text.vocab_size; }
  int hidden_size() const override { return config_.text.hidden_size; }
  int image_token_id() const override { return config_.image_token_id; }
  int max_position_embeddings() const override { return config_.text.max_position_embeddings; }

  // Messages in OpenAI/transformers form ({role, content: string | [{type: text|image|image_url}]});
  // `images` are the decoded images referenced by the image parts, in order (model/model.h).
  using Model::build_prompt;
  // The two halves of build_prompt(), for callers that check the prompt length from image sizes
  // (image_tokens) before decoding any pixels.
  RenderedChat render_chat(const nlohmann::json& messages, const nlohmann::json& template_kwargs = nullptr,
                           bool add_generation_prompt = true) const override;
  Prompt build_prompt(RenderedChat chat, const std::vector<io::Image>& images) const override;
  // Prompt tokens one image of (height, width) pixels expands to.
  int image_tokens(int height, int width) const override;
  using Model::image_tokens;
  // The first image's normalised pixels [3, H', W'] (transformers' pixel_values of one image).
  Tensor pixel_values(const std::vector<ProcessedImage>& images) const override;
  std::array<int, 2> image_size(int height, int width) const override {
    return target_size(height, width, proc_config_);
  }
  ProcessedImage preprocess(const io::Image& image) const override { return model::preprocess(image, proc_config_); }
  io::Image shrink_for_model(io::Image image) const override {
    return model::shrink_for_model(std::move(image), proc_config_);
  }
  int spatial_merge_size() const override { return config_.spatial_merge_size; }
  DType kv_dtype() const override { return decoder_->kv_dtype(); }
  int64_t kv_bytes_per_block(int block_size) const override {
    return KvPool::bytes_per_block(config_.text, block_size, kv_dtype());
  }
  int64_t activation_bytes(int64_t max_num_batched_tokens, int64_t max_num_seqs) const override;
  int64_t extra_weight_bytes() const override {
    return static_cast<int64_t>(ops().argmax_extra_bytes(weights_.text.lm_head));
  }
  ComputeShape compute_shape() const override;

  ImageEncoding encode_images(const std::vector<ProcessedImage>& images) const;
  // The encoder's input for `images`: patches [sum n_patches, 3*p*p] and their grids.
  std::vector<float> vision_patches(const std::vector<ProcessedImage>& images, std::vector<ImageGrid>* grids) const;
  // [T, hidden] embeddings of `ids` with image embedding rows written at the image-token positions.
  Tensor embed_prompt(const std::vector<int32_t>& ids, const Tensor* image_embeds) const;

 private:
  LightOnOcr() = default;
  static std::unique_ptr<LightOnOcr> load_gguf(const std::string& path, const LoadOptions& opts);
  // After config and weights: the kernels (weights packed) and the model's parts.
  void make_parts(const LoadOptions& opts);
  void check_has_vision() const;
  void check_host_backend(const char* what) const;
  ModelConfig config_;
  GenerationConfig gen_config_;
  ProcessorConfig proc_config_;
  ModelVariant variant_;
  io::SafetensorsSet tensors_;  // (a GGUF model's files are held by its weights' Matrix holders)
  ModelWeights weights_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> template_;
  std::unique_ptr<kernels::Ops> ops_;
  std::unique_ptr<TextDecoder> decoder_;
  std::unique_ptr<VisionEncoder> encoder_;
  std::unique_ptr<Projector> projector_;
  nlohmann::json template_vars_;  // bos_token, eos_token, ... from tokenizer_config.json
  std::string backend_;
};

ProcessorConfig load_processor_config(const std::string& dir, int align);

}  // namespace locr::model
