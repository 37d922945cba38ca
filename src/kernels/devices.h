// Which devices this build and this machine can run on, asked without any device header: the model,
// the runtime and the frontends call these instead of the CUDA backend's API (kernels/cuda/), which
// only the CUDA executor and the CUDA kernels' tests include.
#pragma once

#include <string>

namespace locr::kernels {

// Whether this locr was built with the CUDA backend (-DLOCR_CUDA=ON).
bool built_with_cuda();

// Whether a CUDA device is usable now; when not, `why` says why (built without CUDA, no driver, no
// device, ...). Never throws.
bool cuda_usable(std::string* why = nullptr);

// One line for `locr version`: the CUDA architectures this build carries and, when a device is
// usable, its name, architecture and the cuBLASLt file opened; otherwise why not.
std::string cuda_summary();

// Throws Error(kUnsupported) naming the reason when `backend` is "cuda" and no CUDA device is usable
// (or this build has no CUDA backend); does nothing for the CPU backends.
void check_backend_usable(const std::string& backend);

}  // namespace locr::kernels
