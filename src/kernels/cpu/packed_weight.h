// The CPU backends' packed weights (Matrix::packed): a weight's rows laid out once, at prepare,
// as the GEMM microkernels read them, and read back row by row where the panels hold them exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/greedy_screen.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/ops.h"

namespace locr::kernels::cpu {

constexpr uint32_t kPackedMagic = 0x6c637075;  // "lcpu"

struct PackedWeight {
  uint32_t magic = kPackedMagic;
  BFormat fmt = BFormat::kKMajorF32;
  int nr = 0;
  int64_t n = 0, k = 0, k_pad = 0, panels = 0;
  void* data = nullptr;
  size_t bytes = 0;
  std::shared_ptr<GreedyScreen> screen;  // prepare_argmax's 8-bit copy, or null
};

// The deleter's type marks a `Matrix::packed` as ours (std::get_deleter), whatever other backends
// attach there.
struct PackedDeleter {
  void operator()(void* p) const {
    auto* pw = static_cast<PackedWeight*>(p);
    std::free(pw->data);
    delete pw;
  }
};

// Packs the rows of one or more weights of one float dtype and width, stacked in order (a stack's
// parts become one weight: StackedMatrix), into panels of nr rows: `fmt` K-major f32, K-major
// bf16, or bf16 pairs. Row n of W (contiguous in k) becomes column n % nr of panel n / nr.
std::shared_ptr<void> pack_rows(const std::vector<const Matrix*>& parts, BFormat fmt, int nr);
std::shared_ptr<void> pack_weight(const Matrix& w, BFormat fmt, int nr);

// Whether the panels hold the rows of a `dtype` weight exactly: f32 panels do (F16 and BF16 widen
// exactly), bf16 panels only of a BF16 weight (F32 and F16 rows were rounded into them).
bool panels_hold_rows_exactly(const PackedWeight& pw, DType dtype);

// Row n of the packed weight as f32: column n % nr of panel n / nr, read back along k.
void unpack_row(const PackedWeight& pw, int64_t n, float* out);

}  // namespace locr::kernels::cpu
