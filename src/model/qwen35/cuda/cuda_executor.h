// The Qwen3.5 family (LightOnOCR-3-0.8B / -4B) on one NVIDIA GPU behind the model::Executor
// boundary. The model is the same Decoder and VisionTower as on the host, run on the "cuda" kernel
// backend (kernels/cuda/cuda_ops.h: weights uploaded as BF16 at load, F32 activations, the gated
// attention's head_dim 256 on the tile and decode kernels, the DeltaNet recurrences in qwen35.cu).
// What this executor adds is what a device needs:
//   - the paged KV pool of the full-attention layers and the recurrent-state slots of the DeltaNet
//     layers in device memory, the pool sized from ExecutorOptions (bytes, or
//     --gpu-memory-utilization of the device after the weights, the state slots and an activation
//     estimate);
//   - the step's residual stream in device memory: token embeddings gathered there, image rows
//     gathered from the page's device embeddings and scattered over their prompt rows;
//   - logits only for the rows that need them, gathered on the device and copied to the host.
// Unlike LightOnOCR-2's CUDA executor it captures no graphs and samples on the host (a decode step
// of the 0.8B is a few dozen kernel launches per layer group; graphs are the next step once it has
// run on hardware). Built only with -DLOCR_CUDA=ON.
#pragma once

#include <memory>

#include "model/executor.h"
#include "model/qwen35/model.h"

namespace locr::model::qwen35::cuda {

// Throws locr::Error when there is no usable device or the model was not loaded with backend cuda.
std::unique_ptr<Executor> make_cuda_executor(const Model& m, const ExecutorOptions& opts);

}  // namespace locr::model::qwen35::cuda
