// Internal to the CUDA backend: turning CUDA runtime errors into locr::Error(kInternal) and the
// launch-size helpers every kernel file shares. Host code only (usable from .cc and .cu). Not part
// of the public API (cuda_api.h); nothing outside src/kernels/cuda includes it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"

namespace locr::kernels::cuda::detail {

[[noreturn]] void throw_cuda(cudaError_t err, const char* what, const char* file, int line);

// Checks the result of a runtime call.
inline void check(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda(err, what, file, line);
}

// After a kernel launch: reports a bad configuration (grid, shared memory) at once. Errors that
// happen while the kernel runs surface at the next synchronising call.
inline void check_launch(const char* kernel, const char* file, int line) {
  check(cudaGetLastError(), kernel, file, line);
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Blocks for a grid-stride loop over n elements: enough to fill the device, never more than
// 65535 * 8 (the loop covers the rest).
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t b = ceil_div(n, threads);
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace locr::kernels::cuda::detail

#define LOCR_CUDA_CHECK(call) ::locr::kernels::cuda::detail::check((call), #call, __FILE__, __LINE__)
#define LOCR_CUDA_LAUNCHED(name) ::locr::kernels::cuda::detail::check_launch(name, __FILE__, __LINE__)
