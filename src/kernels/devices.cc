#include "kernels/devices.h"

#include "core/error.h"
#ifdef LOCR_HAVE_CUDA
#include "kernels/cuda/cuda_api.h"
#endif

namespace locr::kernels {

bool built_with_cuda() {
#ifdef LOCR_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_usable(std::string* why) {
#ifdef LOCR_HAVE_CUDA
  return cuda::available(why);
#else
  if (why) *why = "this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON";
  return false;
#endif
}

std::string cuda_summary() {
#ifdef LOCR_HAVE_CUDA
  std::string s = std::string("built for ") + cuda::built_archs() + "; ";
  std::string why;
  if (!cuda::available(&why)) return s + "not usable: " + why;
  return s + "usable: " + cuda::device_name(0) + " (" + cuda::device_arch(0) + "), cuBLASLt " + cuda::cublaslt_path();
#else
  return "not built (rebuild with -DLOCR_CUDA=ON)";
#endif
}

void check_backend_usable(const std::string& backend) {
  if (backend != "cuda") return;
  std::string why;
  if (cuda_usable(&why)) return;
  if (!built_with_cuda()) fail(ErrorKind::kUnsupported, why);
  fail(ErrorKind::kUnsupported, "--backend cuda: ", why);
}

}  // namespace locr::kernels
