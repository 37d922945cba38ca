#include "model/text_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/fp8.h"

#include "model/rope.h"
#include "model/taps.h"

namespace locr::model {

KvPool::KvPool(const TextConfig& cfg, int64_t n_blocks, int block_size, DType dtype)
    : n_blocks_(n_blocks), block_size_(block_size),
      width_(static_cast<int64_t>(cfg.num_key_value_heads) * cfg.head_dim), n_kv_heads_(cfg.num_key_value_heads),
      head_dim_(cfg.head_dim), dtype_(dtype) {
  LOCR_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF8E4M3, "KV cache dtype ",
             dtype_name(dtype));
  const int64_t rows = n_blocks * block_size;
  for (int i = 0; i < cfg.num_hidden_layers; ++i) {
    k_.push_back(Tensor::empty(dtype, {rows, width_}));
    v_.push_back(Tensor::empty(dtype, {rows, width_}));
    if (dtype == DType::kF8E4M3) {
      k_scale_.push_back(Tensor::empty(DType::kF32, {rows, n_kv_heads_}));
      v_scale_.push_back(Tensor::empty(DType::kF32, {rows, n_kv_heads_}));
    }
  }
}

namespace {

// One head of head_dim values to FP8 E4M3 with scale amax / 448 (so the largest magnitude maps
// to 448 and every head uses the whole range; at least FLT_MIN, so 1 / scale is finite). A
// non-finite input makes the scale NaN, so attention sees NaN rather than a clipped value.
void store_fp8_head(const float* x, int64_t n, uint8_t* q, float* scale) {
  float amax = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    finite = finite && a <= std::numeric_limits<float>::max();
    amax = a > amax ? a : amax;
  }
  const float s = finite ? std::max(amax / kFp8E4M3Max, std::numeric_limits<float>::min())
                         : std::numeric_limits<float>::quiet_NaN();
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) q[i] = f32_to_fp8_e4m3(x[i] * inv);  // |x| * inv may round past 448: saturates
  *scale = s;
}

}  // namespace

void KvPool::store(int layer, int64_t slot, const float* k, const float* v) {
  if (dtype_ == DType::kF32) {
    std::memcpy(k_[layer].data<float>() + slot * width_, k, width_ * sizeof(float));
    std::memcpy(v_[layer].data<float>() + slot * width_, v, width_ * sizeof(float));
    return;
  }
  if (dtype_ == DType::kF8E4M3) {
    uint8_t* kd = static_cast<uint8_t*>(k_[layer].raw()) + slot * width_;
    uint8_t* vd = static_cast<uint8_t*>(v_[layer].raw()) + slot * width_;
    float* ks = k_scale_[layer].data<float>() + slot * n_kv_heads_;
    float* vs = v_scale_[layer].data<float>() + slot * n_kv_heads_;
    for (int64_t h = 0; h < n_kv_heads_; ++h) {
      store_fp8_head(k + h * head_dim_, head_dim_, kd + h * head_dim_, ks + h);
      store_fp8_head(v + h * head_dim_, head_dim_, vd + h * head_dim_, vs + h);
    }
    return;
  }
  uint16_t* kd = static_cast<uint16_t*>(k_[layer].raw()) + slot * width_;
  uint16_t* vd = static_cast<uint16_t*>(v_[layer].raw()) + slot * width_;
  for (int64_t i = 0; i < width_; ++i) {
    kd[i] = f32_to_bf16(k[i]);
    vd[i] = f32_to_bf16(v[i]);
  }
}

int64_t KvPool::bytes_per_block(const TextConfig& cfg, int block_size, DType dtype) {
  int64_t per_head = static_cast<int64_t>(cfg.head_dim) * static_cast<int64_t>(dtype_size(dtype));
  if (dtype == DType::kF8E4M3) per_head += static_cast<int64_t>(sizeof(float));  // the head's scale
  return 2LL * cfg.num_hidden_layers * block_size * cfg.num_key_value_heads * per_head;
}

KvCache::KvCache(const TextConfig& cfg, int64_t capacity, int block_size, DType dtype)
    : capacity_(capacity), pool_(cfg, (capacity + block_size - 1) / block_size, block_size, dtype) {
  table_.resize(pool_.n_blocks());
  std::iota(table_.begin(), table_.end(), 0);
}

void TextDecoder::embed(const int32_t* ids, int64_t n, float* out) const { ops_.embed(w_.embed_tokens, ids, n, out); }

void TextDecoder::forward(float* x, int64_t T, KvCache& cache,
                          const std::function<void(int, const float*)>& on_hidden) const {
  LOCR_CHECK(cache.size() + T <= cache.capacity(), "KV cache overflow: ", cache.size() + T, " > ", cache.capacity());
  forward(x, {SeqStep{cache.size(), T, cache.table()}}, cache.pool(), on_hidden);
  cache.set_size(cache.size() + T);
}

