#include "model/lightonocr/vision_encoder.h"

#include <algorithm>

#include "model/rope.h"
#include "model/taps.h"
#include "model/vision_common.h"

namespace locr::model {

Tensor VisionEncoder::forward(const float* patches, const std::vector<ImageGrid>& grids, Taps* taps) const {
  VisionState s = begin(patches, grids, taps);
  run_layers(s, cfg_.num_hidden_layers, taps);
  return s.x;
}

namespace {

// A 2-D F32 tensor of backend memory as a view for the ops.
kernels::View view_of(kernels::Ops& ops, const Tensor& t) {
  return ops.f32(t.data<float>(), t.dim(0), t.dim(1));
}

}  // namespace

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
  const kernels::View x = view_of(ops_, s.x);
  ops_.matmul(ops_.f32(patches, N, P), w_.patch_conv, x);
  tap(taps, ops_, "vision", -1, "patch_embed", x);
  ops_.rms_norm(x, w_.ln_pre, cfg_.norm_eps, x);
  tap(taps, ops_, "vision", -1, "ln_pre", x);
  ops_.synchronize();  // the host sources of the copies above go out of scope
  return s;
}

void VisionEncoder::run_layers(VisionState& s, int n_layers, Taps* taps) const {
  const int64_t V = cfg_.hidden_size, hd = cfg_.head_dim, nh = cfg_.num_attention_heads;
  const int64_t A = nh * hd, I = cfg_.intermediate_size;
  const int64_t N = s.n_patches();
  const int end = std::min(cfg_.num_hidden_layers, s.next_layer + n_layers);
  if (s.next_layer >= end) return;
  const kernels::View x = view_of(ops_, s.x);
  // The MLP over chunks of about kMlpChunkRows patches (equal sizes: no small last chunk): its
  // [gate | up] rows, 2 x intermediate_size floats per patch, would be the encoder's largest buffer
  // (281 MiB for an A4 page). Rows are independent and the CPU backends' matmuls give a row the
  // same bits whatever the number of rows, so there the chunking changes no number
  // (vision_mlp_chunks_test); on cuda cuBLASLt may choose another algorithm for another row count
  // (within the op table's tolerance). With taps one chunk (the "mlp_act" tap holds every row).
  const int64_t mlp_chunks = taps ? 1 : std::max<int64_t>(1, (N + kMlpChunkRows - 1) / kMlpChunkRows);
  const int64_t mlp_rows = (N + mlp_chunks - 1) / mlp_chunks;
  if (s.h.empty_tensor()) {
    s.h = backend_tensor(ops_, N, V);
    s.qkv = backend_tensor(ops_, N, 3 * A);
    s.attn = backend_tensor(ops_, N, A);
  }
  if (s.gate_up.empty_tensor() || s.gate_up.dim(0) < mlp_rows) s.gate_up = backend_tensor(ops_, mlp_rows, 2 * I);
  const kernels::View h = view_of(ops_, s.h);                    // normed input, then projections
  const kernels::View qkv = view_of(ops_, s.qkv);                // [q | k | v] of each patch
  const kernels::View q = qkv.cols_range(0, A), k = qkv.cols_range(A, A), v = qkv.cols_range(2 * A, A);
  const kernels::View attn = view_of(ops_, s.attn);
  const kernels::View gate_up_all = view_of(ops_, s.gate_up);    // [gate | up] of a chunk's patches
  const kernels::View cos = view_of(ops_, s.cos), sin = view_of(ops_, s.sin);
  auto emit = [&](int l, const char* site, const kernels::View& t) { tap(taps, ops_, "vision", l, site, t); };
  std::vector<int64_t> image_patches;
  for (const auto& g : s.grids) image_patches.push_back(g.n_patches());

  for (int l = s.next_layer; l < end; ++l) {
    const VisionLayerWeights& L = w_.layers[l];
    ops_.rms_norm(x, L.attention_norm, cfg_.norm_eps, h);
    emit(l, "attn_norm", h);
    ops_.matmul(h, L.qkv, qkv);
    ops_.rope(q, cos, sin);
    ops_.rope(k, cos, sin);
    emit(l, "q", q);
    emit(l, "k", k);
    emit(l, "v", v);
    attention_per_image(ops_, q, k, v, attn, image_patches, nh, hd);
    emit(l, "attn_out", attn);
    ops_.matmul(attn, L.o_proj, h);
    emit(l, "attn_proj", h);
    ops_.add(x, h);
    emit(l, "post_attn", x);

    ops_.rms_norm(x, L.ffn_norm, cfg_.norm_eps, h);
    emit(l, "ffn_norm", h);
    for (int64_t r0 = 0; r0 < N; r0 += mlp_rows) {
      // h's rows r0.. are read, then overwritten by the chunk's output; later rows are untouched.
      const int64_t c = std::min(mlp_rows, N - r0);
      const kernels::View gate_up = gate_up_all.rows_range(0, c);
      const kernels::View gate = gate_up.cols_range(0, I), up = gate_up.cols_range(I, I);
      ops_.matmul(h.rows_range(r0, c), L.gate_up, gate_up);
      ops_.silu_mul(gate, up, gate);  // in place: the activation in the gate half
      if (mlp_chunks == 1) emit(l, "mlp_act", gate);
      ops_.matmul(gate, L.down_proj, h.rows_range(r0, c));
    }
    emit(l, "mlp_out", h);
    ops_.add(x, h);
    emit(l, "out", x);
  }
  s.next_layer = end;
  if (done(s)) s.h = s.qkv = s.attn = s.gate_up = Tensor();  // the projector reads x alone
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

  auto emit = [&](const char* site, const kernels::View& t) { tap(taps, ops_, "projector", -1, site, t); };
  const kernels::View in = ops_.f32(features.data<float>(), N, V);
  emit("in", in);
  Tensor normed = backend_tensor(ops_, N, V);
  ops_.rms_norm(in, w_.norm, cfg_.projector_norm_eps, view_of(ops_, normed));
  emit("norm", view_of(ops_, normed));
  Tensor merged = backend_tensor(ops_, M, V * m * m);
  int64_t in_off = 0, out_off = 0;
  for (const auto& g : grids) {
    const int64_t n_in = g.n_patches(), n_out = static_cast<int64_t>(g.grid_h / m) * (g.grid_w / m);
    ops_.patch_merge(view_of(ops_, normed).rows_range(in_off, n_in), g.grid_h, g.grid_w, m,
                     view_of(ops_, merged).rows_range(out_off, n_out));
    in_off += n_in;
    out_off += n_out;
  }
  emit("merged", view_of(ops_, merged));
  Tensor y = backend_tensor(ops_, M, V);
  ops_.matmul(view_of(ops_, merged), w_.merging_layer, view_of(ops_, y));
  emit("merge_out", view_of(ops_, y));
  Tensor z = backend_tensor(ops_, M, H);
  ops_.matmul(view_of(ops_, y), w_.linear_1, view_of(ops_, z));
  ops_.gelu(view_of(ops_, z));
  emit("act", view_of(ops_, z));
  Tensor out = backend_tensor(ops_, M, H);
  ops_.matmul(view_of(ops_, z), w_.linear_2, view_of(ops_, out));
  emit("out", view_of(ops_, out));
  return out;
}

}  // namespace locr::model
