#include "kernels/cpu/quant_matmul.h"

#include <memory>

#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "core/error.h"

namespace locr::kernels {

namespace {

// The deleter that marks a Matrix::packed as a QuantPacked layout (quant_packed.h).
struct QuantPackedDeleter {
  void operator()(QuantPacked* p) const { delete p; }
};

// w's packed layout; null when w holds none (or another backend's copy).
const QuantPacked* packed_of(const Matrix& w) {
  if (!w.packed || std::get_deleter<QuantPackedDeleter>(w.packed) == nullptr) return nullptr;
  const auto* p = static_cast<const QuantPacked*>(w.packed.get());
  return p->dtype() == w.dtype && p->rows() == w.rows && p->cols() == w.cols ? p : nullptr;
}

}  // namespace

bool is_quantized_weight(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K; }

void prepare_quantized_weight(Matrix& w) {
  if (packed_of(w) != nullptr) return;
  std::unique_ptr<QuantPacked> p = w.dtype == DType::kQ8_0   ? pack_q8_0(w.data, w.rows, w.cols)
                                   : w.dtype == DType::kQ4_K ? pack_q4_k(w.data, w.rows, w.cols)
                                                             : pack_q6_k(w.data, w.rows, w.cols);
  w.packed = std::shared_ptr<QuantPacked>(p.release(), QuantPackedDeleter{});
}

void quantized_matmul(CpuIsa isa, const Matrix& w, const float* x, int64_t M, float* y) {
  switch (w.dtype) {
    case DType::kQ8_0:
      if (const QuantPacked* p = packed_of(w)) return gemm_q8_0(isa, *p, x, M, y);
      return gemm_q8_0(isa, w.data, w.rows, w.cols, x, M, y);  // packs on every call: prepare once at load
    case DType::kQ4_K:
      if (const QuantPacked* p = packed_of(w)) return gemm_q4_K(isa, *p, x, M, y);
      return gemm_q4_K(isa, w.data, w.rows, w.cols, x, M, y);
    case DType::kQ6_K:
      if (const QuantPacked* p = packed_of(w)) return gemm_q6_K(isa, *p, x, M, y);
      return gemm_q6_K(isa, w.data, w.rows, w.cols, x, M, y);
    default: fail(ErrorKind::kInvalidArgument, "quantized_matmul: ", dtype_name(w.dtype), " is not a quantized weight type");
  }
}

}  // namespace locr::kernels
