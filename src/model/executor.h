// The executor boundary: what the engine and the CLI loop ask of a compute backend, so the same
// scheduling code drives the CPU kernels or a GPU. An executor owns the paged KV pool and runs
//   (a) vision encoding of a batch of pages, incrementally (begin / run some layers / finish ->
//       image embeddings, kept wherever the backend wants them: host F32 or device memory),
//   (b) one decoder step over several sequences: per sequence the new token ids, their positions
//       pos0 .. pos0+n-1, its KV block table, which rows take image embeddings instead of token
//       embeddings, and whether the last row's logits (or a device-sampled token) are wanted.
// Scheduling, prefix caching and block accounting stay in runtime/; an executor only computes.
//
// A family's forward passes are the model, on every backend; an executor adds what its device needs
// around them. LightOnOCR-2's CpuExecutor (lightonocr/executor.h): host step arrays, a host KV
// pool; its CUDA executor (lightonocr/cuda/, made by runtime/executor_factory for backend "cuda"):
// staging of step inputs into fixed device buffers, the device KV pool, decode graphs, device
// sampling. Qwen3.5's (qwen35/executor.h on the host, qwen35/cuda/ on a GPU) add the recurrent
// state slots.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "kernels/ops.h"
#include "model/image_input.h"

namespace locr::model {

class Taps;  // model/taps.h

// Image embeddings of one request's pages: [rows, text hidden] F32, on the host or on a device.
class ImageEmbeds {
 public:
  virtual ~ImageEmbeds() = default;
  virtual int64_t rows() const = 0;
  // A host copy [rows, hidden] F32 (for dumps and comparisons; the CPU executor returns its own).
  virtual Tensor to_host() const = 0;
};

// A vision encoding in progress (the residual stream after some encoder blocks).
class VisionJob {
 public:
  virtual ~VisionJob() = default;
  virtual int64_t n_patches() const = 0;
  virtual bool done() const = 0;
};

// Image embeddings in the memory of the model's kernel backend (host for ref/cpu, the device for
// cuda): what every executor's vision_finish returns.
class TensorEmbeds : public ImageEmbeds {
 public:
  TensorEmbeds(Tensor t, kernels::Ops& ops) : t_(std::move(t)), ops_(ops) {}
  int64_t rows() const override { return t_.empty_tensor() ? 0 : t_.dim(0); }
  Tensor to_host() const override;
  const Tensor& tensor() const { return t_; }
  const kernels::Ops& ops() const { return ops_; }

 private:
  Tensor t_;
  kernels::Ops& ops_;
};

// Device sampling parameters of one sequence (see kernels/cuda SampleParams): used only when the
// executor supports device sampling and the request needs no host-side logits processing.
struct DeviceSample {
  float temperature = 0.0f;  // <= 0: greedy
  float top_p = 1.0f;
  float min_p = 0.0f;
  int32_t top_k = 0;
  uint64_t seed = 0;
  uint64_t step = 0;  // tokens generated so far (the generator's counter)
  bool want_logprob = false;
};

// One sequence's share of a decoder step.
struct StepSeq {
  const int32_t* ids = nullptr;  // n new token ids
  int64_t n = 0;
  int64_t pos0 = 0;              // position of ids[0]; keys of 0 .. pos0-1 are in the cache
  const int32_t* block_table = nullptr;
  int64_t table_len = 0;         // entries in block_table (covers positions < pos0 + n)
  // Row i (< n) takes image embedding row image_rows[i] of `images` when >= 0 (null: none).
  const ImageEmbeds* images = nullptr;
  const int64_t* image_rows = nullptr;
  bool want_logits = false;      // the last row's logits (host) or sampled token
  // With want_logits: the logits of the last n_logits rows (speculative verification: each row
  // scores the token after it), host logits only (no device sample). Executors that cannot
  // (supports_multi_row_logits() false) take 1 only.
  int64_t n_logits = 1;
  const DeviceSample* sample = nullptr;  // with want_logits: sample on the device instead
  // Multimodal RoPE (executors of models with it, Qwen3.5; others ignore these): the sequence's
  // prompt position rows [3, mrope_len] row-major; the row at token index p takes (mrope[p],
  // mrope[mrope_len + p], mrope[2 mrope_len + p]) when p < mrope_len, else p + rope_delta on all
  // three (model::Prompt's positions and rope_delta).
  const int64_t* mrope = nullptr;
  int64_t mrope_len = 0;
  int64_t rope_delta = 0;
  // Executors with recurrent state (state_slots() > 0): the sequence's slot, < state_slots(); the
  // state starts from zero at pos0 == 0 (a sequence can only be continued from its own slot).
  int32_t state_slot = 0;
  // The rows are prompt rows (a prefill, possibly after a cached prefix or as one chunk of it),
  // not tokens being decoded or verified (kernels::AttentionParams::prompt_rows).
  bool prompt = false;
};

struct StepOutput {
  // Host logits [k, vocab] for the sequences with want_logits and no device sample, in order (a
  // sequence with n_logits m has m consecutive rows, its rows in order).
  Tensor logits;
  std::vector<int> logits_seq;   // index into the step's sequences of each logits row
  // Device-sampled tokens (and log-probabilities when asked) per sequence; -1 where not sampled.
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
};

// transformers' output_hidden_states for a step: (i, [rows, hidden] F32 host) for i = 0..L.
using HiddenHook = std::function<void(int, const float*, int64_t rows)>;

struct ExecutorOptions {
  int block_size = 16;
  int64_t kv_cache_bytes = 512LL << 20;  // KV pool budget; < 0: from gpu_memory_utilization
  double gpu_memory_utilization = 0.9;   // device backends, when kv_cache_bytes < 0
  int64_t max_kv_blocks = 0;             // cap on the pool (0 = none)
  int max_num_seqs = 32;                 // device backends: fixed step buffers
  int max_num_batched_tokens = 4096;
  int max_model_len = 8192;
  bool cuda_graphs = true;               // capture decode-only steps (device backends)
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;

