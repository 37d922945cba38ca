#include "kernels/cpu/quant_matmul.h"

#include <memory>

#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"
#include "core/error.h"

namespace locr::kernels {

namespace {

// The deleter that marks a Matrix::packed as the Q8_0 layout of quant_q8_0.h.
struct Q8PackedDeleter {
  void operator()(Q8_0Packed* p) const { delete p; }
};

// w's packed Q8_0 layout; null when w holds none (or another backend's copy).
const Q8_0Packed* packed_q8_0(const Matrix& w) {
  if (w.dtype != DType::kQ8_0 || !w.packed || std::get_deleter<Q8PackedDeleter>(w.packed) == nullptr) return nullptr;
  const auto* p = static_cast<const Q8_0Packed*>(w.packed.get());
  return p->rows() == w.rows && p->cols() == w.cols ? p : nullptr;
}

}  // namespace

bool is_quantized_weight(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_K || t == DType::kQ6_K; }

void prepare_quantized_weight(Matrix& w) {
  if (w.dtype == DType::kQ8_0 && packed_q8_0(w) == nullptr)
    w.packed = std::shared_ptr<Q8_0Packed>(pack_q8_0(w.data, w.rows, w.cols).release(), Q8PackedDeleter{});
}

void quantized_matmul(CpuIsa isa, const Matrix& w, const float* x, int64_t M, float* y) {
  switch (w.dtype) {
    case DType::kQ8_0:
      if (const Q8_0Packed* p = packed_q8_0(w)) return gemm_q8_0(isa, *p, x, M, y);
      return gemm_q8_0(isa, w.data, w.rows, w.cols, x, M, y);  // packs on every call: prepare once at load
    case DType::kQ4_K: return gemm_q4_K(isa, w.data, w.rows, w.cols, x, M, y);
    case DType::kQ6_K: return gemm_q6_K(isa, w.data, w.rows, w.cols, x, M, y);
    default: fail(ErrorKind::kInvalidArgument, "quantized_matmul: ", dtype_name(w.dtype), " is not a quantized weight type");
  }
}

}  // namespace locr::kernels
