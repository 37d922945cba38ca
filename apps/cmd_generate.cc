// `locr generate`: run the model on a prompt and/or images and stream the text to stdout.
#include <cstdio>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"
#include "runtime/detokenizer.h"
#include "server/stop_matcher.h"

namespace locr::app {

int cmd_generate(int argc, char** argv) {
  Args a("generate", "Generate text for a prompt and/or page images. With an image and no --prompt, sends the\n"
                     "recommended OCR request (the image alone).");
  add_model_options(a);
  add_prompt_options(a);
  add_sampling_options(a);
  a.flag("loop-guard", "stop when the output starts to repeat itself verbatim (default on; --no-loop-guard)");
  a.repeated("stop", "stop when this text is generated (not printed), as a request's `stop` to locr serve", "TEXT");
  if (!a.parse(argc, argv)) return 0;
  auto m = load_model(a);
  const model::Prompt prompt = build_cli_prompt(*m, a);
  // The defaults and penalties `locr serve` applies to the same request (runtime/request_defaults.h).
  const runtime::GenerateOptions go = generate_options_from_args(a, m->generation_config());
  runtime::Detokenizer detok(m->tokenizer(), /*skip_special=*/true);
  // Stop strings as the server matches them (held back while they may still complete).
  server::StopMatcher stops(a.get_all("stop"), /*include_stop=*/false);
  auto print = [](const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
  runtime::GenerateHooks hooks;
  hooks.on_token = [&](int32_t id) {
    print(stops.push(detok.push(id)));
    return !stops.matched();
  };
  const runtime::GenerateResult r = runtime::generate(*m, prompt, go, hooks);
  if (!stops.matched()) print(stops.push(detok.finish()) + stops.flush());
  std::fputc('\n', stdout);
  LOCR_INFO("prompt ", prompt.ids.size(), " tokens (", prompt.images.size(), " images), generated ", r.tokens.size(),
            " tokens, finish_reason=", r.finish_reason, r.stop_reason.empty() ? "" : " (" + r.stop_reason + ")", "; vision ", r.vision_s, " s, prefill ", r.prefill_s,
            " s, decode ", r.decode_s, " s");
  return 0;
}

}  // namespace locr::app
