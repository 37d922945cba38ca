#include "model/quantize_matrix.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "io/file.h"
#include "kernels/cpu/quant_q4_k.h"
#include "kernels/cpu/quant_q6_k.h"
#include "kernels/cpu/quant_q8_0.h"

namespace locr::model {

namespace {

void to_f32_row(const Matrix& m, int64_t r, float* out) {
  convert_to_f32(m.dtype, static_cast<const char*>(m.data) + r * dtype_row_bytes(m.dtype, m.cols), out,
                 static_cast<size_t>(m.cols));
}

}  // namespace

bool quantize_matrix(Matrix& m, DType to) {
  const int64_t block = to == DType::kQ4_K || to == DType::kQ6_K ? 256 : 32;
  if (m.data == nullptr || m.cols % block != 0) return false;
  if (m.dtype != DType::kF32 && m.dtype != DType::kBF16 && m.dtype != DType::kF16) return false;
  const int64_t row_bytes = dtype_row_bytes(to, m.cols);
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(m.rows * row_bytes));
  uint8_t* dst = buf->data();
  const Matrix src = m;
  ThreadPool::global().parallel_for(m.rows, 16, [&](int64_t b, int64_t e, int) {
    std::vector<float> row(static_cast<size_t>(src.cols));
    for (int64_t r = b; r < e; ++r) {
      to_f32_row(src, r, row.data());
      if (to == DType::kQ4_K) kernels::quantize_row_q4_K(row.data(), dst + r * row_bytes, src.cols);
      else if (to == DType::kQ6_K) kernels::quantize_row_q6_K(row.data(), dst + r * row_bytes, src.cols);
      else kernels::quantize_row_q8_0(row.data(), dst + r * row_bytes, src.cols);
    }
  });
  // The checkpoint's pages of it go back to the kernel (memory-mapped: read again on demand, e.g. a
  // tied embedding table's rows), so resident memory holds the quantized copy only.
  io::release_pages(src.data, static_cast<size_t>(dtype_row_bytes(src.dtype, src.cols) * src.rows));
  Matrix q;
  q.dtype = to;
  q.rows = m.rows;
  q.cols = m.cols;
  q.data = dst;
  q.holder = std::shared_ptr<void>(buf, buf.get());
  m = std::move(q);
  return true;
}

void quantize_counted(Matrix& m, DType to, QuantizeCounts* n) {
  if (quantize_matrix(m, to)) ++(to == DType::kQ4_K ? n->q4_k : to == DType::kQ6_K ? n->q6_k : n->q8_0);
  else if (to != DType::kQ8_0 && quantize_matrix(m, DType::kQ8_0)) ++n->q8_0;  // rows not whole super-blocks
}

std::string quantization_method(const std::string& method) {
  std::string k = method;
  std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (k == "fp8") {
    // vLLM's online FP8 (8-bit weights with one scale per tensor or channel): the same bytes per
    // weight in locr's 8-bit format, whose scale per 32 weights tracks the values more closely.
    LOCR_INFO("--quantization fp8: the weights are quantized to 8 bits as GGUF Q8_0 (int8 with an f16 scale per 32 "
              "weights), locr's 8-bit weight format; use --kv-cache-dtype fp8 for an FP8 KV cache");
    k = "q8_0";
  }
  if (k != "q8_0" && k != "q4_k" && k != "q4_k_m")
    fail(ErrorKind::kInvalidArgument, "--quantization ", method, " is not supported: use q8_0 (GGUF Q8_0, int8 "
         "weights with a scale per 32), q4_k (GGUF Q4_K, 4-bit weights in super-blocks of 256) or "
         "q4_k_m (llama.cpp's Q4_K_M mix of Q4_K and Q6_K), or leave it out to run the checkpoint's own dtype");
  return k;
}

}  // namespace locr::model
