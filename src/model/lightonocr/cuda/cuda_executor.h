// The CUDA executor: LightOnOCR on one NVIDIA GPU behind the model::Executor boundary. The model is
// the same TextDecoder / VisionEncoder / Projector as on the CPU, run on the "cuda" kernel backend
// (kernels/cuda/cuda_ops.h: weights uploaded as BF16 at load, F32 activations in device memory).
// What this executor adds is what a device needs:
//   - step inputs (token ids, KV slots, RoPE tables, block tables, sample rows, image rows) staged
//     in one pinned buffer and copied to one device buffer of fixed layout;
//   - the paged BF16 KV pool in device memory (model::KvPool on the backend's memory), sized from
//     ExecutorOptions (bytes, or --gpu-memory-utilization of the device after weights and step
//     buffers), plus one scratch block that padded graph rows write to;
//   - decode-only steps captured as CUDA graphs per padded batch bucket (1, 2, 4, ..., 512) over a
//     fixed workspace (model::Workspace), replayed after copying the step's inputs;
//   - logits only for the rows that need them, device sampling (cuda::sample) when asked.
// Built only with -DLOCR_CUDA=ON.
#pragma once

#include <memory>
#include <string>

#include "model/executor.h"
#include "model/lightonocr/lighton_ocr.h"

namespace locr::model::cuda {

// Throws locr::Error when there is no usable device or the model does not fit.
std::unique_ptr<Executor> make_cuda_executor(const LightOnOcr& m, const ExecutorOptions& opts);

// Whether the CUDA kernels take this model's shapes (attention head_dim 64 or 128 in both towers);
// `why` says why not.
bool supports(const ModelConfig& cfg, std::string* why = nullptr);

}  // namespace locr::model::cuda
