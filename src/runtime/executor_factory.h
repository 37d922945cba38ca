// Picks the executor for a loaded model: the CPU executor for the CPU kernel backends, the CUDA
// executor for backend "cuda" (builds with -DLOCR_CUDA=ON only); for the Qwen3.5 family its own
// host executor (model/qwen35/executor.h).
#pragma once

#include <memory>
#include <string>

#include "model/executor.h"
#include "model/lightonocr/lighton_ocr.h"

namespace locr::runtime {

std::unique_ptr<model::Executor> make_executor(const model::Model& m, const model::ExecutorOptions& opts);

// Whether the CUDA executor takes a model of this configuration (head dims its kernels have, ...);
// `why` says why not. False in a build without CUDA.
bool cuda_supports(const model::ModelConfig& cfg, std::string* why = nullptr);

}  // namespace locr::runtime
