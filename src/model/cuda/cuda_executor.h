// The CUDA executor: LightOnOCR on one NVIDIA GPU behind the model::Executor boundary.
//   - weights converted to BF16 at upload (F32/F16/BF16 checkpoints), q/k/v stacked into one
//     matrix and gate/up into one [2*inter, hidden] matrix (one GEMM each), shared by every
//     executor of a model (LightOnOcr::device_cache);
//   - a paged BF16 KV pool in device memory, sized from ExecutorOptions (bytes, or
//     --gpu-memory-utilization of the device's memory after weights and step buffers), plus one
//     scratch block that padded graph rows write to;
//   - decoder steps over many sequences (residual stream F32, activations BF16), logits only for
//     the rows that need them, device sampling (cuda::sample) when the engine asks for it;
//   - decode-only steps captured as CUDA graphs per padded batch bucket (1, 2, 4, ..., 512) with
//     fixed device input buffers, replayed after copying the step's inputs;
//   - the Pixtral encoder over several images packed together (varlen attention, no cross-image
//     attention, 2-D RoPE tables built on the host) and the projector; image embeddings stay on
//     the device and are scattered into the decoder input rows.
// Built only with -DLOCR_CUDA=ON.
#pragma once

#include <memory>
#include <string>

#include "model/executor.h"
#include "model/lighton_ocr.h"

namespace locr::model::cuda {

// Throws locr::Error when there is no usable device or the model does not fit.
std::unique_ptr<Executor> make_cuda_executor(const LightOnOcr& m, const ExecutorOptions& opts);

// Whether the CUDA kernels take this model's shapes (attention head_dim 64 or 128 in both towers);
// `why` says why not.
bool supports(const ModelConfig& cfg, std::string* why = nullptr);

}  // namespace locr::model::cuda
