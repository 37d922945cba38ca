#include "model/kv_cache_dtype.h"

#include "core/error.h"

namespace locr::model {

const char* kv_cache_dtype_choices() { return "auto, bfloat16, fp8, fp8_e4m3"; }

std::optional<DType> parse_kv_cache_dtype(const std::string& name) {
  if (name.empty() || name == "auto") return std::nullopt;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "fp8" || name == "fp8_e4m3") return DType::kF8E4M3;
  if (name == "fp8_e5m2" || name == "fp8_inc" || name == "fp8_ds_mla")
    fail(ErrorKind::kUnsupported, "--kv-cache-dtype ", name, " is not implemented (the FP8 KV cache is E4M3); "
         "accepted: ", kv_cache_dtype_choices());
  fail(ErrorKind::kInvalidArgument, "--kv-cache-dtype: unknown value '", name, "'; accepted: ", kv_cache_dtype_choices());
}

}  // namespace locr::model
