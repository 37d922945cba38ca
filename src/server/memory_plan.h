// How much memory the KV cache gets on a CPU machine. vLLM's --gpu-memory-utilization F means a
// fraction of device memory for weights, activations and KV together; here it is F x MemTotal
// (from /proc/meminfo) minus the weights' bytes (the safetensors files, memory-mapped) minus an
// activation estimate (minus, for hybrid models, the recurrent states of max_num_seqs sequences).
// --kv-cache-memory gives the KV bytes directly. Either way the pool is
// capped at what the sequences could ever use (max_num_seqs x max_model_len tokens, twice over
// for prefix-cache reuse), since the engine reserves it up front (committed as used).
#pragma once

#include <cstdint>
#include <string>

#include "model/model.h"
#include "runtime/engine.h"

namespace locr::server {

struct MemoryPlan {
  int64_t kv_bytes = 0;
  int64_t mem_total = 0, weight_bytes = 0, activation_bytes = 0, state_bytes = 0;
  bool capped = false;
  std::string explain() const;
};

// "4294967296", "4GiB", "512MiB", "2G" (binary K/M/G/T and KiB..TiB; decimal kB/MB/GB/TB and k/m/g).
// Throws locr::Error on anything else.
int64_t parse_size(const std::string& s, const std::string& what);

int64_t mem_total_bytes();                        // /proc/meminfo MemTotal
int64_t weight_bytes(const std::string& model_dir);  // sum of *.safetensors sizes (a GGUF file: its size)
// kv_cache_memory >= 0 wins; else utilization in (0, 1]. The model gives the bytes of a KV block,
// of its activations and of each sequence's recurrent state (hybrid models: held for every one of
// max_num_seqs sequences, counted as in use beside the weights).
MemoryPlan plan_memory(const model::Model& m, const runtime::EngineOptions& opts, const std::string& model_dir,
                       double utilization, int64_t kv_cache_memory);

}  // namespace locr::server
