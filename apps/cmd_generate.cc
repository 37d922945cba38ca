// `locr generate`: run the model on a prompt and/or images and stream the text to stdout.
#include <cstdio>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"

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
  auto m = load_any_model(a);
  // The request `locr serve` would make of it (defaults, penalties, stop strings held back while
  // they may still complete): runtime/request_path.h.
  const CliRun run = run_cli_request(a, *m, [](const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  const runtime::GenerateResult& r = run.result;
  LOCR_INFO("prompt ", run.prompt_tokens, " tokens (", run.images, " images), generated ", r.tokens.size(),
            " tokens, finish_reason=", runtime::finish_reason_name(r.finish_reason),
            r.stop_reason.none() ? "" : " (" + r.stop_reason.to_string() + ")", "; vision ", r.vision_s, " s, prefill ",
            r.prefill_s, " s, decode ", r.decode_s, " s");
  return 0;
}

}  // namespace locr::app
