// The public members of kernels::Ops: each op's contract (dtypes, shapes, strides, the memory kind
// of its views) checked in one place for every backend, then the backend's run_* member. A broken
// contract is a bug in the caller: LOCR_CHECK names the op, the rule and the views.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/ops.h"

namespace locr::kernels {

namespace {

// A view an op of `ops` may touch: this backend's memory, the dtype wanted, a sane shape.
void check_view(const Ops& ops, const char* op, const char* arg, const View& v, DType dtype) {
  LOCR_CHECK(v.memory == ops.memory(), "", ops.name(), ": ", op, "(", arg, "): ", v.describe(), " is not in ",
             ops.host_memory() ? "host" : "device", " memory");
  LOCR_CHECK(v.dtype == dtype, "", ops.name(), ": ", op, "(", arg, "): ", v.describe(), " is not ", dtype_name(dtype));
  LOCR_CHECK(v.rows >= 0 && v.cols >= 0 && v.stride >= v.cols, "", ops.name(), ": ", op, "(", arg, "): bad view ",
             v.describe());
  LOCR_CHECK(v.data != nullptr || v.rows == 0 || v.cols == 0, "", ops.name(), ": ", op, "(", arg, "): null data");
}

void check_contiguous(const Ops& ops, const char* op, const char* arg, const View& v) {
  LOCR_CHECK(v.contiguous(), "", ops.name(), ": ", op, "(", arg, ") needs a contiguous view, got ", v.describe());
}

void check_shape(const Ops& ops, const char* op, const char* arg, const View& v, int64_t rows, int64_t cols) {
  LOCR_CHECK(v.rows == rows && v.cols == cols, "", ops.name(), ": ", op, "(", arg, "): ", v.describe(), ", expected [",
             rows, ", ", cols, "]");
}

// Two views of one op: the same elements, or none in common.
bool same_or_disjoint(const View& a, const View& b) {
  if (a.data == b.data) return a.stride == b.stride && a.cols == b.cols;
  const char* a0 = static_cast<const char*>(a.data);
  const char* b0 = static_cast<const char*>(b.data);
  const char* a1 = a0 + static_cast<size_t>(a.span()) * dtype_size(a.dtype);
  const char* b1 = b0 + static_cast<size_t>(b.span()) * dtype_size(b.dtype);
  if (a1 <= b0 || b1 <= a0) return true;
  // Interleaved column ranges of one buffer (k and v of a stacked qkv row) do not overlap either.
  if (a.stride != b.stride) return false;
  const int64_t off = (b0 - a0) / static_cast<int64_t>(dtype_size(a.dtype));
  const int64_t col = ((off % a.stride) + a.stride) % a.stride;
  return col >= a.cols && col + b.cols <= a.stride;
}


// A weight vector of n elements (a norm's weight or bias, a per-head parameter) in a plain dtype.
void check_vector(const Ops& ops, const char* op, const char* arg, const Matrix& m, int64_t n) {
  LOCR_CHECK(m.dtype == DType::kF32 || m.dtype == DType::kBF16 || m.dtype == DType::kF16, "", ops.name(), ": ", op,
             "(", arg, "): a weight vector of ", dtype_name(m.dtype), " (F32, BF16 or F16 only)");
  LOCR_CHECK(m.rows * m.cols == n && (m.rows == 1 || m.cols == 1), "", ops.name(), ": ", op, "(", arg,
             "): a weight of shape [", m.rows, ", ", m.cols, "], expected ", n, " elements");
  LOCR_CHECK(m.data != nullptr || n == 0, "", ops.name(), ": ", op, "(", arg, "): null weight data");
}

// Two views of one op with no element in common (an output and an input it may not alias).
bool disjoint(const View& a, const View& b) {
  if (a.numel() == 0 || b.numel() == 0) return true;
  return same_or_disjoint(a, b) && a.data != b.data;
}

// The step arrays of a StateBatch over `rows` activation rows and a state pool of `n_slots` slots:
// host copies present (the device arrays too on a device backend), cu_q from 0 to rows and
// non-decreasing, max_q covering every run, and each sequence with rows in its own slot of the pool
// (sequences without rows are ignored: their slot and fresh flag are not read).
void check_state_batch(const Ops& ops, const char* op, const StateBatch& b, int64_t rows, int64_t n_slots) {
  LOCR_CHECK(b.n_seqs >= 0, "", ops.name(), ": ", op, " of ", b.n_seqs, " sequences");
  LOCR_CHECK(b.host_cu_q && (b.n_seqs == 0 || (b.host_slots && b.host_fresh)), "", ops.name(), ": ", op,
             " without host step arrays (StateBatch host_cu_q / host_slots / host_fresh)");
  LOCR_CHECK(ops.host_memory() || b.n_seqs == 0 || (b.cu_q && b.slots && b.fresh), "", ops.name(), ": ", op,
             " without device step arrays (StateBatch cu_q / slots / fresh)");
  LOCR_CHECK(b.host_cu_q[0] == 0 && b.host_cu_q[b.n_seqs] == rows, "", ops.name(), ": ", op, " of ", rows,
             " rows with cu_q running from ", b.host_cu_q[0], " to ", b.host_cu_q[b.n_seqs]);
  std::vector<int32_t> used;
  for (int64_t i = 0; i < b.n_seqs; ++i) {
    const int64_t n = static_cast<int64_t>(b.host_cu_q[i + 1]) - b.host_cu_q[i];
    LOCR_CHECK(n >= 0 && n <= b.max_q, "", ops.name(), ": ", op, ": sequence ", i, " has ", n,
               " rows (cu_q decreasing, or more than max_q = ", b.max_q, ")");
    if (n == 0) continue;
    LOCR_CHECK(b.host_slots[i] >= 0 && b.host_slots[i] < n_slots, "", ops.name(), ": ", op, ": sequence ", i,
               " in state slot ", b.host_slots[i], " of a pool of ", n_slots);
    used.push_back(b.host_slots[i]);
  }
  std::sort(used.begin(), used.end());
  LOCR_CHECK(std::adjacent_find(used.begin(), used.end()) == used.end(), "", ops.name(), ": ", op,
             ": two sequences share a state slot");
}

}  // namespace

int64_t StackedMatrix::rows() const {
  int64_t n = 0;
  for (const Matrix& p : parts) n += p.rows;
  return n;
}

int64_t StackedMatrix::cols() const { return parts.empty() ? 0 : parts.front().cols; }

void Ops::prepare_stack(StackedMatrix& w) {
  for (Matrix& p : w.parts) prepare(p);
}

void Ops::matmul(const View& x, const Matrix& w, const View& y) {
  check_view(*this, "matmul", "x", x, DType::kF32);
  check_view(*this, "matmul", "y", y, DType::kF32);
  LOCR_CHECK(w.rows > 0 && w.cols > 0, "", name(), ": matmul with an empty weight");
  LOCR_CHECK(x.cols == w.cols && y.cols == w.rows && y.rows == x.rows, "", name(), ": matmul x ", x.describe(), " . W[",
             w.rows, ", ", w.cols, "]^T -> y ", y.describe());
  LOCR_CHECK(same_or_disjoint(x, y) && x.data != y.data, "", name(), ": matmul writes y over its input x");
  if (x.rows == 0) return;
  run_matmul(x, w, y);
}

void Ops::matmul_argmax(const View& x, const Matrix& w, int32_t* out) {
  check_view(*this, "matmul_argmax", "x", x, DType::kF32);
  LOCR_CHECK(w.rows > 0 && w.cols > 0, "", name(), ": matmul_argmax with an empty weight");
  LOCR_CHECK(x.cols == w.cols, "", name(), ": matmul_argmax x ", x.describe(), " . W[", w.rows, ", ", w.cols, "]^T");
  LOCR_CHECK(w.rows <= INT32_MAX && (out != nullptr || x.rows == 0), "", name(), ": matmul_argmax output");
  if (x.rows == 0) return;
  run_matmul_argmax(x, w, out);
}

void Ops::matmul(const View& x, const StackedMatrix& w, const View& y) {
  LOCR_CHECK(!w.parts.empty(), "", name(), ": matmul over an empty stack");
  LOCR_CHECK(y.cols == w.rows(), "", name(), ": stacked matmul into ", y.describe(), " of ", w.rows(), " columns");
  if (w.fused.rows > 0) {
    LOCR_CHECK(w.fused.rows == w.rows() && w.fused.cols == w.cols(), "", name(), ": fused stack of shape [", w.fused.rows,
               ", ", w.fused.cols, "], parts [", w.rows(), ", ", w.cols(), "]");
    matmul(x, w.fused, y);
    return;
  }
  int64_t c0 = 0;
  for (const Matrix& p : w.parts) {
    matmul(x, p, y.cols_range(c0, p.rows));
    c0 += p.rows;
  }
}

void Ops::rms_norm(const View& x, const Matrix& w, float eps, const View& y) {
  check_view(*this, "rms_norm", "x", x, DType::kF32);
  check_view(*this, "rms_norm", "y", y, DType::kF32);
  const int64_t dim = w.rows * w.cols;
  LOCR_CHECK(dim > 0 && x.cols % dim == 0, "", name(), ": rms_norm of ", x.describe(), " in groups of ", dim);
  check_shape(*this, "rms_norm", "y", y, x.rows, x.cols);
  LOCR_CHECK(same_or_disjoint(x, y), "", name(), ": rms_norm x and y overlap without being the same view");
  if (x.rows == 0) return;
  run_rms_norm(x, w, eps, y);
}

void Ops::rope(const View& x, const View& cos, const View& sin) {
  check_view(*this, "rope", "x", x, DType::kF32);
  check_view(*this, "rope", "cos", cos, DType::kF32);
  check_view(*this, "rope", "sin", sin, DType::kF32);
  check_contiguous(*this, "rope", "cos", cos);
  check_contiguous(*this, "rope", "sin", sin);
  LOCR_CHECK(cos.cols > 0 && x.cols % (2 * cos.cols) == 0 && cos.rows == x.rows, "", name(), ": rope of ", x.describe(),
             " with tables ", cos.describe());
  check_shape(*this, "rope", "sin", sin, cos.rows, cos.cols);
  if (x.rows == 0) return;
  run_rope(x, cos, sin);
}

void Ops::silu_mul(const View& gate, const View& up, const View& out) {
  check_view(*this, "silu_mul", "gate", gate, DType::kF32);
  check_view(*this, "silu_mul", "up", up, DType::kF32);
  check_view(*this, "silu_mul", "out", out, DType::kF32);
  check_shape(*this, "silu_mul", "up", up, gate.rows, gate.cols);
  check_shape(*this, "silu_mul", "out", out, gate.rows, gate.cols);
  LOCR_CHECK(same_or_disjoint(gate, out) && same_or_disjoint(up, out) && up.data != out.data, "", name(),
             ": silu_mul out overlaps up, or gate without being it");
  if (gate.rows == 0) return;
  run_silu_mul(gate, up, out);
}

void Ops::gelu(const View& x) {
  check_view(*this, "gelu", "x", x, DType::kF32);
  check_contiguous(*this, "gelu", "x", x);
  if (x.numel() == 0) return;
  run_gelu(x);
}

void Ops::add(const View& y, const View& x) {
  check_view(*this, "add", "y", y, DType::kF32);
  check_view(*this, "add", "x", x, DType::kF32);
  check_contiguous(*this, "add", "y", y);
  check_contiguous(*this, "add", "x", x);
  check_shape(*this, "add", "x", x, y.rows, y.cols);
  if (y.numel() == 0) return;
  run_add(y, x);
}

void Ops::attention(const View& q, const View& k, const View& v, const View& out, const AttentionParams& p) {
  check_view(*this, "attention", "q", q, DType::kF32);
  check_view(*this, "attention", "out", out, DType::kF32);
  check_view(*this, "attention", "k", k, k.dtype);
  check_view(*this, "attention", "v", v, k.dtype);
  LOCR_CHECK(k.dtype == DType::kF32 || k.dtype == DType::kBF16 || k.dtype == DType::kF8E4M3, "", name(),
             ": attention over keys of ", dtype_name(k.dtype));
  LOCR_CHECK(k.dtype != DType::kF8E4M3 || (p.k_scale && p.v_scale), "", name(), ": FP8 attention without scales");
  LOCR_CHECK(p.n_heads > 0 && p.n_kv_heads > 0 && p.n_heads % p.n_kv_heads == 0 && p.head_dim > 0, "", name(),
             ": attention heads ", p.n_heads, " / kv heads ", p.n_kv_heads, " of ", p.head_dim);
  check_shape(*this, "attention", "out", out, q.rows, p.n_heads * p.head_dim);
  LOCR_CHECK(q.cols == p.n_heads * p.head_dim && k.cols >= p.n_kv_heads * p.head_dim, "", name(), ": attention q ",
             q.describe(), ", k ", k.describe(), " for ", p.n_heads, " / ", p.n_kv_heads, " heads of ", p.head_dim);
  check_shape(*this, "attention", "v", v, k.rows, k.cols);
  LOCR_CHECK(k.stride == v.stride, "", name(), ": attention k and v with row strides ", k.stride, " / ", v.stride);
  LOCR_CHECK(p.block_table != nullptr || k.rows >= p.n_kv, "", name(), ": attention over ", p.n_kv, " keys in ",
             k.describe());
  LOCR_CHECK(p.block_table == nullptr || p.block_size > 0, "", name(), ": paged attention without a block size");
  if (q.rows == 0) return;
  AttentionParams a = p;
  a.n_q = q.rows;
  a.q_stride = q.stride;
  a.kv_stride = k.stride;
  a.out_stride = out.stride;
  a.kv_dtype = k.dtype;
  run_attention(q, k, v, out, a);
}

void Ops::embed(const Matrix& table, const View& ids, const View& out) {
  check_view(*this, "embed", "ids", ids, DType::kI32);
  check_view(*this, "embed", "out", out, DType::kF32);
  LOCR_CHECK(ids.rows == 1 || ids.cols == 1 || ids.numel() == 0, "", name(), ": embed ids ", ids.describe(),
             " are not a vector");
  check_contiguous(*this, "embed", "ids", ids);
  check_shape(*this, "embed", "out", out, ids.numel(), table.cols);
  if (ids.numel() == 0) return;
  run_embed(table, ids, out);
}

void Ops::add_rms_norm(const View& x, const View& delta, const Matrix& w, float eps, const View& y) {
  check_view(*this, "add_rms_norm", "x", x, DType::kF32);
  check_view(*this, "add_rms_norm", "delta", delta, DType::kF32);
  check_view(*this, "add_rms_norm", "y", y, DType::kF32);
  for (const View* v : {&x, &delta, &y}) check_contiguous(*this, "add_rms_norm", "x/delta/y", *v);
  LOCR_CHECK(w.rows * w.cols == x.cols, "", name(), ": add_rms_norm of ", x.describe(), " with a weight of ",
             w.rows * w.cols);
  check_shape(*this, "add_rms_norm", "delta", delta, x.rows, x.cols);
  check_shape(*this, "add_rms_norm", "y", y, x.rows, x.cols);
  if (x.rows == 0) return;
  run_add_rms_norm(x, delta, w, eps, y);
}

void Ops::kv_store(const View& k, const View& v, const View& slots, const KvLayer& kv) {
  check_view(*this, "kv_store", "k", k, DType::kF32);
  check_view(*this, "kv_store", "v", v, DType::kF32);
  check_view(*this, "kv_store", "slots", slots, DType::kI32);
  check_contiguous(*this, "kv_store", "slots", slots);
  check_shape(*this, "kv_store", "k", k, k.rows, kv.width());
  check_shape(*this, "kv_store", "v", v, k.rows, kv.width());
  LOCR_CHECK(slots.numel() == k.rows, "", name(), ": kv_store of ", k.rows, " rows into ", slots.numel(), " slots");
  LOCR_CHECK(kv.dtype == DType::kF32 || kv.dtype == DType::kBF16 || kv.dtype == DType::kF8E4M3, "", name(),
             ": KV cache of ", dtype_name(kv.dtype));
  LOCR_CHECK(kv.dtype != DType::kF8E4M3 || (kv.k_scale && kv.v_scale), "", name(), ": FP8 KV cache without scales");
  LOCR_CHECK(kv.rows > 0 && kv.k && kv.v, "", name(), ": kv_store into an empty KV layer");
  if (k.rows == 0) return;
  run_kv_store(k, v, slots, kv);
}

void Ops::paged_attention(const View& q, const KvLayer& kv, const PagedBatch& b, float scale, const View& out) {
  check_view(*this, "paged_attention", "q", q, DType::kF32);
  check_view(*this, "paged_attention", "out", out, DType::kF32);
  LOCR_CHECK(b.host_cu_q && b.host_seq_lens && b.host_tables, "", name(), ": paged attention without host step arrays");
  LOCR_CHECK(kv.head_dim > 0 && q.cols % kv.head_dim == 0 && (q.cols / kv.head_dim) % kv.n_kv_heads == 0, "", name(),
             ": paged attention of ", q.describe(), " over ", kv.n_kv_heads, " kv heads of ", kv.head_dim);
  LOCR_CHECK(kv.rows > 0 && kv.k && kv.v, "", name(), ": paged attention over an empty KV layer");
  check_shape(*this, "paged_attention", "q", q, b.host_cu_q[b.n_seqs], q.cols);
  check_shape(*this, "paged_attention", "out", out, q.rows, q.cols);
  if (q.rows == 0) return;
  run_paged_attention(q, kv, b, scale, out);
}

void Ops::patch_merge(const View& in, int grid_h, int grid_w, int m, const View& out) {
  check_view(*this, "patch_merge", "in", in, DType::kF32);
  check_view(*this, "patch_merge", "out", out, DType::kF32);
  check_contiguous(*this, "patch_merge", "in", in);
  check_contiguous(*this, "patch_merge", "out", out);
  LOCR_CHECK(m > 0 && grid_h > 0 && grid_w > 0, "", name(), ": patch_merge of a ", grid_h, "x", grid_w, " grid by ",
             m);  // an odd last row / column of patches is dropped, as the model's merge drops it
  check_shape(*this, "patch_merge", "in", in, static_cast<int64_t>(grid_h) * grid_w, in.cols);
  check_shape(*this, "patch_merge", "out", out, static_cast<int64_t>(grid_h / m) * (grid_w / m),
              in.cols * m * m);
  run_patch_merge(in, grid_h, grid_w, m, out);
}


void Ops::layer_norm(const View& x, const Matrix& w, const Matrix& b, float eps, const View& y) {
  check_view(*this, "layer_norm", "x", x, DType::kF32);
  check_view(*this, "layer_norm", "y", y, DType::kF32);
  LOCR_CHECK(x.cols > 0, "", name(), ": layer_norm of ", x.describe());
  check_vector(*this, "layer_norm", "w", w, x.cols);
  check_vector(*this, "layer_norm", "b", b, x.cols);
  check_shape(*this, "layer_norm", "y", y, x.rows, x.cols);
  LOCR_CHECK(same_or_disjoint(x, y), "", name(), ": layer_norm x and y overlap without being the same view");
  LOCR_CHECK(eps >= 0.0f, "", name(), ": layer_norm with eps ", eps);
  if (x.rows == 0) return;
  run_layer_norm(x, w, b, eps, y);
}

void Ops::add_bias(const View& y, const Matrix& b) {
  check_view(*this, "add_bias", "y", y, DType::kF32);
  check_vector(*this, "add_bias", "b", b, y.cols);
  if (y.numel() == 0) return;
  run_add_bias(y, b);
}

void Ops::gelu_tanh(const View& x) {
  check_view(*this, "gelu_tanh", "x", x, DType::kF32);
  check_contiguous(*this, "gelu_tanh", "x", x);
  if (x.numel() == 0) return;
  run_gelu_tanh(x);
}

void Ops::sigmoid_mul(const View& gate, const View& x, const View& out) {
  check_view(*this, "sigmoid_mul", "gate", gate, DType::kF32);
  check_view(*this, "sigmoid_mul", "x", x, DType::kF32);
  check_view(*this, "sigmoid_mul", "out", out, DType::kF32);
  check_shape(*this, "sigmoid_mul", "x", x, gate.rows, gate.cols);
  check_shape(*this, "sigmoid_mul", "out", out, gate.rows, gate.cols);
  LOCR_CHECK(same_or_disjoint(x, out) && disjoint(gate, out), "", name(),
             ": sigmoid_mul out overlaps gate, or x without being it");
  if (gate.numel() == 0) return;
  run_sigmoid_mul(gate, x, out);
}

void Ops::conv1d_silu(const View& x, const Matrix& w, const View& state, const StateBatch& b, const View& out) {
  check_view(*this, "conv1d_silu", "x", x, DType::kF32);
  check_view(*this, "conv1d_silu", "out", out, DType::kF32);
  check_view(*this, "conv1d_silu", "state", state, DType::kF32);
  LOCR_CHECK(w.dtype == DType::kF32 || w.dtype == DType::kBF16 || w.dtype == DType::kF16, "", name(),
             ": conv1d_silu with a weight of ", dtype_name(w.dtype), " (F32, BF16 or F16 only)");
  LOCR_CHECK(w.rows > 0 && w.cols >= 2 && w.data != nullptr, "", name(), ": conv1d_silu with a weight of shape [",
             w.rows, ", ", w.cols, "] (channels x kernel, kernel >= 2)");
  const int64_t C = w.rows, K = w.cols;
  check_shape(*this, "conv1d_silu", "x", x, x.rows, C);
  check_shape(*this, "conv1d_silu", "out", out, x.rows, C);
  check_contiguous(*this, "conv1d_silu", "state", state);
  LOCR_CHECK(state.rows > 0 && state.cols == (K - 1) * C, "", name(), ": conv1d_silu state ", state.describe(),
             ", expected [n_slots, ", (K - 1) * C, "]");
  LOCR_CHECK(disjoint(x, out) && disjoint(state, x) && disjoint(state, out), "", name(),
             ": conv1d_silu x, out and state overlap");
  check_state_batch(*this, "conv1d_silu", b, x.rows, state.rows);
  if (x.rows == 0) return;
  run_conv1d_silu(x, w, state, b, out);
}

void Ops::gated_delta_net(const View& q, const View& k, const View& v, const View& a, const View& beta_in,
                          const Matrix& a_log, const Matrix& dt_bias, const View& state, const StateBatch& b,
                          const DeltaNetParams& p, const View& out) {
  const char* op = "gated_delta_net";
  LOCR_CHECK(p.n_k_heads > 0 && p.n_v_heads > 0 && p.n_v_heads % p.n_k_heads == 0 && p.k_dim > 0 && p.v_dim > 0, "",
             name(), ": gated_delta_net of ", p.n_k_heads, " key heads of ", p.k_dim, ", ", p.n_v_heads,
             " value heads of ", p.v_dim, " (value heads a multiple of key heads)");
  LOCR_CHECK(p.l2_eps >= 0.0f, "", name(), ": gated_delta_net with l2_eps ", p.l2_eps);
  check_view(*this, op, "q", q, DType::kF32);
  check_view(*this, op, "k", k, DType::kF32);
  check_view(*this, op, "v", v, DType::kF32);
  check_view(*this, op, "a", a, DType::kF32);
  check_view(*this, op, "beta_in", beta_in, DType::kF32);
  check_view(*this, op, "state", state, DType::kF32);
  check_view(*this, op, "out", out, DType::kF32);
  const int64_t rows = q.rows;
  check_shape(*this, op, "q", q, rows, p.n_k_heads * p.k_dim);
  check_shape(*this, op, "k", k, rows, p.n_k_heads * p.k_dim);
  check_shape(*this, op, "v", v, rows, p.n_v_heads * p.v_dim);
  check_shape(*this, op, "a", a, rows, p.n_v_heads);
  check_shape(*this, op, "beta_in", beta_in, rows, p.n_v_heads);
  check_shape(*this, op, "out", out, rows, p.n_v_heads * p.v_dim);
  check_vector(*this, op, "a_log", a_log, p.n_v_heads);
  check_vector(*this, op, "dt_bias", dt_bias, p.n_v_heads);
  check_contiguous(*this, op, "state", state);
  LOCR_CHECK(state.rows > 0 && state.cols == p.state_floats(), "", name(), ": gated_delta_net state ",
             state.describe(), ", expected [n_slots, ", p.state_floats(), "]");
  for (const View* in : {&q, &k, &v, &a, &beta_in})
    LOCR_CHECK(disjoint(*in, out) && disjoint(*in, state), "", name(),
               ": gated_delta_net out or state overlaps an input ", in->describe());
  LOCR_CHECK(disjoint(out, state), "", name(), ": gated_delta_net out overlaps the state");
  check_state_batch(*this, op, b, rows, state.rows);
  if (rows == 0) return;
  run_gated_delta_net(q, k, v, a, beta_in, a_log, dt_bias, state, b, p, out);
}

}  // namespace locr::kernels
