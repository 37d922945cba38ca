// How a model is loaded, for every architecture family: the kernel backend, quantization, KV cache
// dtype, chat template override, a text GGUF's mmproj, op profiling; and the kernel backend those
// options ask for.
#pragma once

#include <memory>
#include <string>

#include "kernels/ops.h"

namespace locr::model {

struct LoadOptions {
  std::string backend = "cpu";      // kernel backend (kernels::make_ops): cpu (= cpu-bf16), cpu-f32, ref;
                                    // "cuda": the CUDA executor (weights go to the GPU, no CPU packing)
  std::string chat_template_file;   // overrides the model's template when set
  int image_align = 28;             // 28 (vLLM rule) or 14 (transformers' LightOnOcrProcessor)
  std::string quantization;         // "" (the checkpoint's dtype) or "q8_0" (model/quantize_matrix.h)
  std::string kv_cache_dtype;       // --kv-cache-dtype (model/kv_cache_dtype.h): "" / "auto" (the backend's),
                                    // "bfloat16", "fp8" / "fp8_e4m3" (every backend)
  std::string mmproj;               // with a text GGUF model: the mmproj GGUF (vision + projector);
                                    // empty: a text-only model (images are refused)
  bool profile_ops = false;         // time every op (kernels::ProfiledOps; host backends only)
};

// The kernel backend `opts` asks for (kernels::make_ops), timed op by op when opts.profile_ops.
std::unique_ptr<kernels::Ops> make_model_ops(const LoadOptions& opts);

}  // namespace locr::model
