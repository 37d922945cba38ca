#include "model/quantize_weights.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "kernels/cpu/quant_q8_0.h"

namespace locr::model {

namespace {

void to_f32_row(const Matrix& m, int64_t r, float* out) {
  convert_to_f32(m.dtype, static_cast<const char*>(m.data) + r * dtype_row_bytes(m.dtype, m.cols), out,
                 static_cast<size_t>(m.cols));
}

// Replaces m by its Q8_0 quantization (a new buffer; the checkpoint's pages are left alone).
bool quantize_q8_0(Matrix& m) {
  if (m.data == nullptr || m.cols % 32 != 0 || m.dtype == DType::kQ8_0) return false;
  if (m.dtype != DType::kF32 && m.dtype != DType::kBF16 && m.dtype != DType::kF16) return false;
  const int64_t row_bytes = dtype_row_bytes(DType::kQ8_0, m.cols);
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(m.rows * row_bytes));
  uint8_t* dst = buf->data();
  const Matrix src = m;
  ThreadPool::global().parallel_for(m.rows, 16, [&](int64_t b, int64_t e, int) {
    std::vector<float> row(static_cast<size_t>(src.cols));
    for (int64_t r = b; r < e; ++r) {
      to_f32_row(src, r, row.data());
      kernels::quantize_row_q8_0(row.data(), dst + r * row_bytes, src.cols);
    }
  });
  Matrix q;
  q.dtype = DType::kQ8_0;
  q.rows = m.rows;
  q.cols = m.cols;
  q.data = dst;
  q.holder = std::shared_ptr<void>(buf, buf.get());
  m = std::move(q);
  return true;
}

}  // namespace

int quantize_weights(ModelWeights& w, const std::string& method) {
  std::string k = method;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k != "q8_0")
    fail(ErrorKind::kInvalidArgument, "--quantization ", method, " is not supported: use q8_0 (GGUF Q8_0, int8 "
         "weights with a scale per 32; CPU backends), or leave it out to run the checkpoint's own dtype");
  int n = 0;
  auto q = [&](Matrix& m) { n += quantize_q8_0(m) ? 1 : 0; };
  for (auto& L : w.text.layers)
    for (Matrix* m : {&L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.gate_proj, &L.up_proj, &L.down_proj}) q(*m);
  q(w.text.lm_head);  // a tied head shares the embedding's storage: it gets its own copy, the table stays
  if (w.has_vision) {
    for (auto& L : w.vision.layers)
      for (Matrix* m : {&L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.gate_proj, &L.up_proj, &L.down_proj}) q(*m);
    for (Matrix* m : {&w.projector.merging_layer, &w.projector.linear_1, &w.projector.linear_2}) q(*m);
  }
  LOCR_INFO("quantization q8_0: ", n, " weight matrices quantized to Q8_0 at load");
  return n;
}

}  // namespace locr::model
