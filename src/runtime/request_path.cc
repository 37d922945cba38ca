#include "runtime/request_path.h"

#include <algorithm>

#include "core/error.h"

namespace locr::runtime {

RequestPath::RequestPath(const model::Model& m, RequestDefaults d, RequestPathOptions o)
    : m_(m), defaults_(std::move(d)), o_(std::move(o)) {
  if (o_.max_model_len <= 0) o_.max_model_len = m.max_position_embeddings();
}

nlohmann::json RequestPath::ocr_messages(bool grounding) {
  static const std::string kGrounding = "grounding";
  return model::Model::make_messages(nullptr, grounding ? &kGrounding : nullptr, 1);
}

nlohmann::json RequestPath::ocr_template_kwargs() { return {{"enable_thinking", false}}; }

model::RenderedChat RequestPath::ocr_chat(bool grounding) const {
  return m_.render_chat(ocr_messages(grounding), ocr_template_kwargs());
}

model::Prompt RequestPath::prompt(const nlohmann::json& messages, const std::vector<io::Image>& images) const {
  return m_.build_prompt(messages, images);
}

model::Prompt RequestPath::prompt(model::RenderedChat chat, const std::vector<io::Image>& images) const {
  return m_.build_prompt(std::move(chat), images);
}

std::vector<int32_t> RequestPath::prompt_ids(const model::RenderedChat& chat,
                                             const std::vector<io::ImageSize>& sizes) const {
  if (chat.n_images != sizes.size())
    fail(ErrorKind::kInvalidArgument, "the prompt has ", chat.n_images, " image placeholder(s) but ", sizes.size(),
         " image(s) were given");
  const int32_t image_id = m_.image_token_id();
  std::vector<int32_t> ids;
  size_t next = 0;
  for (int32_t id : chat.ids) {
    if (id != image_id) {
      ids.push_back(id);
      continue;
    }
    const io::ImageSize& s = sizes[next++];
    ids.insert(ids.end(), m_.image_tokens(s.height, s.width), id);
  }
  return ids;
}

int RequestPath::max_tokens(int64_t prompt_len, int requested) const {
  const int64_t left = o_.max_model_len - prompt_len;
  if (left <= 0)
    fail(ErrorKind::kLimit, "the prompt needs ", prompt_len, " tokens, more than the context leaves room for (",
         o_.max_model_len, " tokens with the output)");
  int64_t cap = left;
  if (requested > 0) cap = requested;
  else if (defaults_.max_new_tokens > 0) cap = defaults_.max_new_tokens;
  else if (o_.fallback_max_tokens > 0) cap = o_.fallback_max_tokens;
  return static_cast<int>(std::min(left, cap));
}

LoopGuardConfig RequestPath::loop_guard(std::optional<bool> asked, bool ignore_eos) const {
  LoopGuardConfig g = defaults_.loop_guard;
  g.enabled = asked.value_or(defaults_.loop_guard.enabled && !ignore_eos);
  return g;
}

DecodeParams RequestPath::decode(int64_t prompt_len, int requested) const {
  DecodeParams d = defaults_.decode(max_tokens(prompt_len, requested));
  d.forced_ids = o_.forced_ids;
  return d;
}

}  // namespace locr::runtime
