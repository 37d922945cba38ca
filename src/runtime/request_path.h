// The one request path of every front end — `locr serve`'s routes (server/generation), `locr ocr
// --model` and `locr generate` / `chat` — so that the same request is the same request whichever
// runs it:
//   building it: messages through the model's chat template into prompt ids, each image
//     placeholder expanded to its image's tokens (from the image or, before any pixel is decoded,
//     from its size); the defaults of generation_config.json (runtime/request_defaults.h) with the
//     front end's own loop guard and forced output; max_tokens resolved against the context;
//   processing its output: output(), a TextOutput per request (runtime/text_output.h).
// The tokens themselves are chosen by a TokenSelector (runtime/token_selector.h) inside whichever
// loop generates: the Engine or runtime::generate. Not here: HTTP, JSON request parsing and the
// server's vLLM-worded checks (server/openai_schema, server/generation), scheduling.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/image.h"
#include "model/lightonocr/lighton_ocr.h"
#include "runtime/request_defaults.h"
#include "runtime/text_output.h"
#include "runtime/token_selector.h"

namespace locr::runtime {

struct RequestPathOptions {
  int64_t max_model_len = 0;         // prompt + output tokens; 0: the model's max_position_embeddings
  int fallback_max_tokens = 0;       // max_tokens when neither the request nor generation_config sets
                                     // one; 0: the rest of the context
  std::vector<int32_t> forced_ids;   // --debug-forced-output (testing): every request emits these
};

class RequestPath {
 public:
  // `d`: what requests start from: request_defaults() of the model's generation_config.json (or
  // of what `serve` made of it with --generation-config / --override-generation-config), with the
  // front end's loop guard and, for the CLI, its sampling options.
  RequestPath(const model::Model& m, RequestDefaults d, RequestPathOptions o = {});

  const model::Model& model() const { return m_; }
  const RequestDefaults& defaults() const { return defaults_; }
  int64_t max_model_len() const { return o_.max_model_len; }

  // --- Building a request ---
  // The recommended OCR request: the page image alone; in grounding mode (LightOnOCR-3) the image
  // then the text `grounding`.
  static nlohmann::json ocr_messages(bool grounding);
  // The chat template variables of that request, as LightOn's own clients send them:
  // {"enable_thinking": false} (Qwen3.5 templates such as the 4B's think unless told not to; templates
  // without the variable ignore it).
  static nlohmann::json ocr_template_kwargs();
  // ocr_messages rendered and tokenised with ocr_template_kwargs, placeholders not yet expanded.
  model::RenderedChat ocr_chat(bool grounding) const;
  // Messages and their images -> the prompt: template, tokens, each image preprocessed and its
  // placeholder expanded.
  model::Prompt prompt(const nlohmann::json& messages, const std::vector<io::Image>& images) const;
  model::Prompt prompt(model::RenderedChat chat, const std::vector<io::Image>& images) const;
  // The prompt ids from the images' sizes alone, before any pixel is decoded: each placeholder of
  // `chat` expanded to the tokens an image of that size takes. kInvalidArgument when the counts differ.
  std::vector<int32_t> prompt_ids(const model::RenderedChat& chat, const std::vector<io::ImageSize>& sizes) const;
  // The tokens a request with a prompt of `prompt_len` generates at most: `requested` when > 0,
  // else generation_config's max_new_tokens, else the fallback, each capped by what the context
  // leaves. kLimit when the prompt leaves no room.
  int max_tokens(int64_t prompt_len, int requested) const;
  // The loop guard of a request: the defaults', on or off as the request says; a request asking for
  // a fixed length (ignore_eos, as benchmarks do) turns it off unless it sets it itself.
  LoopGuardConfig loop_guard(std::optional<bool> asked, bool ignore_eos) const;
  // What a request starts from: the defaults (sampling, penalties, EOS ids, loop guard), the
  // forced output, and max_tokens(prompt_len, requested).
  DecodeParams decode(int64_t prompt_len, int requested) const;

  // --- Processing its output ---
  TextOutput output(const DecodeParams& d, TextOptions o = {}) const {
    return TextOutput(m_.tokenizer(), d, std::move(o));
  }

 private:
  const model::Model& m_;
  RequestDefaults defaults_;
  RequestPathOptions o_;
};

}  // namespace locr::runtime
