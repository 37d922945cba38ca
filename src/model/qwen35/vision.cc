#include "model/qwen35/vision.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "model/taps.h"
#include "model/vision_common.h"

namespace locr::model::qwen35 {

namespace {

kernels::View view_of(kernels::Ops& ops, const Tensor& t) { return ops.f32(t.data<float>(), t.dim(0), t.dim(1)); }

void linear(kernels::Ops& ops, const kernels::View& x, const Linear& l, const kernels::View& y) {
  ops.matmul(x, l.w, y);
  ops.add_bias(y, l.b);
}

}  // namespace

std::unique_ptr<VisionState> VisionTower::begin(const float* patches, const std::vector<Grid>& grids,
                                                Taps* taps) const {
  const int64_t V = cfg_.hidden_size, hd = cfg_.head_dim(), I = cfg_.intermediate_size;
  const int64_t P = cfg_.patch_values();
  auto st = std::make_unique<VisionState>();
  st->grids = grids;
  int64_t N = 0;
  for (const Grid& g : grids) N += g.patches();
  st->n = N;

  // Host-side inputs: RoPE tables and the resampled position embeddings, image by image.
  std::vector<float> cos_h(N * hd / 2), sin_h(N * hd / 2), pos_h(N * V, 0.0f);
  {
    int64_t off = 0;
    const int side = cfg_.grid_side();
    for (const Grid& g : grids) {
      const RopeTable t = vision_rope(cfg_, g);
      std::copy(t.cos.begin(), t.cos.end(), cos_h.begin() + off * hd / 2);
      std::copy(t.sin.begin(), t.sin.end(), sin_h.begin() + off * hd / 2);
      const PosTaps taps4 = position_taps(g, side, cfg_.spatial_merge_size);
      for (int64_t r = 0; r < g.patches(); ++r) {
        float* dst = &pos_h[(off + r) * V];
        for (int k = 0; k < 4; ++k) {
          const float wgt = taps4.weight[r][k];
          for (int64_t c = 0; c < V; ++c) dst[c] += w_.pos_embed.at(taps4.index[r][k], c) * wgt;
        }
      }
      off += g.patches();
    }
  }
  st->cos = backend_tensor(ops_, N, hd / 2);
  st->sin = backend_tensor(ops_, N, hd / 2);
  Tensor pos = backend_tensor(ops_, N, V), in = backend_tensor(ops_, N, P);
  ops_.from_host(st->cos.raw(), cos_h.data(), cos_h.size() * sizeof(float));
  ops_.from_host(st->sin.raw(), sin_h.data(), sin_h.size() * sizeof(float));
  ops_.from_host(pos.raw(), pos_h.data(), pos_h.size() * sizeof(float));
  ops_.from_host(in.raw(), patches, static_cast<size_t>(N * P) * sizeof(float));

  st->x = backend_tensor(ops_, N, V);
  st->h = backend_tensor(ops_, N, V);
  st->qkv = backend_tensor(ops_, N, 3 * V);
  st->attn = backend_tensor(ops_, N, V);
  st->mlp = backend_tensor(ops_, N, I);
  const kernels::View x = view_of(ops_, st->x);
  linear(ops_, view_of(ops_, in), w_.patch_embed, x);
  tap(taps, ops_, "vision", -1, "patch_embed", x);
  ops_.add(x, view_of(ops_, pos));
  tap(taps, ops_, "vision", -1, "pos_embed", x);
  return st;
}

void VisionTower::run(VisionState& st, int n_layers, Taps* taps) const {
  const int64_t V = cfg_.hidden_size, hd = cfg_.head_dim(), nh = cfg_.num_heads;
  const kernels::View x = view_of(ops_, st.x), h = view_of(ops_, st.h), qkv = view_of(ops_, st.qkv);
  const kernels::View q = qkv.cols_range(0, V), k = qkv.cols_range(V, V), v = qkv.cols_range(2 * V, V);
  const kernels::View attn = view_of(ops_, st.attn), mlp = view_of(ops_, st.mlp);
  const kernels::View cv = view_of(ops_, st.cos), sv = view_of(ops_, st.sin);
  auto emit = [&](int l, const char* site, const kernels::View& t) { tap(taps, ops_, "vision", l, site, t); };
  const int end = std::min(cfg_.depth, st.next_layer + std::max(0, n_layers));
  std::vector<int64_t> image_patches;
  for (const Grid& g : st.grids) image_patches.push_back(g.patches());
  for (int l = st.next_layer; l < end; ++l) {
    const VisionBlockWeights& B = w_.blocks[l];
    ops_.layer_norm(x, B.norm1_w, B.norm1_b, cfg_.norm_eps, h);
    linear(ops_, h, B.qkv, qkv);
    ops_.rope(q, cv, sv);
    ops_.rope(k, cv, sv);
    attention_per_image(ops_, q, k, v, attn, image_patches, nh, hd);
    emit(l, "attn_out", attn);
    linear(ops_, attn, B.proj, h);
    ops_.add(x, h);
    ops_.layer_norm(x, B.norm2_w, B.norm2_b, cfg_.norm_eps, h);
    linear(ops_, h, B.fc1, mlp);
    ops_.gelu_tanh(mlp);
    linear(ops_, mlp, B.fc2, h);
    ops_.add(x, h);
    emit(l, "out", x);
  }
  st.next_layer = end;
}

Tensor VisionTower::finish(VisionState& st, Tensor* last_hidden, Taps* taps) const {
  run(st, cfg_.depth, taps);  // whatever blocks are left
  const int64_t V = cfg_.hidden_size, N = st.n;
  const int64_t m2 = static_cast<int64_t>(cfg_.spatial_merge_size) * cfg_.spatial_merge_size;
  const kernels::View x = view_of(ops_, st.x), h = view_of(ops_, st.h);
  if (last_hidden) {
    *last_hidden = Tensor::empty(DType::kF32, {N, V});
    ops_.to_host(last_hidden->raw(), x.f32(), static_cast<size_t>(N * V) * sizeof(float));
  }

  // Merger: LayerNorm per patch, then each merge block's m2 rows read as one row of m2 * V.
  ops_.layer_norm(x, w_.merger_norm_w, w_.merger_norm_b, cfg_.norm_eps, h);
  const int64_t M = N / m2;
  Tensor z_buf = backend_tensor(ops_, M, m2 * V), out = backend_tensor(ops_, M, cfg_.out_hidden_size);
  const kernels::View merged = ops_.f32(h.f32(), M, m2 * V), z = view_of(ops_, z_buf);
  linear(ops_, merged, w_.merger_fc1, z);
  ops_.gelu(z);
  linear(ops_, z, w_.merger_fc2, view_of(ops_, out));
  tap(taps, ops_, "vision", -1, "merger_out", view_of(ops_, out));
  ops_.synchronize();
  // The residual stream and the blocks' buffers are not needed any more.
  st.x = st.h = st.qkv = st.attn = st.mlp = st.cos = st.sin = Tensor();
  return out;
}

Tensor VisionTower::forward(const float* patches, const std::vector<Grid>& grids, Tensor* last_hidden,
                            Taps* taps) const {
  const std::unique_ptr<VisionState> st = begin(patches, grids, taps);
  run(*st, cfg_.depth, taps);
  return finish(*st, last_hidden, taps);
}

}  // namespace locr::model::qwen35
