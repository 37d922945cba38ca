// LightOnOCR-2's executors (model/executor.h is the boundary they implement): the vision half that
// its CPU and CUDA executors share (vision::begin / run / finish) and the CPU executor. The CUDA
// executor is lightonocr/cuda/; Qwen3.5's is qwen35/executor.h.
#pragma once

#include <memory>
#include <vector>

#include "core/tensor.h"
#include "model/executor.h"
#include "model/kv_pool.h"
#include "model/image_input.h"
#include "model/workspace.h"

namespace locr::model {

class LightOnOcr;
class Taps;  // model/taps.h

// The vision half of LightOnOCR-2's executors, the same on every backend (the CPU executor below and
// the CUDA executor): VisionEncoder and Projector over the model's kernels, a few encoder layers per
// call.
namespace vision {
std::unique_ptr<VisionJob> begin(const LightOnOcr& m, const std::vector<ProcessedImage>& images, Taps* taps);
void run(const LightOnOcr& m, VisionJob& job, int n_layers, Taps* taps);
// vision_hidden, when set, receives a host copy of the encoder's output.
std::shared_ptr<ImageEmbeds> finish(const LightOnOcr& m, VisionJob& job, Tensor* vision_hidden, Taps* taps);
}  // namespace vision

// LightOnOCR-2 on the host backends (ref, cpu-f32, cpu-bf16): the model's kernels::Ops, host step
// arrays, a host KV pool.
class CpuExecutor : public Executor {
 public:
  CpuExecutor(const LightOnOcr& model, const ExecutorOptions& opts);
  const char* name() const override { return "cpu"; }
  bool supports_multi_row_logits() const override { return true; }
  // Greedy rows only (greedy_on_executor): the head's argmax without host logits. Other device
  // samples get host logits, which the engine samples.
  bool supports_device_sampling() const override { return true; }
  int64_t kv_blocks() const override { return kv_.n_blocks(); }
  int block_size() const override { return kv_.block_size(); }
  int64_t kv_bytes_per_block() const override;
  std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) override;
  void vision_run(VisionJob& job, int n_layers) override;
  std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& job, Tensor* vision_hidden = nullptr) override;
  int vision_layers() const override;
  // Host kernels keep no state between calls (kernels/ops.h); not while taps record.
  bool concurrent_vision() const override;
  void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden = nullptr) override;
  bool set_taps(Taps* taps) override {
    taps_ = taps;
    return true;
  }

  // Host image embeddings (what the CPU executor's ImageEmbeds are), for tests and host callers.
  static std::shared_ptr<ImageEmbeds> host_embeds(Tensor t);

 private:
  const LightOnOcr& model_;
  KvPool kv_;
  Workspace ws_;  // the decoder's activations, reused from step to step
  Taps* taps_ = nullptr;
};

}  // namespace locr::model
