// How big the KV cache is, in one place for every backend: vLLM's --gpu-memory-utilization F is a
// fraction of the memory the model runs in (host RAM for the CPU backends: server/memory_plan;
// device memory for cuda: the CUDA executor) for weights, activations and KV together, so the KV
// cache gets F x total minus what is already used (weights) minus an activation estimate (each
// model's own; LightOnOCR-2's: model/lightonocr/activation_estimate.h); --kv-cache-memory gives the
// bytes directly. Either way the pool is capped at what the sequences could ever use.
#pragma once

#include <cstdint>

namespace locr::model {

// The KV bytes `utilization` of `total` leaves after `in_use` and `activations` bytes. Fails
// (kInvalidArgument) on a utilization outside (0, 1] and (kLimit) when nothing is left, naming
// every term; `memory` names what `total` is ("RAM", "device memory").
int64_t kv_bytes_for_utilization(double utilization, int64_t total, int64_t in_use, int64_t activations,
                                 const char* memory);

// Blocks the sequences could ever use: max_num_seqs x max_model_len tokens, twice over for
// prefix-cache reuse (the pool is reserved up front, so more would be wasted).
int64_t kv_blocks_cap(int64_t max_num_seqs, int64_t max_model_len, int block_size);

}  // namespace locr::model
