#include "model/vision_common.h"

#include <cmath>
#include <memory>

namespace locr::model {

Tensor backend_tensor(kernels::Ops& ops, int64_t rows, int64_t cols) {
  std::shared_ptr<void> p = ops.alloc(static_cast<size_t>(rows * cols) * sizeof(float));
  void* data = p.get();
  return Tensor(DType::kF32, {rows, cols}, data, std::move(p));
}

void attention_per_image(kernels::Ops& ops, const kernels::View& q, const kernels::View& k, const kernels::View& v,
                         const kernels::View& out, const std::vector<int64_t>& patches, int64_t n_heads,
                         int64_t head_dim) {
  int64_t off = 0;
  for (const int64_t n : patches) {
    kernels::AttentionParams ap;
    ap.n_kv = n;
    ap.n_heads = ap.n_kv_heads = n_heads;
    ap.head_dim = head_dim;
    ap.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    ap.causal = false;
    ops.attention(q.rows_range(off, n), k.rows_range(off, n), v.rows_range(off, n), out.rows_range(off, n), ap);
    off += n;
  }
}

}  // namespace locr::model
