#include "runtime/executor_factory.h"

#include "core/error.h"
#ifdef LOCR_HAVE_CUDA
#include "model/cuda/cuda_executor.h"
#endif

namespace locr::runtime {

std::unique_ptr<model::Executor> make_executor(const model::LightOnOcr& m, const model::ExecutorOptions& opts) {
  if (m.backend() == "cuda") {
#ifdef LOCR_HAVE_CUDA
    return model::cuda::make_cuda_executor(m, opts);
#else
    fail(ErrorKind::kUnsupported, "this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON");
#endif
  }
  if (opts.kv_cache_bytes < 0)
    fail(ErrorKind::kInvalidArgument, "the CPU executor needs an explicit KV cache size in bytes");
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
