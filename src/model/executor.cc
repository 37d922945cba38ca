#include "model/executor.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace locr::model {

Tensor TensorEmbeds::to_host() const {
  if (ops_.host_memory() || t_.empty_tensor()) return t_;
  Tensor h = Tensor::empty(DType::kF32, t_.shape());
  ops_.to_host(h.raw(), t_.raw(), h.nbytes());
  return h;
}

void write_image_rows(const StepSeq& s, float* x, int64_t hidden) {
  if (!s.images || !s.image_rows) return;
  const auto* te = dynamic_cast<const TensorEmbeds*>(s.images);
  LOCR_CHECK(te && te->ops().host_memory(), "image embeddings of another executor");
  const Tensor& emb = te->tensor();
  for (int64_t i = 0; i < s.n; ++i)
    if (s.image_rows[i] >= 0) {
      LOCR_CHECK(s.image_rows[i] < emb.dim(0), "image row out of range");
      std::memcpy(x + i * hidden, emb.data<float>() + s.image_rows[i] * hidden, hidden * sizeof(float));
    }
}

void want_logits_rows(const StepSeq& s, int k, int64_t row0, std::vector<int64_t>* rows, StepOutput* out) {
  if (!s.want_logits) return;
  LOCR_CHECK(s.n_logits >= 1 && s.n_logits <= s.n, "n_logits ", s.n_logits, " of a ", s.n, "-row step");
  for (int64_t i = s.n - s.n_logits; i < s.n; ++i) {
    rows->push_back(row0 + i);
    out->logits_seq.push_back(k);
  }
}

bool greedy_on_executor(const StepSeq& s) {
  return s.want_logits && s.n_logits == 1 && s.sample != nullptr && s.sample->temperature <= 0.0f &&
         !s.sample->want_logprob;
}

Tensor gather_rows(const Tensor& x, const std::vector<int64_t>& rows) {
  const int64_t H = x.dim(1), S = static_cast<int64_t>(rows.size());
  Tensor h = Tensor::empty(DType::kF32, {S, H});
  for (int64_t i = 0; i < S; ++i)
    std::memcpy(h.data<float>() + i * H, x.data<float>() + rows[i] * H, H * sizeof(float));
  return h;
}

int64_t kv_blocks_for(int64_t bytes, int64_t bytes_per_block, int64_t max_blocks) {
  int64_t n = std::max<int64_t>(1, bytes / std::max<int64_t>(1, bytes_per_block));
  if (max_blocks > 0) n = std::min(n, max_blocks);
  return n;
}

}  // namespace locr::model
