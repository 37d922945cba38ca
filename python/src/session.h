// The Python package's engine (python/locr, bound by module.cc): `locr serve`'s setup
// (apps/serve_setup.h) driven in-process, without HTTP. Requests are OpenAI-shaped JSON bodies that
// go through the very code the server's routes run (server/openai_schema, build_chat_prompt,
// server::Generation, /v1/ocr's prepare_ocr and page_json), so a request gives the same tokens and
// text here as through `locr serve`. Knows nothing of Python: module.cc adds the GIL and types.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/serve_setup.h"
#include "server/generation.h"
#include "server/ocr_document.h"

namespace locr::py {

using nlohmann::json;

// One submitted request: its choices (chat, completion) or pages (OCR), generating in the engine.
class Job {
 public:
  // `keep`: what the prompts' lazy loaders need alive (an OCR job's document).
  Job(std::shared_ptr<server::Generation> gen, std::shared_ptr<server::OcrJob> ocr, std::vector<std::string> prompts,
      std::shared_ptr<void> keep = nullptr);
  ~Job();

  // Waits up to `timeout_ms` for engine events (the prompt's next pages are rendered and submitted
  // here too); returns the choice (page) indices that finished during this call.
  std::vector<int> poll(int timeout_ms);
  bool done() const { return gen_->done(); }
  void cancel() { gen_->cancel(); }
  int n_choices() const { return gen_->n_choices(); }
  int n_per_prompt() const { return gen_->n_per_prompt(); }

  // A choice as vLLM's CompletionOutput needs it: text, token_ids, logprobs ([{token, logprob, top:
  // [[id, logprob]...]}]), finish_reason, stop_reason, error, plus its prompt's ids and text.
  json result(int i) const;
  // OCR only: /v1/ocr's page object (page, dimensions, text, raw, finish_reason, usage, timings,
  // confidence, blocks in grounding mode) with the figures the -bbox variants mark ("figures":
  // [{alt, box: [x1, y1, x2, y2] on 0..1000, pixels: [left, top, right, bottom]}]); the summary.
  json page(int i) const;
  json summary() const;
  int page_count() const { return ocr_ ? static_cast<int>(ocr_->pages.size()) : 0; }

 private:
  std::shared_ptr<server::Generation> gen_;
  std::shared_ptr<server::OcrJob> ocr_;
  std::vector<std::string> prompt_texts_;  // per prompt
  std::vector<server::ChoiceDelta> deltas_;
  std::shared_ptr<void> keep_;
};

class Session {
 public:
  // `argv`: `locr serve`'s flags, argv[0] = "serve" (vLLM's engine arguments, as Python maps them).
  explicit Session(const std::vector<std::string>& argv);
  ~Session();

  // What Python shows and defaults from: model path, served name, max_model_len, max_num_seqs,
  // device, vocab size, eos ids, the generation_config defaults, image token id.
  json info() const;

  // Each throws server::ApiError (a 4xx as the server would answer it) before anything is submitted.
  // A /v1/chat/completions body (messages with data:/file: image URLs, sampling fields).
  std::shared_ptr<Job> chat(const std::string& body);
  // A /v1/completions body; `images` (encoded bytes), when given, fill the image placeholders of a
  // single text prompt in order (vLLM's {"prompt": ..., "multi_modal_data": {"image": ...}}).
  std::shared_ptr<Job> completion(const std::string& body, std::vector<std::string> images);
  // A /v1/ocr JSON body (pages, mode, dpi, ...) and the document's bytes.
  std::shared_ptr<Job> ocr(const std::string& body, std::string document);

  // The tokenizer: plain encode (no special tokens added, as the model's tokenizer.json does),
  // decode, and the chat template (messages as the server reads them; image parts as placeholders).
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const;
  std::string apply_chat_template(const std::string& messages, const std::string& template_kwargs,
                                  bool add_generation_prompt) const;
  // Every declared `locr serve` flag (without dashes) and how it takes values (Args::kind), so
  // Python can map keyword arguments to flags and tell which it does not know.
  static std::vector<std::pair<std::string, std::string>> serve_flags();

  void shutdown();

 private:
  std::unique_ptr<app::Serving> s_;
  uint64_t next_id_ = 1;
  std::string next_request_id(const char* prefix);
};

}  // namespace locr::py
