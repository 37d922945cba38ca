// `locr make-model`: write a complete LightOnOCR-2 or LightOnOCR-3 (Qwen3.5) model directory with
// random weights (see src/toolkit/synth_model.h, synth_qwen35.h) — for tests, benchmarks and load
// checks without the real checkpoint.
#include <cstdio>

#include "apps/commands.h"
#include "apps/args.h"
#include "core/error.h"
#include "core/thread_pool.h"
#include "toolkit/progress.h"
#include "toolkit/synth_model.h"

namespace locr::app {

int cmd_make_model(int argc, char** argv) {
  Args a("make-model",
         "Write a Hugging Face model directory (config.json, model.safetensors, tokenizer.json, ...) with\n"
         "random weights of the LightOnOCR-2-1B or LightOnOCR-3-0.8B / -4B shape (or a tiny one),\n"
         "deterministic from --seed. The tokenizer is synthetic, with the real special-token ids.");
  a.option("preset",
           "lightonocr-2-1b (default; the real shapes, ~2 GB in BF16), tiny, tiny-hd64 (head_dim 64, for CUDA "
           "tests), tiny-k (text widths of whole 256-blocks, for q4_k_m); Qwen3.5 family (LightOnOCR-3): "
           "lightonocr-3-0.8b (~1.7 GB in BF16), lightonocr-3-4b (~9 GB), tiny-qwen35 (4 layers, small widths) or tiny-qwen35-k (8 layers, rows of whole 256-blocks, for quantize --type q4_k_m)",
           "NAME");
  a.option("seed", "random seed (default 0)", "S");
  a.option("dtype", "weight dtype: bf16 (default), f16 or f32", "TYPE");
  a.option("out", "output directory (created; existing files are replaced)", "DIR");
  a.option("threads", "worker threads for the random fill (default: physical cores)", "N");
  a.flag("quiet", "no progress bar");
  if (!a.parse(argc, argv)) return 0;
  toolkit::MakeModelOptions o;
  o.preset = a.get("preset", "lightonocr-2-1b");
  o.seed = std::stoull(a.get("seed", "0"));
  const std::string dt = a.get("dtype", "bf16");
  if (dt == "bf16") o.dtype = DType::kBF16;
  else if (dt == "f16") o.dtype = DType::kF16;
  else if (dt == "f32") o.dtype = DType::kF32;
  else fail(ErrorKind::kInvalidArgument, "--dtype must be bf16, f16 or f32, got '", dt, "'");
  o.out_dir = a.get("out");
  ThreadPool::set_global_threads(a.get_int("threads", 0));
  toolkit::ProgressBar bar("model.safetensors", !a.get_flag("quiet"));
  const auto r = toolkit::make_model(o, [&](uint64_t done, uint64_t total) { bar.update(done, total); });
  bar.finish();
  std::printf("wrote %s: preset %s, %lld parameters, model.safetensors %.1f MB (%s) in %.2f s (%.2f s total)\n",
              o.out_dir.c_str(), o.preset.c_str(), static_cast<long long>(r.n_params), r.weights_bytes / 1e6, dt.c_str(),
              r.weights_seconds, r.total_seconds);
  return 0;
}

}  // namespace locr::app
