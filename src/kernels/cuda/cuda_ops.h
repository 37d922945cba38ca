// kernels::Ops on one NVIDIA GPU: the backend "cuda" that model::TextDecoder / VisionEncoder /
// Projector run on, as they run on ref and cpu. Activations are F32 device memory (Ops' convention);
// weights are uploaded once (prepare, or at first use): F32 / F16 / BF16 ones converted to BF16,
// GGUF Q8_0 / Q4_K / Q6_K ones in their blocks as stored. GEMM inputs are rounded to BF16 where a
// GEMM reads them (cuBLASLt, F32 accumulation and output); a quantized weight is multiplied by a
// GEMV kernel with F32 activations for up to kQuantGemvMaxRows rows, and by dequantizing it to BF16
// for cuBLASLt beyond (cuda_api.h). The KV cache is BF16 (kv_dtype), or FP8 E4M3 with per-row-and-head
// scales when the model asks for it (--kv-cache-dtype fp8). Every call is asynchronous on the backend's stream; to_host
// synchronises. The attention ops take head_dim 64 or 128 (the tiled kernels); paged attention
// runs all the sequences of a step in one launch from device arrays (a captured graph replays it
// against new contents of the same buffers). Built only with -DLOCR_CUDA=ON.
#pragma once

#include <memory>

#include "kernels/ops.h"

struct CUstream_st;

namespace locr::kernels::cuda {

// Throws locr::Error(kUnsupported) when no device is usable.
std::unique_ptr<Ops> make_cuda_ops();

// The stream every op of `ops` (made by make_cuda_ops) is queued on.
CUstream_st* ops_stream(Ops& ops);

}  // namespace locr::kernels::cuda
