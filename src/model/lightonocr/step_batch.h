// What one decoder step needs besides the input rows, in the backend's memory: the RoPE angles of
// every row, the KV pool row each new key/value goes to, and the sequences' block tables for
// batched paged attention (kernels::PagedBatch). The CPU executor points a StepBatch at host
// arrays built by HostStepBatch; a device executor copies the same arrays into its fixed staging
// buffers and points the StepBatch there.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "model/lightonocr/config.h"

namespace locr::model {

// One sequence's share of a decoder step: n_new tokens at positions pos0 .. pos0+n_new-1, whose
// keys/values go to (and whose attention reads) the blocks of `block_table`.
struct SeqStep {
  int64_t pos0 = 0;
  int64_t n_new = 0;
  const int32_t* block_table = nullptr;
  bool prompt = false;  // prompt rows (kernels::AttentionParams::prompt_rows)
};

struct StepBatch {
  int64_t rows = 0;
  const float* cos = nullptr;      // [rows, head_dim / 2]
  const float* sin = nullptr;      // [rows, head_dim / 2]
  const int32_t* slots = nullptr;  // [rows] KV pool row of each new row
  kernels::PagedBatch attn;
};

// The host arrays of a step over `seqs` (rows in sequence order) and a StepBatch pointing at them.
class HostStepBatch {
 public:
  HostStepBatch(const TextConfig& cfg, const std::vector<SeqStep>& seqs, int block_size);
  HostStepBatch(const HostStepBatch&) = delete;
  HostStepBatch& operator=(const HostStepBatch&) = delete;
  const StepBatch& batch() const { return b_; }

  std::vector<float> cos, sin;
  std::vector<int32_t> slots, cu_q, seq_lens, tables, prompt;

 private:
  StepBatch b_;
};

}  // namespace locr::model
