// Picks the executor for a loaded model: the CPU executor for the CPU kernel backends, the CUDA
// executor for backend "cuda" (builds with -DLOCR_CUDA=ON only).
#pragma once

#include <memory>

#include "model/executor.h"
#include "model/lighton_ocr.h"

namespace locr::runtime {

std::unique_ptr<model::Executor> make_executor(const model::LightOnOcr& m, const model::ExecutorOptions& opts);

}  // namespace locr::runtime
