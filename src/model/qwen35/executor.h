// The executor of the Qwen3.5 family on the host backends (ref, cpu-f32, cpu-bf16): the paged KV
// pool of the full-attention layers, one recurrent-state slot per sequence (StepSeq::state_slot,
// fresh at pos0 == 0), the vision tower, and the decoder step over several sequences with their
// multimodal RoPE rows (StepSeq::mrope / rope_delta).
#pragma once

#include <memory>
#include <vector>

#include "model/executor.h"
#include "model/qwen35/decoder.h"
#include "model/qwen35/model.h"

namespace locr::model::qwen35 {

// The decoder's view of one step sequence (both executors): its three RoPE position rows written
// to `positions` ([3, s.n] row-major: the prompt's M-RoPE rows, then p + rope_delta past them),
// which the returned Seq points into; its state starts fresh at pos0 == 0.
Seq decoder_seq(const StepSeq& s, std::vector<int64_t>* positions);

class CpuExecutor : public model::Executor {
 public:
  // KV blocks from opts.kv_cache_bytes (full-attention layers only); state slots: opts.max_num_seqs.
  CpuExecutor(const Model& model, const ExecutorOptions& opts);
  const char* name() const override { return "cpu"; }
  bool supports_multi_row_logits() const override { return true; }
  // Greedy rows only (greedy_on_executor): the head's argmax without host logits. Other device
  // samples get host logits, which the engine samples.
  bool supports_device_sampling() const override { return true; }
  int64_t kv_blocks() const override { return kv_.n_blocks(); }
  int block_size() const override { return kv_.block_size(); }
  int64_t kv_bytes_per_block() const override;
  int64_t state_slots() const override { return states_.n_slots(); }

  // The tower a few blocks per call (VisionTower::begin / run / finish): begin embeds the patches,
  // each vision_run advances up to n blocks, finish runs what is left and the merger.
  std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) override;
  void vision_run(VisionJob& job, int n_layers) override;
  std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& job, Tensor* vision_hidden = nullptr) override;
  int vision_layers() const override;
  // Host kernels keep no state between calls (kernels/ops.h): the vision lane may encode while
  // step() runs (this executor records no taps).
  bool concurrent_vision() const override { return true; }
  void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden = nullptr) override;

 private:
  const Model& model_;
  KvPool kv_;
  StatePool states_;
  Workspace ws_;
};

}  // namespace locr::model::qwen35
