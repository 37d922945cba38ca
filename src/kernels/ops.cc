#include "kernels/ops.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/cpu/q4_k_block.h"
#include "kernels/cpu/q6_k_block.h"
#include "kernels/ref/ref_ops.h"
#ifdef LOCR_HAVE_CUDA
#include "kernels/cuda/cuda_ops.h"
#endif

namespace locr::kernels {

Matrix Matrix::from_tensor(const Tensor& t) {
  Matrix m;
  m.dtype = t.dtype();
  LOCR_CHECK(t.ndim() == 1 || t.ndim() == 2, "Matrix from tensor of shape ", t.shape_str());
  m.rows = t.ndim() == 1 ? 1 : t.dim(0);
  m.cols = t.ndim() == 1 ? t.dim(0) : t.dim(1);
  m.data = t.raw();
  // Tensor keeps its holder private; copy the tensor into the holder to keep the storage alive.
  m.holder = std::make_shared<Tensor>(t);
  return m;
}

float Matrix::at(int64_t r, int64_t c) const {
  const int64_t i = r * cols + c;
  switch (dtype) {
    case DType::kF32:
      return static_cast<const float*>(data)[i];
    case DType::kBF16:
      return bf16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kF16:
      return f16_to_f32(static_cast<const uint16_t*>(data)[i]);
    case DType::kQ8_0: {
      const auto* block = static_cast<const uint8_t*>(data) + r * dtype_row_bytes(dtype, cols) + c / 32 * 34;
      uint16_t d;
      std::memcpy(&d, block, 2);
      return f16_to_f32(d) * static_cast<float>(static_cast<int8_t>(block[2 + c % 32]));
    }
    case DType::kQ4_K:
      return cpu::q4_k_value(static_cast<const uint8_t*>(data) + r * dtype_row_bytes(dtype, cols) + c / 256 * 144,
                             static_cast<int>(c % 256));
    case DType::kQ6_K:
      return cpu::q6_k_value(static_cast<const uint8_t*>(data) + r * dtype_row_bytes(dtype, cols) + c / 256 * 210,
                             static_cast<int>(c % 256));
    default:
      LOCR_CHECK(false, "unsupported weight dtype ", dtype_name(dtype));
  }
  return 0;
}

std::unique_ptr<Ops> make_ops(const std::string& backend) {
  if (backend == "ref") return make_ref_ops();
  if (backend == "cpu-f32") return make_cpu_ops(CpuPrecision::kF32);
  if (backend == "cpu-bf16" || backend == "cpu") return make_cpu_ops(CpuPrecision::kBF16);
#ifdef LOCR_HAVE_CUDA
  if (backend == "cuda") return cuda::make_cuda_ops();
#else
  if (backend == "cuda") fail(ErrorKind::kUnsupported, "backend cuda: this locr was built without CUDA; rebuild with -DLOCR_CUDA=ON");
#endif
  fail(ErrorKind::kInvalidArgument, "unknown kernel backend '", backend,
       "' (available: ref, cpu, cpu-f32, cpu-bf16, cuda)");
}

}  // namespace locr::kernels
