// kernels::Ops on one NVIDIA GPU: the backend "cuda" that model::TextDecoder / VisionEncoder /
// Projector run on, as they run on ref and cpu. Activations are F32 device memory (Ops' convention);
// weights are converted to BF16 and uploaded once (prepare, or at first use), GEMM inputs are
// rounded to BF16 where a GEMM reads them (cuBLASLt, F32 accumulation and output), and the KV
// cache is BF16 (kv_dtype). Every call is asynchronous on the backend's stream; to_host
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
