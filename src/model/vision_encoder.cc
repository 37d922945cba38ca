#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "model/rope.h"
#include "model/taps.h"

namespace locr::model {

Tensor VisionEncoder::forward(const float* patches, const std::vector<ImageGrid>& grids, Taps* taps) const {
  VisionState s = begin(patches, grids, taps);
  run_layers(s, cfg_.num_hidden_layers, taps);
  return s.x;
}

Tensor backend_tensor(kernels::Ops& ops, int64_t rows, int64_t cols) {
  std::shared_ptr<void> p = ops.alloc(static_cast<size_t>(rows * cols) * sizeof(float));
  void* data = p.get();
  return Tensor(DType::kF32, {rows, cols}, data, std::move(p));
}

VisionState VisionEncoder::begin(const float* patches, const std::vector<ImageGrid>& grids, Taps* taps) const {
  const int64_t V = cfg_.hidden_size, hd = cfg_.head_dim;
  const int64_t P = static_cast<int64_t>(w_.patch_conv.cols);
  VisionState s;
  s.grids = grids;
  int64_t N = 0;
  for (const auto& g : grids) N += g.n_patches();
  // RoPE tables for all rows, image by image (positions restart at (0,0) for each image).
  s.cos = backend_tensor(ops_, N, hd / 2);
  s.sin = backend_tensor(ops_, N, hd / 2);
  int64_t off = 0;
  for (const auto& g : grids) {
    const RopeTable t = vision_rope(cfg_.rope_theta, static_cast<int>(hd), g.grid_h, g.grid_w);
    ops_.from_host(s.cos.data<float>() + off * hd / 2, t.cos.data(), t.cos.size() * sizeof(float));
    ops_.from_host(s.sin.data<float>() + off * hd / 2, t.sin.data(), t.sin.size() * sizeof(float));
    off += g.n_patches();
  }
  // The patches go to the backend's memory (a host backend reads them where they are).
  Tensor dev_patches;
  if (!ops_.host_memory()) {
    dev_patches = backend_tensor(ops_, N, P);
    ops_.from_host(dev_patches.raw(), patches, static_cast<size_t>(N * P) * sizeof(float));
    patches = dev_patches.data<float>();
  }
  s.x = backend_tensor(ops_, N, V);
  ops_.matmul(patches, N, w_.patch_conv, s.x.data<float>());
  tap(taps, ops_, "vision", -1, "patch_embed", s.x.data<float>(), N, V);
  ops_.rms_norm(s.x.data<float>(), w_.ln_pre, cfg_.norm_eps, N, V, s.x.data<float>());
  tap(taps, ops_, "vision", -1, "ln_pre", s.x.data<float>(), N, V);
  ops_.synchronize();  // the host sources of the copies above go out of scope
  return s;
}

void VisionEncoder::run_layers(VisionState& s, int n_layers, Taps* taps) const {
  const int64_t V = cfg_.hidden_size, hd = cfg_.head_dim, nh = cfg_.num_attention_heads;
  const int64_t A = nh * hd, I = cfg_.intermediate_size;
  const int64_t N = s.n_patches();
  const int end = std::min(cfg_.num_hidden_layers, s.next_layer + n_layers);
  if (s.next_layer >= end) return;
  float* x = s.x.data<float>();
  Tensor h = backend_tensor(ops_, N, V);
  Tensor q = backend_tensor(ops_, N, A);
  Tensor k = backend_tensor(ops_, N, A);
  Tensor v = backend_tensor(ops_, N, A);
  Tensor attn = backend_tensor(ops_, N, A);
  Tensor gate = backend_tensor(ops_, N, I);
  Tensor up = backend_tensor(ops_, N, I);
  const float* cos = s.cos.data<float>();
  const float* sin = s.sin.data<float>();

  for (int l = s.next_layer; l < end; ++l) {
    const VisionLayerWeights& L = w_.layers[l];
    ops_.rms_norm(x, L.attention_norm, cfg_.norm_eps, N, V, h.data<float>());
    tap(taps, ops_, "vision", l, "attn_norm", h.data<float>(), N, V);
    ops_.matmul(h.data<float>(), N, L.q_proj, q.data<float>());
    ops_.matmul(h.data<float>(), N, L.k_proj, k.data<float>());
    ops_.matmul(h.data<float>(), N, L.v_proj, v.data<float>());
    ops_.rope(q.data<float>(), N, nh, hd, A, cos, sin);
    ops_.rope(k.data<float>(), N, nh, hd, A, cos, sin);
    tap(taps, ops_, "vision", l, "q", q.data<float>(), N, A);
    tap(taps, ops_, "vision", l, "k", k.data<float>(), N, A);
    tap(taps, ops_, "vision", l, "v", v.data<float>(), N, A);
    int64_t off = 0;
    for (const auto& g : s.grids) {  // bidirectional attention within each image
      kernels::AttentionParams ap;
      ap.n_q = ap.n_kv = g.n_patches();
      ap.n_heads = ap.n_kv_heads = nh;
      ap.head_dim = hd;
      ap.q_stride = ap.kv_stride = ap.out_stride = A;
      ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
      ap.causal = false;
      ops_.attention(q.data<float>() + off * A, k.data<float>() + off * A, v.data<float>() + off * A,
                     attn.data<float>() + off * A, ap);
      off += g.n_patches();
    }
    tap(taps, ops_, "vision", l, "attn_out", attn.data<float>(), N, A);
    ops_.matmul(attn.data<float>(), N, L.o_proj, h.data<float>());
    tap(taps, ops_, "vision", l, "attn_proj", h.data<float>(), N, V);
    ops_.add(x, h.data<float>(), N * V);
    tap(taps, ops_, "vision", l, "post_attn", x, N, V);

    ops_.rms_norm(x, L.ffn_norm, cfg_.norm_eps, N, V, h.data<float>());
    tap(taps, ops_, "vision", l, "ffn_norm", h.data<float>(), N, V);
    ops_.matmul(h.data<float>(), N, L.gate_proj, gate.data<float>());
    ops_.matmul(h.data<float>(), N, L.up_proj, up.data<float>());
    ops_.silu_mul(gate.data<float>(), up.data<float>(), gate.data<float>(), N * I);
    tap(taps, ops_, "vision", l, "mlp_act", gate.data<float>(), N, I);
    ops_.matmul(gate.data<float>(), N, L.down_proj, h.data<float>());
    tap(taps, ops_, "vision", l, "mlp_out", h.data<float>(), N, V);
    ops_.add(x, h.data<float>(), N * V);
    tap(taps, ops_, "vision", l, "out", x, N, V);
  }
  s.next_layer = end;
}

void patch_merge(const float* in, int grid_h, int grid_w, int64_t d, int m, float* out) {
  kernels::patch_merge_host(in, grid_h, grid_w, d, m, out);
}

Tensor Projector::forward(const Tensor& features, const std::vector<ImageGrid>& grids, Taps* taps) const {
  const int64_t V = cfg_.vision.hidden_size, H = cfg_.text.hidden_size;
  const int m = cfg_.spatial_merge_size;
  const int64_t N = features.dim(0);
  int64_t M = 0;
  for (const auto& g : grids) M += static_cast<int64_t>(g.grid_h / m) * (g.grid_w / m);

  tap(taps, ops_, "projector", -1, "in", features.data<float>(), N, V);
  Tensor normed = backend_tensor(ops_, N, V);
  ops_.rms_norm(features.data<float>(), w_.norm, cfg_.projector_norm_eps, N, V, normed.data<float>());
  tap(taps, ops_, "projector", -1, "norm", normed.data<float>(), N, V);
  Tensor merged = backend_tensor(ops_, M, V * m * m);
  int64_t in_off = 0, out_off = 0;
  for (const auto& g : grids) {
    ops_.patch_merge(normed.data<float>() + in_off * V, g.grid_h, g.grid_w, V, m,
                merged.data<float>() + out_off * V * m * m);
    in_off += g.n_patches();
    out_off += static_cast<int64_t>(g.grid_h / m) * (g.grid_w / m);
  }
  tap(taps, ops_, "projector", -1, "merged", merged.data<float>(), M, V * m * m);
  Tensor y = backend_tensor(ops_, M, V);
  ops_.matmul(merged.data<float>(), M, w_.merging_layer, y.data<float>());
  tap(taps, ops_, "projector", -1, "merge_out", y.data<float>(), M, V);
  Tensor z = backend_tensor(ops_, M, H);
  ops_.matmul(y.data<float>(), M, w_.linear_1, z.data<float>());
  ops_.gelu(z.data<float>(), M * H);
  tap(taps, ops_, "projector", -1, "act", z.data<float>(), M, H);
  Tensor out = backend_tensor(ops_, M, H);
  ops_.matmul(z.data<float>(), M, w_.linear_2, out.data<float>());
  tap(taps, ops_, "projector", -1, "out", out.data<float>(), M, H);
  return out;
}

}  // namespace locr::model
