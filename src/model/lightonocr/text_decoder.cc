#include "model/lightonocr/text_decoder.h"

#include <cmath>

#include "model/taps.h"

namespace locr::model {

void TextDecoder::embed(const int32_t* ids, int64_t n, float* out) const {
  ops_.embed(w_.embed_tokens, ops_.i32(ids, n),
             ops_.f32(out, n, w_.embed_tokens.cols));
}

void TextDecoder::forward(float* x, int64_t T, KvCache& cache,
                          const std::function<void(int, const float*)>& on_hidden) const {
  LOCR_CHECK(cache.size() + T <= cache.capacity(), "KV cache overflow: ", cache.size() + T, " > ", cache.capacity());
  forward(x, {SeqStep{cache.size(), T, cache.table()}}, cache.pool(), on_hidden);
  cache.set_size(cache.size() + T);
}

void TextDecoder::forward(float* x, const std::vector<SeqStep>& seqs, KvPool& kv,
                          const std::function<void(int, const float*)>& on_hidden, Taps* taps) const {
  const HostStepBatch hb(cfg_, seqs, kv.block_size());
  Workspace ws(ops_);
  forward(x, hb.batch(), kv, ws, on_hidden, taps);
}

namespace {

// Workspace slots of the decoder's activations.
enum Slot { kH, kQkv, kAttn, kO, kGateUp };

}  // namespace

void TextDecoder::forward(float* x_data, const StepBatch& b, KvPool& kv, Workspace& ws,
                          const std::function<void(int, const float*)>& on_hidden, Taps* taps) const {
  const int64_t H = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t nq = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const int64_t qw = nq * hd, kvw = nkv * hd, I = cfg_.intermediate_size;
  const int64_t R = b.rows;
  const float eps = cfg_.rms_norm_eps;
  const kernels::View x = ops_.f32(x_data, R, H);  // the residual stream
  const kernels::View h = ws.view(kH, R, H);                // normed input
  const kernels::View qkv = ws.view(kQkv, R, qw + 2 * kvw); // [q | k | v] of each row
  const kernels::View q = qkv.cols_range(0, qw);            // queries   [R, heads * hd]
  const kernels::View k = qkv.cols_range(qw, kvw);          // new keys  [R, kv_heads * hd]
  const kernels::View v = qkv.cols_range(qw + kvw, kvw);    // new values
  const kernels::View attn = ws.view(kAttn, R, qw);         // attention output
  const kernels::View o = ws.view(kO, R, H);                // projections back to hidden
  const kernels::View gate_up = ws.view(kGateUp, R, 2 * I); // [gate | up] of each row
  const kernels::View gate = gate_up.cols_range(0, I), up = gate_up.cols_range(I, I);
  const kernels::View cos = ops_.f32(b.cos, R, hd / 2);
  const kernels::View sin = ops_.f32(b.sin, R, hd / 2);
  const kernels::View slots = ops_.i32(b.slots, R);

  // Hidden states are host copies; on a host backend the activations themselves.
  std::vector<float> host;
  auto on_host = [&](const float* p, int64_t n) -> const float* {
    if (ops_.host_memory()) return p;
    host.resize(static_cast<size_t>(n));
    ops_.to_host(host.data(), p, static_cast<size_t>(n) * sizeof(float));
    return host.data();
  };
  auto emit = [&](int l, const char* site, const kernels::View& t) { tap(taps, ops_, "text", l, site, t); };
  auto hidden = [&](int i) {
    if (on_hidden) on_hidden(i, on_host(x.f32(), R * H));
  };

  hidden(0);
  emit(-1, "embed", x);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    const TextLayerWeights& L = w_.layers[l];
    ops_.rms_norm(x, L.input_layernorm, eps, h);
    emit(l, "attn_norm", h);
    ops_.matmul(h, L.qkv, qkv);
    ops_.rms_norm(q, L.q_norm, eps, q);  // per head
    ops_.rms_norm(k, L.k_norm, eps, k);
    ops_.rope(q, cos, sin);
    ops_.rope(k, cos, sin);
    emit(l, "q", q);
    emit(l, "k", k);
    emit(l, "v", v);

    const kernels::KvLayer layer = kv.layer(l);
    ops_.kv_store(k, v, slots, layer);
    ops_.paged_attention(q, layer, b.attn, scale, attn);
    emit(l, "attn_out", attn);
    ops_.matmul(attn, L.o_proj, o);
    emit(l, "attn_proj", o);
    if (taps) {  // the residual stream between the two adds is a tap of its own
      ops_.add(x, o);
      emit(l, "post_attn", x);
      ops_.rms_norm(x, L.post_attention_layernorm, eps, h);
    } else {
      ops_.add_rms_norm(x, o, L.post_attention_layernorm, eps, h);
    }
    emit(l, "ffn_norm", h);
    ops_.matmul(h, L.gate_up, gate_up);
    ops_.silu_mul(gate, up, gate);  // in place: the activation in the gate half
    emit(l, "mlp_act", gate);
    ops_.matmul(gate, L.down_proj, o);
    emit(l, "mlp_out", o);
    ops_.add(x, o);
    emit(l, "out", x);
    // transformers records layer outputs 1..L-1; the last entry is the final-normed state.
    if (l + 1 < cfg_.num_hidden_layers) hidden(l + 1);
  }
  ops_.rms_norm(x, w_.norm, eps, x);
  emit(-1, "norm", x);
  hidden(cfg_.num_hidden_layers);
}

void TextDecoder::greedy(const float* h, int64_t n, int32_t* out) const {
  ops_.matmul_argmax(ops_.f32(h, n, cfg_.hidden_size), w_.lm_head, out);
}

void TextDecoder::logits(const float* h, int64_t n, float* out) const {
  ops_.matmul(ops_.f32(h, n, cfg_.hidden_size), w_.lm_head,
              ops_.f32(out, n, w_.lm_head.rows));
}

}  // namespace locr::model
