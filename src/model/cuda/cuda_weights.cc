#include "model/cuda/cuda_weights.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "io/file.h"

namespace locr::model::cuda {

std::vector<uint16_t> stack_bf16(const std::vector<const kernels::Matrix*>& parts) {
  int64_t n = 0;
  for (const auto* m : parts) {
    LOCR_CHECK(m->cols == parts[0]->cols, "stacked matrices need the same width");
    n += m->rows * m->cols;
  }
  std::vector<uint16_t> out(static_cast<size_t>(n));
  int64_t off = 0;
  for (const auto* m : parts) {
    const int64_t k = m->rows * m->cols;
    switch (m->dtype) {
      case DType::kBF16:
        std::memcpy(out.data() + off, m->data, static_cast<size_t>(k) * sizeof(uint16_t));
        break;
      case DType::kF32: {
        const float* p = static_cast<const float*>(m->data);
        for (int64_t i = 0; i < k; ++i) out[off + i] = f32_to_bf16(p[i]);
        break;
      }
      case DType::kF16: {
        const uint16_t* p = static_cast<const uint16_t*>(m->data);
        for (int64_t i = 0; i < k; ++i) out[off + i] = f32_to_bf16(f16_to_f32(p[i]));
        break;
      }
      default:
        fail(ErrorKind::kUnsupported, "CUDA executor: weights must be F32, F16 or BF16, got ", dtype_name(m->dtype));
    }
    off += k;
  }
  return out;
}

namespace {

struct Uploader {
  kc::Stream s;
  int64_t bytes = 0;
  kc::DeviceBuffer up(const std::vector<const kernels::Matrix*>& parts) {
    const std::vector<uint16_t> h = stack_bf16(parts);
    kc::DeviceBuffer d(h.size() * sizeof(uint16_t));
    // Pageable source: the copy is complete when copy_to_device returns or at the next
    // synchronize; synchronise before `h` goes out of scope.
    kc::copy_to_device(d.get(), h.data(), h.size() * sizeof(uint16_t), s);
    kc::synchronize(s);
    bytes += static_cast<int64_t>(d.bytes());
    // The GPU path never reads the checkpoint again: hand its pages back to the kernel (they
    // come back on demand if a host helper touches them), so host memory holds no second copy.
    for (const auto* m : parts)
      io::release_pages(m->data, static_cast<size_t>(m->rows * m->cols) * dtype_size(m->dtype));
    return d;
  }
  kc::DeviceBuffer up(const kernels::Matrix& m) { return up(std::vector<const kernels::Matrix*>{&m}); }
};

}  // namespace

std::unique_ptr<DeviceWeights> upload_weights(const ModelWeights& w, kc::Stream s) {
  auto d = std::make_unique<DeviceWeights>();
  Uploader u{s};
  d->embed_tokens = u.up(w.text.embed_tokens);
  for (const auto& L : w.text.layers) {
    DevTextLayer t;
    t.input_layernorm = u.up(L.input_layernorm);
    t.qkv = u.up({&L.q_proj, &L.k_proj, &L.v_proj});
    t.q_norm = u.up(L.q_norm);
    t.k_norm = u.up(L.k_norm);
    t.o_proj = u.up(L.o_proj);
    t.post_attention_layernorm = u.up(L.post_attention_layernorm);
    t.gate_up = u.up({&L.gate_proj, &L.up_proj});
    t.down_proj = u.up(L.down_proj);
    d->text.push_back(std::move(t));
  }
  d->norm = u.up(w.text.norm);
  if (w.text.lm_head.data == w.text.embed_tokens.data && w.text.lm_head.dtype == w.text.embed_tokens.dtype &&
      w.text.lm_head.rows == w.text.embed_tokens.rows) {
    d->lm_head = d->embed_tokens.as<kc::bf16>();
  } else {
    d->lm_head_own = u.up(w.text.lm_head);
    d->lm_head = d->lm_head_own.as<kc::bf16>();
  }
  if (w.has_vision) {
    d->patch_conv = u.up(w.vision.patch_conv);
    d->ln_pre = u.up(w.vision.ln_pre);
    for (const auto& L : w.vision.layers) {
      DevVisionLayer v;
      v.attention_norm = u.up(L.attention_norm);
      v.qkv = u.up({&L.q_proj, &L.k_proj, &L.v_proj});
      v.o_proj = u.up(L.o_proj);
      v.ffn_norm = u.up(L.ffn_norm);
      v.gate_up = u.up({&L.gate_proj, &L.up_proj});
      v.down_proj = u.up(L.down_proj);
      d->vision.push_back(std::move(v));
    }
    d->proj_norm = u.up(w.projector.norm);
    d->merging = u.up(w.projector.merging_layer);
    d->linear_1 = u.up(w.projector.linear_1);
    d->linear_2 = u.up(w.projector.linear_2);
  }
  d->bytes = u.bytes;
  return d;
}

}  // namespace locr::model::cuda