  virtual int64_t kv_blocks() const = 0;
  virtual int block_size() const = 0;
  virtual int64_t kv_bytes_per_block() const = 0;
  // Slots of recurrent state (one per running sequence: StepSeq::state_slot); 0 when the model has
  // none. Such a state cannot be rewound or shared: no prefix caching, no rejected drafts.
  virtual int64_t state_slots() const { return 0; }
  virtual bool supports_device_sampling() const { return false; }
  // StepSeq::n_logits > 1 (several rows' logits of one sequence, for speculative decoding).
  virtual bool supports_multi_row_logits() const { return false; }
  // Waits for the work queued so far (device backends run asynchronously; timings need this).
  virtual void synchronize() {}

  // Vision: begin() prepares patches and runs the patch conv + ln_pre; run_layers advances up to n
  // encoder blocks; finish() runs the projector (and, when vision_hidden is set, copies the
  // encoder's output to the host).
  virtual std::unique_ptr<VisionJob> vision_begin(const std::vector<ProcessedImage>& images) = 0;
  virtual void vision_run(VisionJob& job, int n_layers) = 0;
  virtual std::shared_ptr<ImageEmbeds> vision_finish(VisionJob& job, Tensor* vision_hidden = nullptr) = 0;
  virtual int vision_layers() const = 0;
  // True when the vision calls may run on another thread while step() runs (each side on the pool
  // of its own thread: runtime/vision_lane.h), one job's calls in order.
  virtual bool concurrent_vision() const { return false; }

  // One decoder pass over all rows of `seqs`. `hidden`, when set, receives every hidden state of
  // all rows (dumps and parity checks; slow on devices).
  virtual void step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden = nullptr) = 0;

  // Named taps (model/taps.h) for the vision and step calls that follow, until set_taps(nullptr).
  // False when this executor cannot record them (the caller must then say so, not dump nothing).
  virtual bool set_taps(Taps* taps) { return taps == nullptr; }
};

// Host executors' shared step plumbing. Writes the image embedding rows of `s` (its TensorEmbeds in
// host memory) over the token embeddings of its rows, x = the sequence's first row [s.n, hidden].
void write_image_rows(const StepSeq& s, float* x, int64_t hidden);
// Appends the rows of sequence k (its first row at step row `row0`) whose logits it wants to
// `rows`, and k to out->logits_seq for each.
void want_logits_rows(const StepSeq& s, int k, int64_t row0, std::vector<int64_t>* rows, StepOutput* out);

// Whether sequence s of a step takes its token from the head's argmax on the executor (host
// executors: Ops::matmul_argmax, which may read less than the whole head) instead of a host logits
// row: a greedy device sample of one row, without a log-probability.
bool greedy_on_executor(const StepSeq& s);

// Rows `rows` of x [R, hidden] (host) as a [rows.size(), hidden] tensor: the hidden states whose
// logits a step returns.
Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows);

// KV blocks that `bytes` buys at `bytes_per_block`, at least 1, capped by max_blocks (> 0).
int64_t kv_blocks_for(int64_t bytes, int64_t bytes_per_block, int64_t max_blocks);

}  // namespace locr::model
