#include "kernels/cpu/packed_weight.h"

#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/cpu/cpu_driver.h"

namespace locr::kernels::cpu {

std::shared_ptr<void> pack_rows(const std::vector<const Matrix*>& parts, BFormat fmt, int nr) {
  LOCR_CHECK(!parts.empty());
  const DType dtype = parts.front()->dtype;
  int64_t rows = 0;
  for (const Matrix* m : parts) {
    LOCR_CHECK(m->dtype == DType::kF32 || m->dtype == DType::kBF16 || m->dtype == DType::kF16,
               "matmul weight dtype ", dtype_name(m->dtype), " is not supported");
    LOCR_CHECK(m->rows > 0 && m->cols > 0 && m->data != nullptr, "matmul with an empty or unloaded weight");
    LOCR_CHECK(m->dtype == dtype && m->cols == parts.front()->cols, "stacked weights of different dtypes or widths");
    rows += m->rows;
  }
  // Row n of the stack: its part's row.
  std::vector<int64_t> first(parts.size(), 0);
  for (size_t i = 1; i < parts.size(); ++i) first[i] = first[i - 1] + parts[i - 1]->rows;
  const size_t esize = dtype_size(dtype);
  auto row_at = [&](int64_t n) {
    size_t i = parts.size() - 1;
    while (first[i] > n) --i;
    return static_cast<const char*>(parts[i]->data) + static_cast<size_t>((n - first[i]) * parts[i]->cols) * esize;
  };
  Matrix w;  // the stack's shape and dtype
  w.dtype = dtype;
  w.rows = rows;
  w.cols = parts.front()->cols;
  auto* pw = new PackedWeight;
  std::shared_ptr<void> holder(pw, PackedDeleter{});
  pw->fmt = fmt;
  pw->nr = nr;
  pw->n = w.rows;
  pw->k = w.cols;
  pw->k_pad = (w.cols + 1) / 2 * 2;
  pw->panels = (w.rows + nr - 1) / nr;
  const size_t elem = fmt == BFormat::kKMajorF32 ? 4 : 2;
  pw->bytes = static_cast<size_t>(pw->panels) * pw->k_pad * nr * elem;
  pw->data = aligned_bytes(pw->bytes);
  const int64_t N = pw->n, K = pw->k, KP = pw->k_pad;
  // Row n of W (contiguous in k) becomes column c of its panel: a transpose with stride nr (or
  // 2 nr for pairs). Typed loops, one pass over the source, panels split across threads.
  ThreadPool::global().parallel_for(pw->panels, 1, [&](int64_t b, int64_t e, int) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t p = b; p < e; ++p) {
      for (int c = 0; c < nr; ++c) {
        const int64_t n = p * nr + c;
        const bool valid = n < N;
        if (fmt == BFormat::kKMajorF32) {
          float* d = static_cast<float*>(pw->data) + p * KP * nr + c;
          if (valid) convert_to_f32(w.dtype, row_at(n), row.data(), K);
          for (int64_t k = 0; k < KP; ++k) d[k * nr] = (valid && k < K) ? row[k] : 0.0f;
          continue;
        }
        // bf16 panels: BF16 rows are copied bit for bit, F32/F16 rows rounded to bf16.
        const uint16_t* src16 = nullptr;
        std::vector<uint16_t> tmp;
        if (valid) {
          if (w.dtype == DType::kBF16) {
            src16 = reinterpret_cast<const uint16_t*>(row_at(n));
          } else {
            convert_to_f32(w.dtype, row_at(n), row.data(), K);
            tmp.resize(static_cast<size_t>(K));
            for (int64_t k = 0; k < K; ++k) tmp[k] = f32_to_bf16(row[k]);
            src16 = tmp.data();
          }
        }
        if (fmt == BFormat::kKMajorBf16) {
          uint16_t* d = static_cast<uint16_t*>(pw->data) + p * KP * nr + c;
          for (int64_t k = 0; k < KP; ++k) d[k * nr] = (valid && k < K) ? src16[k] : 0;
        } else {
          uint16_t* d = static_cast<uint16_t*>(pw->data) + p * KP * nr + 2 * c;
          for (int64_t k = 0; k < KP; ++k) d[(k / 2) * nr * 2 + (k & 1)] = (valid && k < K) ? src16[k] : 0;
        }
      }
    }
  });
  return holder;
}

std::shared_ptr<void> pack_weight(const Matrix& w, BFormat fmt, int nr) { return pack_rows({&w}, fmt, nr); }

bool panels_hold_rows_exactly(const PackedWeight& pw, DType dtype) {
  return pw.fmt == BFormat::kKMajorF32 || dtype == DType::kBF16;
}

void unpack_row(const PackedWeight& pw, int64_t n, float* out) {
  const int64_t nr = pw.nr, K = pw.k, c = n % nr;
  const int64_t panel = n / nr * pw.k_pad * nr;
  switch (pw.fmt) {
    case BFormat::kKMajorF32: {
      const float* s = static_cast<const float*>(pw.data) + panel + c;
      for (int64_t k = 0; k < K; ++k) out[k] = s[k * nr];
      break;
    }
    case BFormat::kKMajorBf16: {
      const uint16_t* s = static_cast<const uint16_t*>(pw.data) + panel + c;
      for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(s[k * nr]);
      break;
    }
    case BFormat::kPairsBf16: {
      const uint16_t* s = static_cast<const uint16_t*>(pw.data) + panel + 2 * c;
      for (int64_t k = 0; k < K; ++k) out[k] = bf16_to_f32(s[(k / 2) * 2 * nr + (k & 1)]);
      break;
    }
  }
}

}  // namespace locr::kernels::cpu
