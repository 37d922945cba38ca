// --kv-cache-dtype: the KV cache's element type, in vLLM's spellings.
#pragma once

#include <optional>
#include <string>

#include "core/dtype.h"

namespace locr::model {

// The accepted spellings, for help texts and errors: "auto, bfloat16, fp8, fp8_e4m3".
const char* kv_cache_dtype_choices();

// "" or "auto": nullopt (the kernel backend's own choice, Ops::kv_dtype: F32 on ref / cpu-f32,
// BF16 on cpu-bf16 and CUDA); "bfloat16": BF16; "fp8" / "fp8_e4m3": FP8 E4M3 (OCP e4m3fn) with one
// scale per token and kv head (model::KvPool). "fp8_e5m2" and vLLM's other FP8 formats fail
// kUnsupported, anything else kInvalidArgument; both errors list the accepted values.
std::optional<DType> parse_kv_cache_dtype(const std::string& name);

}  // namespace locr::model
