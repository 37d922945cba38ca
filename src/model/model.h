// What the runtime and the front ends ask of a model, whatever its architecture (LightOnOCR-2 /
// LightOnOCR-3-1B: model::LightOnOcr; LightOnOCR-3-0.8B / -4B: model::qwen35::Model): the prompt
// side (chat template, tokenizer, image placeholders, the positions of a prompt) and an executor
// for its compute (runtime/executor_factory.h makes it).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/tensor.h"
#include "io/image.h"
#include "kernels/ops.h"
#include "model/chat_template.h"
#include "model/generation_config.h"
#include "model/image_input.h"
#include "tokenizer/tokenizer.h"
#include "model/variant.h"

namespace locr::model {

// A tokenised prompt with its preprocessed images, in prompt order.
struct Prompt {
  std::vector<int32_t> ids;
  std::vector<ProcessedImage> images;
  std::string text;  // the rendered template (before image-token expansion)
  // Multimodal RoPE (Qwen3.5): the prompt's three position rows [3, ids.size()] row-major
  // (temporal, height, width), and what a token at index t >= ids.size() adds to t on all three
  // (the position after the prompt minus its length). Empty / 0: position = token index.
  std::vector<int64_t> positions;
  int64_t rope_delta = 0;
};

// A chat rendered by the template and tokenised, before the image placeholders are expanded.
struct RenderedChat {
  std::string text;
  std::vector<int32_t> ids;  // one image_token_id per image
  size_t n_images = 0;       // placeholders in `ids`
};

struct ImageEncoding {
  Tensor vision_hidden;  // [sum n_patches, vision hidden]
  Tensor embeds;         // [n image tokens, text hidden]
};

class Model {
 public:
  virtual ~Model() = default;
  // "lightonocr" (Pixtral + Qwen3) or "qwen3_5" (Qwen3.5: hybrid Gated DeltaNet decoder).
  virtual const char* architecture() const = 0;

  virtual const tokenizer::Tokenizer& tokenizer() const = 0;
  virtual const ChatTemplate& chat_template() const = 0;
  virtual const GenerationConfig& generation_config() const = 0;
  // Which checkpoint this is (model/variant.h): what its output can carry (grounding boxes...).
  virtual const ModelVariant& variant() const = 0;
  // The kernel backend named at load ("cuda" for the GPU executor).
  virtual const std::string& backend() const = 0;
  virtual int vocab_size() const = 0;
  virtual int hidden_size() const = 0;  // of the text decoder
  virtual int image_token_id() const = 0;
  virtual int max_position_embeddings() const = 0;
  // False when images are refused (a text GGUF without its mmproj).
  virtual bool has_vision() const = 0;

  // Messages in OpenAI/transformers form; template_kwargs (a JSON object, e.g. {"enable_thinking":
  // false}) are extra template variables, set over the model's own but never over `messages` or
  // `add_generation_prompt`.
  virtual RenderedChat render_chat(const nlohmann::json& messages, const nlohmann::json& template_kwargs = nullptr,
                                   bool add_generation_prompt = true) const = 0;
  // Placeholders expanded to each image's tokens, images preprocessed, positions when the model
  // has multimodal RoPE.
  virtual Prompt build_prompt(RenderedChat chat, const std::vector<io::Image>& images) const = 0;
  Prompt build_prompt(const nlohmann::json& messages, const std::vector<io::Image>& images) const {
    return build_prompt(render_chat(messages), images);
  }
  // Prompt tokens one image of (height, width) pixels expands to.
  virtual int image_tokens(int height, int width) const = 0;
  // What transformers' processor gives as pixel_values for `images` (for dumps): LightOnOCR [3, H,
  // W] of the first image, Qwen3.5 the patch rows of all images [patches, C * T * p * p].
  virtual Tensor pixel_values(const std::vector<ProcessedImage>& images) const = 0;

