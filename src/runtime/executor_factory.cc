#include "runtime/executor_factory.h"

#include "core/error.h"
#include "model/lightonocr/executor.h"
#include "model/qwen35/executor.h"
#ifdef LOCR_HAVE_CUDA
#include "model/lightonocr/cuda/cuda_executor.h"
#include "model/qwen35/cuda/cuda_executor.h"
#endif

namespace locr::runtime {

std::unique_ptr<model::Executor> make_executor(const model::Model& model, const model::ExecutorOptions& opts) {
  if (opts.kv_cache_bytes < 0 && model.backend() != "cuda")
    fail(ErrorKind::kInvalidArgument, "the CPU executor needs an explicit KV cache size in bytes");
  if (const auto* q = dynamic_cast<const model::qwen35::Model*>(&model)) {
    if (q->backend() == "cuda") {
#ifdef LOCR_HAVE_CUDA
      return model::qwen35::cuda::make_cuda_executor(*q, opts);
#else
      fail(ErrorKind::kUnsupported, "this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON");
#endif
    }
    return std::make_unique<model::qwen35::CpuExecutor>(*q, opts);
  }
  const auto* lo = dynamic_cast<const model::LightOnOcr*>(&model);
  LOCR_CHECK(lo, "no executor for a model of architecture ", model.architecture());
  const model::LightOnOcr& m = *lo;
  if (m.backend() == "cuda") {
#ifdef LOCR_HAVE_CUDA
    return model::cuda::make_cuda_executor(m, opts);
#else
    fail(ErrorKind::kUnsupported, "this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON");
#endif
  }
  return std::make_unique<model::CpuExecutor>(m, opts);
}

bool cuda_supports(const model::ModelConfig& cfg, std::string* why) {
#ifdef LOCR_HAVE_CUDA
  return model::cuda::supports(cfg, why);
#else
  if (why) *why = "this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON";
  return false;
#endif
}

}  // namespace locr::runtime