void TextDecoder::forward(float* x, const std::vector<SeqStep>& seqs, KvPool& kv,
                          const std::function<void(int, const float*)>& on_hidden, Taps* taps) const {
  const int64_t H = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t nq = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const int64_t qw = nq * hd, kvw = nkv * hd, I = cfg_.intermediate_size;
  const int64_t bs = kv.block_size();
  int64_t R = 0;
  for (const auto& s : seqs) R += s.n_new;

  // RoPE angles per row, at each sequence's own positions.
  std::vector<float> cos(R * hd / 2), sin(R * hd / 2);
  {
    int64_t row = 0;
    for (const auto& s : seqs) {
      const RopeTable t = text_rope(cfg_.rope_theta, static_cast<int>(hd), s.pos0, s.n_new);
      std::copy(t.cos.begin(), t.cos.end(), cos.begin() + row * hd / 2);
      std::copy(t.sin.begin(), t.sin.end(), sin.begin() + row * hd / 2);
      row += s.n_new;
    }
  }
  Tensor h = Tensor::empty(DType::kF32, {R, H});       // normed input
  Tensor q = Tensor::empty(DType::kF32, {R, qw});      // queries
  Tensor k = Tensor::empty(DType::kF32, {R, kvw});     // new keys
  Tensor v = Tensor::empty(DType::kF32, {R, kvw});     // new values
  Tensor attn = Tensor::empty(DType::kF32, {R, qw});   // attention output
  Tensor o = Tensor::empty(DType::kF32, {R, H});       // projections back to hidden
  Tensor gate = Tensor::empty(DType::kF32, {R, I});
  Tensor up = Tensor::empty(DType::kF32, {R, I});

  if (on_hidden) on_hidden(0, x);
  tap(taps, "text", -1, "embed", x, R, H);
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    const TextLayerWeights& L = w_.layers[l];
    ops_.rms_norm(x, L.input_layernorm, cfg_.rms_norm_eps, R, H, h.data<float>());
    tap(taps, "text", l, "attn_norm", h.data<float>(), R, H);
    ops_.matmul(h.data<float>(), R, L.q_proj, q.data<float>());
    ops_.matmul(h.data<float>(), R, L.k_proj, k.data<float>());
    ops_.matmul(h.data<float>(), R, L.v_proj, v.data<float>());
    ops_.rms_norm(q.data<float>(), L.q_norm, cfg_.rms_norm_eps, R * nq, hd, q.data<float>());
    ops_.rms_norm(k.data<float>(), L.k_norm, cfg_.rms_norm_eps, R * nkv, hd, k.data<float>());
    ops_.rope(q.data<float>(), R, nq, hd, qw, cos.data(), sin.data());
    ops_.rope(k.data<float>(), R, nkv, hd, kvw, cos.data(), sin.data());
    tap(taps, "text", l, "q", q.data<float>(), R, qw);
    tap(taps, "text", l, "k", k.data<float>(), R, kvw);
    tap(taps, "text", l, "v", v.data<float>(), R, kvw);

    int64_t row = 0;
    for (const auto& s : seqs) {
      // Write the new keys/values into their paged slots.
      for (int64_t i = 0; i < s.n_new; ++i) {
        const int64_t pos = s.pos0 + i;
        const int64_t slot = static_cast<int64_t>(s.block_table[pos / bs]) * bs + pos % bs;
        kv.store(l, slot, k.data<float>() + (row + i) * kvw, v.data<float>() + (row + i) * kvw);
      }
      kernels::AttentionParams ap;
      ap.n_q = s.n_new;
      ap.n_kv = s.pos0 + s.n_new;
      ap.n_heads = nq;
      ap.n_kv_heads = nkv;
      ap.head_dim = hd;
      ap.q_stride = qw;
      ap.kv_stride = kvw;
      ap.out_stride = qw;
      ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      ap.causal = true;
      ap.q_offset = s.pos0;
      ap.block_table = s.block_table;
      ap.block_size = bs;
      ap.kv_dtype = kv.dtype();
      ap.k_scale = kv.k_scale(l);
      ap.v_scale = kv.v_scale(l);
      ops_.attention(q.data<float>() + row * qw, kv.k(l), kv.v(l), attn.data<float>() + row * qw, ap);
      row += s.n_new;
    }
    tap(taps, "text", l, "attn_out", attn.data<float>(), R, qw);
    ops_.matmul(attn.data<float>(), R, L.o_proj, o.data<float>());
    tap(taps, "text", l, "attn_proj", o.data<float>(), R, H);
    ops_.add(x, o.data<float>(), R * H);
    tap(taps, "text", l, "post_attn", x, R, H);

    ops_.rms_norm(x, L.post_attention_layernorm, cfg_.rms_norm_eps, R, H, h.data<float>());
    tap(taps, "text", l, "ffn_norm", h.data<float>(), R, H);
    ops_.matmul(h.data<float>(), R, L.gate_proj, gate.data<float>());
    ops_.matmul(h.data<float>(), R, L.up_proj, up.data<float>());
    ops_.silu_mul(gate.data<float>(), up.data<float>(), gate.data<float>(), R * I);
    tap(taps, "text", l, "mlp_act", gate.data<float>(), R, I);
    ops_.matmul(gate.data<float>(), R, L.down_proj, o.data<float>());
    tap(taps, "text", l, "mlp_out", o.data<float>(), R, H);
    ops_.add(x, o.data<float>(), R * H);
    tap(taps, "text", l, "out", x, R, H);
    // transformers records layer outputs 1..L-1; the last entry is the final-normed state.
    if (on_hidden && l + 1 < cfg_.num_hidden_layers) on_hidden(l + 1, x);
  }
  ops_.rms_norm(x, w_.norm, cfg_.rms_norm_eps, R, H, x);
  tap(taps, "text", -1, "norm", x, R, H);
  if (on_hidden) on_hidden(cfg_.num_hidden_layers, x);
}

void TextDecoder::logits(const float* h, int64_t n, float* out) const { ops_.matmul(h, n, w_.lm_head, out); }

}  // namespace locr::model