  // --- Images, one at a time, as build_prompt() treats them ---
  // (height, width) in pixels that an image of (height, width) is resized to.
  virtual std::array<int, 2> image_size(int height, int width) const = 0;
  virtual ProcessedImage preprocess(const io::Image& image) const = 0;
  // The first steps of preprocess() done early, so that only the model-sized copy of an image is
  // kept (front ends call it right after decoding): preprocess(shrink_for_model(x)) equals
  // preprocess(x) bit for bit.
  virtual io::Image shrink_for_model(io::Image image) const = 0;
  // Prompt tokens a preprocessed image takes (its patch grid merged spatial_merge_size x itself).
  virtual int spatial_merge_size() const = 0;
  int image_tokens(const ProcessedImage& img) const { return img.n_image_tokens(spatial_merge_size()); }

  // --- The decoder's positions, cache and memory ---
  // Multimodal RoPE (model::Prompt::positions / rope_delta) of a prompt of `ids` (image tokens
  // expanded) with its preprocessed `images`; nothing for models whose position is the token index.
  virtual void rope_positions(const std::vector<int32_t>& ids, const std::vector<ProcessedImage>& images,
                              std::vector<int64_t>* positions, int64_t* rope_delta) const {
    positions->clear();
    *rope_delta = 0;
  }
  // The KV cache's element type (--kv-cache-dtype) and the bytes of one block of `block_size` tokens
  // over every layer that keeps keys and values.
  virtual DType kv_dtype() const = 0;
  virtual int64_t kv_bytes_per_block(int block_size) const = 0;
  // Bytes the backend keeps beside the checkpoint's weights: the greedy head's screen
  // (Ops::prepare_argmax); counted with the weights when the KV cache is sized.
  virtual int64_t extra_weight_bytes() const { return 0; }
  // Bytes of one sequence's recurrent state (conv + DeltaNet state of every linear-attention layer;
  // held for each of max_num_seqs sequences beside the KV cache); 0 for attention-only models.
  virtual int64_t state_bytes_per_sequence() const { return 0; }
  // Peak activation bytes of one engine step of max_num_batched_tokens rows and max_num_seqs
  // logits rows with the largest page's encoding beside it (model/memory_sizing.h; LightOnOCR-2's:
  // model/lightonocr/activation_estimate.h).
  virtual int64_t activation_bytes(int64_t max_num_batched_tokens, int64_t max_num_seqs) const = 0;

  // The kernel backend the model's parts run on (host backends: time it op by op, kernels/op_profile.h).
  virtual kernels::Ops& ops() const = 0;
  // What benchmarks count FLOPs and weight bytes from (apps/cmd_perf.cc).
  struct ComputeShape {
    double decoder_params = 0;  // matmul weights one token passes through in the decoder's layers
    double lm_head_params = 0;
    double attention_width = 0;  // query heads x head_dim of a full-attention layer
    int attention_layers = 0;    // layers attending over the whole context
    double vision_params = 0;    // matmul weights per patch through the vision tower (+ projector, per patch)
    double vision_width = 0;     // its attention's heads x head_dim
    int vision_layers = 0;
  };
  virtual ComputeShape compute_shape() const = 0;

  // Convenience for the CLI: optional system text, images first then the prompt text.
  static nlohmann::json make_messages(const std::string* system, const std::string* prompt, int n_images);
};

// What both families' render_chat() do: `messages` rendered by `tmpl` with `vars` (the model's
// template variables) and `template_kwargs` over them, then tokenised, the image placeholders
// (image_token_id) counted.
RenderedChat render_and_tokenize(const ChatTemplate& tmpl, const tokenizer::Tokenizer& tok, const nlohmann::json& vars,
                                 const nlohmann::json& messages, const nlohmann::json& template_kwargs,
                                 bool add_generation_prompt, int image_token_id);
// The template variables of tokenizer_config.json: bos_token, eos_token, pad_token, unk_token (a
// token may be a string or a {"content": ...} object).
nlohmann::json template_vars_from(const nlohmann::json& tokenizer_config);

}  // namespace locr::model
