#include "kernels/op_profile.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace locr::kernels {

namespace {

std::string dims(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

double f32_bytes(int64_t n) { return 4.0 * static_cast<double>(n); }

}  // namespace

double attention_pairs(int64_t n_q, int64_t n_kv, bool causal, int64_t q_offset) {
  if (!causal) return static_cast<double>(n_q) * static_cast<double>(n_kv);
  double pairs = 0;
  for (int64_t i = 0; i < n_q; ++i) pairs += static_cast<double>(std::clamp<int64_t>(q_offset + i + 1, 0, n_kv));
  return pairs;
}

ProfiledOps::ProfiledOps(std::unique_ptr<Ops> inner) : inner_(std::move(inner)) {
  LOCR_CHECK(inner_, "ProfiledOps without a backend");
  if (!inner_->host_memory())
    fail(ErrorKind::kUnsupported, "op profiling times host backends only; backend ", inner_->name(),
         " runs asynchronously on its device (use the vendor's profiler, e.g. nsys)");
}

std::vector<OpStat> ProfiledOps::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<OpStat> out;
  out.reserve(stats_.size());
  for (const auto& [key, s] : stats_) out.push_back(s);
  std::stable_sort(out.begin(), out.end(), [](const OpStat& a, const OpStat& b) { return a.seconds > b.seconds; });
  return out;
}

void ProfiledOps::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.clear();
}

void ProfiledOps::record(const char* op, const std::string& shape, Clock::time_point t0, double flops, double bytes) {
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mu_);
  OpStat& st = stats_[{op, shape}];
  if (st.calls == 0) {
    st.op = op;
    st.shape = shape;
  }
  ++st.calls;
  st.seconds += s;
  st.flops += flops;
  st.bytes += bytes;
}

void ProfiledOps::run_matmul(const View& x, const Matrix& w, const View& y) {
  const auto t0 = Clock::now();
  inner_->matmul(x, w, y);
  record("matmul", dims(x.rows, w.rows) + "x" + std::to_string(w.cols) + " " + dtype_name(w.dtype), t0,
         2.0 * static_cast<double>(x.rows) * static_cast<double>(w.rows) * static_cast<double>(w.cols), 0);
}

void ProfiledOps::run_matmul_argmax(const View& x, const Matrix& w, int32_t* out) {
  const auto t0 = Clock::now();
  inner_->matmul_argmax(x, w, out);
  record("matmul_argmax", dims(x.rows, w.rows) + "x" + std::to_string(w.cols) + " " + dtype_name(w.dtype), t0,
         2.0 * static_cast<double>(x.rows) * static_cast<double>(w.rows) * static_cast<double>(w.cols), 0);
}

void ProfiledOps::run_rms_norm(const View& x, const Matrix& w, float eps, const View& y) {
  const auto t0 = Clock::now();
  inner_->rms_norm(x, w, eps, y);
  std::string shape = dims(x.rows, x.cols);
  if (w.cols != x.cols) shape += " per " + std::to_string(w.cols);
  record("rms_norm", shape, t0, 0, 2 * f32_bytes(x.numel()));
}

void ProfiledOps::run_rope(const View& x, const View& cos, const View& sin) {
  const auto t0 = Clock::now();
  inner_->rope(x, cos, sin);
  record("rope", dims(x.rows, x.cols), t0, 0, 2 * f32_bytes(x.numel()) + 2 * f32_bytes(cos.numel()));
}

void ProfiledOps::run_silu_mul(const View& gate, const View& up, const View& out) {
  const auto t0 = Clock::now();
  inner_->silu_mul(gate, up, out);
  record("silu_mul", dims(gate.rows, gate.cols), t0, 0, 3 * f32_bytes(gate.numel()));
}

void ProfiledOps::run_gelu(const View& x) {
  const auto t0 = Clock::now();
  inner_->gelu(x);
  record("gelu", dims(x.rows, x.cols), t0, 0, 2 * f32_bytes(x.numel()));
}

void ProfiledOps::run_add(const View& y, const View& x) {
  const auto t0 = Clock::now();
  inner_->add(y, x);
  record("add", dims(y.rows, y.cols), t0, 0, 3 * f32_bytes(y.numel()));
}

void ProfiledOps::run_attention(const View& q, const View& k, const View& v, const View& out,
                                const AttentionParams& p) {
  const auto t0 = Clock::now();
  inner_->attention(q, k, v, out, p);
  std::string shape = dims(p.n_q, p.n_kv) + ", " + std::to_string(p.n_heads) + "/" + std::to_string(p.n_kv_heads) +
                      " heads x " + std::to_string(p.head_dim);
  if (p.causal) shape += ", causal";
  if (p.block_table) shape += ", paged";
  if (k.dtype != DType::kF32) shape += std::string(", ") + dtype_name(k.dtype) + " kv";
  record("attention", shape, t0,
         4.0 * attention_pairs(p.n_q, p.n_kv, p.causal, p.q_offset) * static_cast<double>(p.n_heads * p.head_dim), 0);
}

