// `locr generate`: run the model on a prompt and/or images and stream the text to stdout.
#include <cstdio>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"
#include "runtime/detokenizer.h"

namespace locr::app {

int cmd_generate(int argc, char** argv) {
  Args a("generate", "Generate text for a prompt and/or page images. With an image and no --prompt, sends the\n"
                     "recommended OCR request (the image alone).");
  add_model_options(a);
  add_prompt_options(a);
  add_sampling_options(a);
  a.flag("loop-guard", "stop when the output starts to repeat itself verbatim (default on; --no-loop-guard)");
  if (!a.parse(argc, argv)) return 0;
  auto m = load_model(a);
  const model::Prompt prompt = build_cli_prompt(*m, a);
  // The defaults and penalties `locr serve` applies to the same request (runtime/request_defaults.h).
  const runtime::GenerateOptions go = generate_options_from_args(a, m->generation_config());
  runtime::Detokenizer detok(m->tokenizer(), /*skip_special=*/true);
  runtime::GenerateHooks hooks;
  hooks.on_token = [&](int32_t id) {
    const std::string s = detok.push(id);
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  const runtime::GenerateResult r = runtime::generate(*m, prompt, go, hooks);
  const std::string tail = detok.finish();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  LOCR_INFO("prompt ", prompt.ids.size(), " tokens (", prompt.images.size(), " images), generated ", r.tokens.size(),
            " tokens, finish_reason=", r.finish_reason, r.stop_reason.empty() ? "" : " (" + r.stop_reason + ")", "; vision ", r.vision_s, " s, prefill ", r.prefill_s,
            " s, decode ", r.decode_s, " s");
  return 0;
}

}  // namespace locr::app
