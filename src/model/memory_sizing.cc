#include "model/memory_sizing.h"

#include "core/error.h"

namespace locr::model {

int64_t kv_bytes_for_utilization(double utilization, int64_t total, int64_t in_use, int64_t activations,
                                 const char* memory) {
  if (!(utilization > 0 && utilization <= 1))
    fail(ErrorKind::kInvalidArgument, "--gpu-memory-utilization must be in (0, 1], got ", utilization);
  const int64_t kv = static_cast<int64_t>(utilization * static_cast<double>(total)) - in_use - activations;
  if (kv <= 0)
    fail(ErrorKind::kLimit, "--gpu-memory-utilization ", utilization, " leaves no memory for the KV cache: ",
         utilization, " x ", total >> 20, " MiB ", memory, " - ", in_use >> 20, " MiB in use (weights) - ",
         activations >> 20, " MiB activations (estimate) <= 0; raise it or give --kv-cache-memory");
  return kv;
}

int64_t kv_blocks_cap(int64_t max_num_seqs, int64_t max_model_len, int block_size) {
  return 2LL * max_num_seqs * ((max_model_len + block_size - 1) / block_size);
}

}  // namespace locr::model
