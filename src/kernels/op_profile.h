// ProfiledOps: a backend that times every op of another (host) backend and forwards it unchanged,
// for `locr perf --profile-ops`: where the time of a stage goes, op by op and shape by shape, with
// each op's arithmetic (matmul, attention) or memory traffic (element-wise ops) so that a row can
// be set against the machine's roofline (bench_peak). The wrapped backend computes every number
// exactly as it would alone: the decorator only reads clocks around the calls.
//
// Host backends only: a device backend queues work asynchronously and its executor reaches the
// backend itself (kernels/cuda), so it would be timed at launch, not at completion.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace locr::kernels {

// One op at one shape, summed over its calls.
struct OpStat {
  std::string op;     // "matmul", "attention", "rms_norm", ...
  std::string shape;  // e.g. "8580x3072x1024 bf16" (M x N x K, weight dtype) for a matmul
  int64_t calls = 0;
  double seconds = 0;
  double flops = 0;  // multiply-adds count 2; 0 for ops measured by bytes
  double bytes = 0;  // activation bytes read + written (element-wise ops), else 0
};

class ProfiledOps final : public Ops {
 public:
  explicit ProfiledOps(std::unique_ptr<Ops> inner);

  const char* name() const override { return inner_->name(); }
  void prepare(Matrix& w) override { inner_->prepare(w); }
  void prepare_stack(StackedMatrix& w) override { inner_->prepare_stack(w); }
  void prepare_argmax(Matrix& w) override { inner_->prepare_argmax(w); }
  size_t argmax_extra_bytes(const Matrix& w) const override { return inner_->argmax_extra_bytes(w); }
  DType kv_dtype() const override { return inner_->kv_dtype(); }
  bool host_memory() const override { return true; }
  std::shared_ptr<void> alloc(size_t bytes) override { return inner_->alloc(bytes); }
  void to_host(void* host_dst, const void* src, size_t bytes) override { inner_->to_host(host_dst, src, bytes); }
  void from_host(void* dst, const void* host_src, size_t bytes) override { inner_->from_host(dst, host_src, bytes); }
  void synchronize() override { inner_->synchronize(); }
  uint64_t scratch_generation() const override { return inner_->scratch_generation(); }

  // The ops timed since the last reset, longest total first.
  std::vector<OpStat> stats() const;
  void reset();

 private:
  using Clock = std::chrono::steady_clock;
  void record(const char* op, const std::string& shape, Clock::time_point t0, double flops, double bytes);

  void run_matmul(const View& x, const Matrix& w, const View& y) override;
  void run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) override;
  void run_rope(const View& x, const View& cos, const View& sin) override;
  void run_silu_mul(const View& gate, const View& up, const View& out) override;
  void run_gelu(const View& x) override;
  void run_add(const View& y, const View& x) override;
  void run_matmul_argmax(const View& x, const Matrix& w, int32_t* out) override;
  void run_attention(const View& q, const View& k, const View& v, const View& out, const AttentionParams& p) override;
  void run_embed(const Matrix& table, const View& ids, const View& out) override;
  void run_add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y) override;
  void run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) override;
  void run_paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale,
                           const View& out) override;
  void run_patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out) override;
  void run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) override;
  void run_add_bias(const View& y, const Matrix& b) override;
  void run_gelu_tanh(const View& x) override;
  void run_sigmoid_mul(const View& gate, const View& x, const View& out) override;
  void run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b,
                       const View& out) override;
  void run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                           const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                           const DeltaNetParams& p, const View& out) override;

  std::unique_ptr<Ops> inner_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, OpStat> stats_;
};

// Query-key pairs an attention call scores: n_q * n_kv, or the causal triangle (query i sees keys
// j <= q_offset + i, at most n_kv of them). Its FLOPs are 4 * pairs * n_heads * head_dim.
double attention_pairs(int64_t n_q, int64_t n_kv, bool causal, int64_t q_offset);

}  // namespace locr::kernels
