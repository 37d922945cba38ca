// The public members of kernels::Ops: each op's contract (dtypes, shapes, strides, the memory kind
// of its views) checked in one place for every backend, then the backend's run_* member. A broken
// contract is a bug in the caller: LOCR_CHECK names the op, the rule and the views.
#include <string>

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

}  // namespace locr::kernels