void ProfiledOps::run_embed(const Matrix& table, const View& ids, const View& out) {
  const auto t0 = Clock::now();
  inner_->embed(table, ids, out);
  record("embed", dims(out.rows, out.cols), t0, 0, f32_bytes(out.numel()));
}

void ProfiledOps::run_add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y) {
  const auto t0 = Clock::now();
  inner_->add_rms_norm(x, delta, w, eps, y);
  record("add_rms_norm", dims(x.rows, x.cols), t0, 0, 4 * f32_bytes(x.numel()));
}

void ProfiledOps::run_kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) {
  const auto t0 = Clock::now();
  inner_->kv_store(k, v, slots, kv);
  record("kv_store", dims(k.rows, k.cols) + " " + dtype_name(kv.dtype), t0, 0,
         2 * f32_bytes(k.numel()) + 2.0 * static_cast<double>(k.numel() * dtype_size(kv.dtype)));
}

void ProfiledOps::run_paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale,
                                      const View& out) {
  const auto t0 = Clock::now();
  inner_->paged_attention(q, kv, b, scale, out);
  // Contexts change every decode step: rows are kept apart by sequences and query rows only.
  double pairs = 0;
  for (int64_t i = 0; i < b.n_seqs; ++i) {
    const int64_t n_new = b.host_cu_q[i + 1] - b.host_cu_q[i], len = b.host_seq_lens[i];
    pairs += attention_pairs(n_new, len, true, len - n_new);
  }
  const int64_t heads = q.cols / std::max<int64_t>(kv.head_dim, 1);
  record("paged_attention",
         std::to_string(b.n_seqs) + " seqs, " + std::to_string(q.rows) + " rows, " + dtype_name(kv.dtype) + " kv", t0,
         4.0 * pairs * static_cast<double>(heads * kv.head_dim), 0);
}

void ProfiledOps::run_patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out) {
  const auto t0 = Clock::now();
  inner_->patch_merge(in, grid_h, grid_w, m, out);
  record("patch_merge", dims(in.rows, in.cols), t0, 0, f32_bytes(in.numel()) + f32_bytes(out.numel()));
}

void ProfiledOps::run_layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) {
  const auto t0 = Clock::now();
  inner_->layer_norm(x, w, b, eps, y);
  record("layer_norm", dims(x.rows, x.cols), t0, 0, 2 * f32_bytes(x.numel()));
}

void ProfiledOps::run_add_bias(const View& y, const Matrix& b) {
  const auto t0 = Clock::now();
  inner_->add_bias(y, b);
  record("add_bias", dims(y.rows, y.cols), t0, 0, 2 * f32_bytes(y.numel()));
}

void ProfiledOps::run_gelu_tanh(const View& x) {
  const auto t0 = Clock::now();
  inner_->gelu_tanh(x);
  record("gelu_tanh", dims(x.rows, x.cols), t0, 0, 2 * f32_bytes(x.numel()));
}

void ProfiledOps::run_sigmoid_mul(const View& gate, const View& x, const View& out) {
  const auto t0 = Clock::now();
  inner_->sigmoid_mul(gate, x, out);
  record("sigmoid_mul", dims(gate.rows, gate.cols), t0, 0, 3 * f32_bytes(gate.numel()));
}

void ProfiledOps::run_conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b,
                                  const View& out) {
  const auto t0 = Clock::now();
  inner_->conv1d_silu(x, w, state, b, out);
  // Activations in and out, and each sequence's state slot read and written.
  record("conv1d_silu",
         std::to_string(b.n_seqs) + " seqs, " + dims(x.rows, x.cols) + ", kernel " + std::to_string(w.cols), t0, 0,
         2 * f32_bytes(x.numel()) + 2 * f32_bytes(b.n_seqs * state.cols));
}

void ProfiledOps::run_gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                                      const Matrix& a_log, const Matrix& dt_bias, const View& state,
                                      const StateBatch& b, const DeltaNetParams& p, const View& out) {
  const auto t0 = Clock::now();
  inner_->gated_delta_net(q, k, v, a, beta_in, a_log, dt_bias, state, b, p, out);
  // Per row and value head, over its [k_dim, v_dim] state: decay (1), S^T k (2), the rank-1 update
  // (2) and S^T q (2) flops an element.
  record("gated_delta_net",
         std::to_string(b.n_seqs) + " seqs, " + std::to_string(q.rows) + " rows, " + std::to_string(p.n_k_heads) +
             "/" + std::to_string(p.n_v_heads) + " heads x " + std::to_string(p.k_dim) + "x" + std::to_string(p.v_dim),
         t0, 7.0 * static_cast<double>(q.rows) * static_cast<double>(p.state_floats()), 0);
}

}  // namespace locr::kernels
