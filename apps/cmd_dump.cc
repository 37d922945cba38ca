// `locr dump`: write the tensors transformers' parity fixtures hold — input ids, every hidden
// state of the prompt, last-position logits, greedy ids, and for images the pixel values, the
// encoder output and the projector output — to a safetensors file (F32; ids as I64); for a model
// with multimodal RoPE (Qwen3.5) also the three position rows it used ([3, T], I64). With --taps
// (LightOnOCR models), also the named intermediates of the prompt's forward pass (model/taps.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <iostream>
#include <sstream>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "model/lightonocr/tap_names.h"
#include "model/taps.h"

namespace locr::app {

namespace {
Tensor ids_tensor(const std::vector<int32_t>& ids) {
  Tensor t = Tensor::empty(DType::kI64, {static_cast<int64_t>(ids.size())});
  for (size_t i = 0; i < ids.size(); ++i) t.data<int64_t>()[i] = ids[i];
  return t;
}
Tensor copy_f32(const float* p, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(DType::kF32, std::move(shape));
  std::memcpy(t.raw(), p, t.nbytes());
  return t;
}
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}
// Fails when a tap named exactly, or every selected tap, was not recorded (a text-only prompt
// records no vision tap); warns about the others.
void check_recorded(const model::Taps& taps, bool has_images) {
  const std::vector<std::string> missing = taps.missing();
  if (missing.empty()) return;
  const std::string why = has_images ? "" : " (the prompt has no image: vision and projector taps need --image)";
  for (const auto& n : taps.exact())
    if (std::find(missing.begin(), missing.end(), n) != missing.end())
      fail(ErrorKind::kInvalidArgument, "tap ", n, " was not recorded", why);
  if (missing.size() == taps.selected().size())
    fail(ErrorKind::kInvalidArgument, "none of the ", missing.size(), " selected taps was recorded", why);
  LOCR_WARN(missing.size(), " selected taps were not recorded", why, ", first: ", missing.front());
}
}  // namespace

int cmd_dump(int argc, char** argv) {
  Args a("dump", "Write input_ids, hidden.{i}, logits, generated_ids (greedy) and, with images, pixel_values,\n"
                 "vision_hidden and image_embeds to a safetensors file for parity checks; with --taps, also named\n"
                 "intermediates of the prompt's forward pass (text.L.q, vision.patch_embed, ...; --taps list).");
  add_model_options(a);
  add_prompt_options(a);
  a.option("out", "output .safetensors file", "FILE");
  a.option("taps", "also write these intermediates of the prompt, by name or glob (text.*.q,vision.patch_embed); "
                   "'list' prints the names", "NAME,...");
  a.flag("list-taps", "print the tap names of the model and exit");
  if (!a.parse(argc, argv)) return 0;
  const bool list = a.get_flag("list-taps") || a.get("taps") == "list";
  if (!list && !a.has("out")) fail(ErrorKind::kInvalidArgument, "--out FILE.safetensors is required");
  auto m = load_any_model(a);
  const auto* lo = dynamic_cast<const model::LightOnOcr*>(m.get());
  if (!lo && (list || a.has("taps")))
    fail(ErrorKind::kUnsupported, "named taps are recorded for LightOnOCR models only, not for ", m->architecture(),
         " models yet");
  const std::vector<std::string> known = lo ? model::tap_names(lo->config(), lo->has_vision()) : std::vector<std::string>{};
  if (list) {
    for (const auto& n : known) std::cout << n << "\n";
    return 0;
  }
  std::optional<model::Taps> taps;
  if (a.has("taps")) taps = model::Taps::select(split_commas(a.get("taps")), known);
  const model::Prompt prompt = build_cli_prompt(runtime::RequestPath(*m, {}), a);
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  const int64_t H = m->hidden_size();

  std::vector<std::pair<std::string, Tensor>> out;
  out.push_back({"input_ids", ids_tensor(prompt.ids)});
  if (!prompt.positions.empty()) {
    Tensor p = Tensor::empty(DType::kI64, {3, T});
    std::memcpy(p.raw(), prompt.positions.data(), p.nbytes());
    out.push_back({"position_ids", p});
  }
  if (!prompt.images.empty()) out.push_back({"pixel_values", m->pixel_values(prompt.images)});
  // Raw greedy ids up to EOS, whatever generation_config.json says: no penalties, no loop guard.
  runtime::DecodeParams go;
  go.max_tokens = a.get_int("max-tokens", 32);
  go.sampling.temperature = 0.0f;
  go.loop_guard.enabled = false;  // parity dumps compare raw greedy ids
  for (int id : m->generation_config().eos_token_ids) go.eos_ids.push_back(id);
  runtime::GenerateHooks hooks;
  hooks.on_images = [&](const model::ImageEncoding& enc) {
    out.push_back({"vision_hidden", enc.vision_hidden});
    out.push_back({"image_embeds", enc.embeds});
  };
  hooks.on_hidden = [&](int i, const float* h, int64_t rows) {
    out.push_back({"hidden." + std::to_string(i), copy_f32(h, {rows, H})});
  };
  hooks.on_prompt_logits = [&](const float* logits, int64_t vocab) { out.push_back({"logits", copy_f32(logits, {vocab})}); };
  if (taps) hooks.taps = &*taps;
  const runtime::GenerateResult r = runtime::generate(*m, prompt, go, hooks);
  out.push_back({"generated_ids", ids_tensor(r.tokens)});
  if (taps) {
    check_recorded(*taps, !prompt.images.empty());
    for (auto& t : taps->tensors()) out.push_back(std::move(t));
  }
  io::write_safetensors(a.get("out"), out);
  LOCR_INFO("wrote ", out.size(), " tensors for a ", T, "-token prompt to ", a.get("out"));
  return 0;
}

}  // namespace locr::app
