// The `locr` command: dispatches to sub-commands (see apps/commands.h).
#include <cstdio>
#include <cstring>
#include <string>

#include "apps/commands.h"
#include "core/error.h"
#include "kernels/devices.h"

namespace {
void usage() {
  std::fprintf(stderr,
               "usage: locr <command> [options]\n\n"
               "commands:\n"
               "  generate   run the model on a prompt and/or images, print the generated text\n"
               "  serve      serve the model over an OpenAI-compatible HTTP API (like `vllm serve`)\n"
               "  dump       write input ids, hidden states, logits and greedy ids to safetensors\n"
               "  make-model write a model directory with random weights (real shapes or tiny)\n"
               "  eval       compare a backend's logits and hidden states with the FP32 reference\n"
               "  chat       chat with a local model or an OpenAI-compatible server, streaming\n"
               "  bench      benchmark a running server (latency, throughput, TTFT/TPOT/ITL)\n"
               "  ocr        OCR documents (PDFs, images; files, globs, folders) into Markdown files\n"
               "  pull       download a model from the Hugging Face hub (or ModelScope) into the HF cache\n"
               "  perf       in-process benchmark of one page, stage by stage (like llama-bench)\n"
               "  parity     run the transformers fixtures on a backend (cpu-bf16, cuda) against their goldens\n"
               "  draft-sim  simulate a speculative-decoding drafter (PDF text layer, n-grams) against a target text\n"
               "  quantize   write a model as llama.cpp's GGUF files (OUT.gguf + mmproj), q8_0/f16/bf16/f32\n"
               "  version    print the version\n\n"
               "Run `locr <command> --help` for a command's options.\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "generate") return locr::app::cmd_generate(argc - 1, argv + 1);
    if (cmd == "dump") return locr::app::cmd_dump(argc - 1, argv + 1);
    if (cmd == "serve") return locr::app::cmd_serve(argc - 1, argv + 1);
    if (cmd == "make-model") return locr::app::cmd_make_model(argc - 1, argv + 1);
    if (cmd == "eval") return locr::app::cmd_eval(argc - 1, argv + 1);
    if (cmd == "chat") return locr::app::cmd_chat(argc - 1, argv + 1);
    if (cmd == "bench") return locr::app::cmd_bench(argc - 1, argv + 1);
    if (cmd == "ocr") return locr::app::cmd_ocr(argc - 1, argv + 1);
    if (cmd == "pull") return locr::app::cmd_pull(argc - 1, argv + 1);
    if (cmd == "perf") return locr::app::cmd_perf(argc - 1, argv + 1);
    if (cmd == "quantize") return locr::app::cmd_quantize(argc - 1, argv + 1);
    if (cmd == "parity") return locr::app::cmd_parity(argc - 1, argv + 1);
    if (cmd == "draft-sim") return locr::app::cmd_draft_sim(argc - 1, argv + 1);
    if (cmd == "version" || cmd == "--version") {
      std::printf("locr %s\n", LOCR_VERSION_STRING);
      std::printf("cuda: %s\n", locr::kernels::cuda_summary().c_str());
      return 0;
    }
  } catch (const locr::Error& e) {
    std::fprintf(stderr, "locr %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "locr: unknown command '%s'\n", cmd.c_str());
  usage();
  return 2;
}
