// `locr dump`: write the tensors transformers' parity fixtures hold — input ids, every hidden
// state of the prompt, last-position logits, greedy ids, and for images the pixel values, the
// encoder output and the projector output — to a safetensors file (F32; ids as I64).
#include <cstring>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"
#include "io/safetensors.h"

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
}  // namespace

int cmd_dump(int argc, char** argv) {
  Args a("dump", "Write input_ids, hidden.{i}, logits, generated_ids (greedy) and, with images, pixel_values,\n"
                 "vision_hidden and image_embeds to a safetensors file for parity checks.");
  add_model_options(a);
  add_prompt_options(a);
  a.option("out", "output .safetensors file", "FILE");
  if (!a.parse(argc, argv)) return 0;
  if (!a.has("out")) fail(ErrorKind::kInvalidArgument, "--out FILE.safetensors is required");
  auto m = load_model(a);
  const model::Prompt prompt = build_cli_prompt(*m, a);
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  const int64_t H = m->config().text.hidden_size;

  std::vector<std::pair<std::string, Tensor>> out;
  out.push_back({"input_ids", ids_tensor(prompt.ids)});
  if (!prompt.images.empty()) {
    const auto& img = prompt.images[0];
    const std::vector<float> pixels = model::normalized_pixels(img);
    out.push_back({"pixel_values", copy_f32(pixels.data(), {3, img.height, img.width})});
  }
  runtime::GenerateOptions go;
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
  const runtime::GenerateResult r = runtime::generate(*m, prompt, go, hooks);
  out.push_back({"generated_ids", ids_tensor(r.tokens)});
  io::write_safetensors(a.get("out"), out);
  LOCR_INFO("wrote ", out.size(), " tensors for a ", T, "-token prompt to ", a.get("out"));
  return 0;
}

}  // namespace locr::app
