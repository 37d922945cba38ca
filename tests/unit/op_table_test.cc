// One op table, run on every backend: each op of kernels::Ops (src/kernels/ops.h) x every backend
// (ref, cpu-f32 and cpu-bf16 on every CPU ISA path, cuda) at awkward shapes, against the ref
// backend, through the interface alone: inputs go to the backend's memory with Ops::alloc /
// from_host and come back with to_host, so the same case runs on host and device backends.
// A backend this build or machine lacks is reported skipped (GTEST_SKIP), never absent; and
// OpTable.EveryOpOfTheInterfaceHasACase reads ops.h and fails when an op has no case here.
// Tolerances (docs/numerics.md, "Op table"): F32 backends 1e-5 relative to the output's scale
// (ref accumulates in double, cpu-f32 in float); BF16 backends (cpu-bf16, cuda round GEMM inputs,
// and cuda the attention query and KV rows, to BF16): 2^-6 of the scale; the CPU backends' matmul
// with quantized weights, which quantizes the activations too (Q8_0 per 32, Q8_K per 256): 2^-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/fp8.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/devices.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels {
namespace {

struct BackendCase {
  std::string name;  // ref, cpu-f32, cpu-bf16, cuda
  CpuIsa isa = CpuIsa::kAuto;
};

std::vector<BackendCase> backends() {
  std::vector<BackendCase> out{{"ref"}};
  for (CpuIsa isa : kAllCpuIsas) {
    out.push_back({"cpu-f32", isa});
    out.push_back({"cpu-bf16", isa});
  }
  out.push_back({"cuda"});
  return out;
}

std::string param_name(const testing::TestParamInfo<BackendCase>& info) {
  std::string s = info.param.name;
  if (info.param.isa != CpuIsa::kAuto) s += std::string("_") + cpu_isa_name(info.param.isa);
  for (char& c : s)
    if (c == '-') c = '_';
  return s;
}

using testing_util::hv;
using testing_util::hv_i32;
using testing_util::hv_kv;
using testing_util::make_matrix;
using testing_util::make_quantized_matrix;
using testing_util::random_vec;

// A buffer in a backend's memory.
template <class T>
struct Buf {
  Buf(Ops& ops, const std::vector<T>& host) : ops(ops), n(host.size()), p(ops.alloc(host.size() * sizeof(T))) {
    ops.from_host(p.get(), host.data(), n * sizeof(T));
  }
  Buf(Ops& ops, size_t n) : ops(ops), n(n), p(ops.alloc(n * sizeof(T))) {}
  T* get() const { return static_cast<T*>(p.get()); }
  // This buffer as a view of the backend's memory [rows, cols] (row stride `stride`, < 0: cols).
  View view(int64_t rows, int64_t cols, int64_t stride = -1) const {
    return View(p.get(), std::is_same_v<T, int32_t> ? DType::kI32 : DType::kF32, ops.memory(), rows, cols, stride);
  }
  View view() const { return view(1, static_cast<int64_t>(n)); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    ops.to_host(h.data(), p.get(), n * sizeof(T));
    return h;
  }
  Ops& ops;
  size_t n;
  std::shared_ptr<void> p;
};

// One case runs an op on `ops` and on `ref` and returns (candidate, reference) outputs.
using Outputs = std::pair<std::vector<float>, std::vector<float>>;
using CaseFn = std::function<Outputs(Ops& ops, Ops& ref)>;

// Every case, by the op it covers.
std::multimap<std::string, std::pair<std::string, CaseFn>>& cases() {
  static std::multimap<std::string, std::pair<std::string, CaseFn>> c;
  return c;
}

struct Register {
  Register(const char* op, const char* what, CaseFn fn) { cases().emplace(op, std::make_pair(what, std::move(fn))); }
};

// Runs `run(ops, ...)` on both with the same host inputs uploaded to each backend.
#define OP_CASE(op, what) static Register reg_##op##_##what(#op, #what, [](Ops & ops, Ops & ref) -> Outputs

OP_CASE(matmul, awkward_shapes_every_weight_dtype) {
  std::vector<float> got, want;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16})
    for (int64_t M : {1, 3, 17}) {
      const int64_t N = 37, K = 67;
      Matrix w = make_matrix(dt, N, K, 11 + static_cast<uint32_t>(M));
      Matrix wr = w;
      ops.prepare(w);
      const auto x = random_vec(static_cast<size_t>(M * K), 5);
      Buf<float> xb(ops, x), yb(ops, static_cast<size_t>(M * N));
      ops.matmul(xb.view(M, K), w, yb.view(M, N));
      std::vector<float> yr(M * N);
      ref.matmul(hv(x, M, K), wr, hv(yr, M, N));
      const auto y = yb.host();
      got.insert(got.end(), y.begin(), y.end());
      want.insert(want.end(), yr.begin(), yr.end());
    }
  return {got, want};
});

// The argmax of what this backend's own matmul writes (the op's contract, bit for bit), from a
// strided x, on a head wide enough for the CPU backends' screen (kernels/cpu/greedy_screen.h) and
// with two identical rows that are each row of x's largest (the first must win). The indices are
// compared exactly here; the returned pair also holds them.
OP_CASE(matmul_argmax, strided_rows_and_ties) {
  std::vector<float> got, want;
  for (DType dt : {DType::kBF16, DType::kF32})
    for (int64_t M : {1, 3}) {
      const int64_t N = 4100, K = 96, xs = K + 7;
      Matrix w = make_matrix(dt, N, K, 13 + static_cast<uint32_t>(M), 0.05f);
      auto x = random_vec(static_cast<size_t>(M * xs), 6, -2.0f, 2.0f);
      for (int64_t c = 0; c < K; ++c) x[c] = std::fabs(x[c]);  // row 0 of x: positive
      for (int64_t r : {1000, 3000})
        for (int64_t c = 0; c < K; ++c) {
          const float v = 0.05f;  // rows 1000 and 3000: the largest for row 0 of x
          if (dt == DType::kF32) {
            (*std::static_pointer_cast<std::vector<float>>(w.holder))[r * K + c] = v;
          } else {
            (*std::static_pointer_cast<std::vector<uint16_t>>(w.holder))[r * K + c] = f32_to_bf16(v);
          }
        }
      ops.prepare(w);
      ops.prepare_argmax(w);
      Buf<float> xb(ops, x), yb(ops, static_cast<size_t>(M * N));
      std::vector<int32_t> tok(static_cast<size_t>(M), -1);
      ops.matmul_argmax(xb.view(M, K, xs), w, tok.data());
      ops.matmul(xb.view(M, K, xs), w, yb.view(M, N));
      const auto y = yb.host();
      for (int64_t m = 0; m < M; ++m) {
        const int32_t best = static_cast<int32_t>(std::max_element(y.begin() + m * N, y.begin() + (m + 1) * N) -
                                                  (y.begin() + m * N));
        EXPECT_EQ(tok[m], best) << dtype_name(dt) << " M=" << M << " row " << m;
        if (m == 0) {
          EXPECT_EQ(best, 1000);
        }
        got.push_back(static_cast<float>(tok[m]));
        want.push_back(static_cast<float>(best));
      }
    }
  return {got, want};
});

// x a column range of a wider buffer, y written into a column range of another (few rows: the
// decode path; many: the blocked GEMM), the columns around y left as they were.
OP_CASE(matmul, strided_input_and_output) {
  std::vector<float> got, want;
  for (int64_t M : {2, 40}) {
    const int64_t N = 29, K = 45, xs = K + 19, ys = N + 11;
    Matrix w = make_matrix(DType::kBF16, N, K, 12);
    Matrix wr = w;
    ops.prepare(w);
    const auto x = random_vec(static_cast<size_t>(M * xs), 6);
    const auto y0 = random_vec(static_cast<size_t>(M * ys), 7);
    Buf<float> xb(ops, x), yb(ops, y0);
    ops.matmul(xb.view(M, xs, xs).cols_range(5, K), w, yb.view(M, ys, ys).cols_range(3, N));
    std::vector<float> yr = y0;
    ref.matmul(hv(x, M, xs).cols_range(5, K), wr, hv(yr, M, ys).cols_range(3, N));
    const auto y = yb.host();
    got.insert(got.end(), y.begin(), y.end());
    want.insert(want.end(), yr.begin(), yr.end());
  }
  return {got, want};
});

// q/k/v-like parts stacked (Ops::prepare_stack: fused or not, the backend's choice) against ref
// multiplying each part on its own.
OP_CASE(matmul, stacked_parts) {
  std::vector<float> got, want;
  for (int64_t M : {1, 19}) {
    const int64_t K = 48;
    StackedMatrix st;
    for (int64_t n : {32, 16, 16}) st.parts.push_back(make_matrix(DType::kBF16, n, K, 30 + static_cast<uint32_t>(n)));
    const std::vector<Matrix> parts = st.parts;
    ops.prepare_stack(st);
    const int64_t N = st.rows();
    const auto x = random_vec(static_cast<size_t>(M * K), 8);
    Buf<float> xb(ops, x), yb(ops, static_cast<size_t>(M * N));
    ops.matmul(xb.view(M, K), st, yb.view(M, N));
    std::vector<float> yr(M * N);
    int64_t c0 = 0;
    for (const Matrix& p : parts) {
      ref.matmul(hv(x, M, K), p, hv(yr, M, N).cols_range(c0, p.rows));
      c0 += p.rows;
    }
    const auto y = yb.host();
    got.insert(got.end(), y.begin(), y.end());
    want.insert(want.end(), yr.begin(), yr.end());
  }
  return {got, want};
});

// GGUF Q8_0, Q4_K and Q6_K weights (llama.cpp's quantizers) against ref's exact dequantization:
// rows of fewer units of 32 weights than a warp has lanes (K = 96) and more (K = 1184), and row
// counts for cuda's GEMV (M <= 8) and its dequantizing GEMM (M = 17).
OP_CASE(matmul, quantized_weights) {
  std::vector<float> got, want;
  const std::pair<DType, int64_t> shapes[] = {
      {DType::kQ8_0, 96}, {DType::kQ8_0, 1184}, {DType::kQ4_K, 512}, {DType::kQ6_K, 256}};
  for (const auto& [dt, K] : shapes)
    for (int64_t M : {1, 3, 17}) {
      const int64_t N = 37;
      Matrix w = make_quantized_matrix(dt, N, K, 31 + static_cast<uint32_t>(M + K));
      Matrix wr = w;
      ops.prepare(w);
      const auto x = random_vec(static_cast<size_t>(M * K), 6 + static_cast<uint32_t>(M));
      Buf<float> xb(ops, x), yb(ops, static_cast<size_t>(M * N));
      ops.matmul(xb.view(M, K), w, yb.view(M, N));
      std::vector<float> yr(M * N);
      ref.matmul(hv(x, M, K), wr, hv(yr, M, N));
      const auto y = yb.host();
      got.insert(got.end(), y.begin(), y.end());
      want.insert(want.end(), yr.begin(), yr.end());
    }
  return {got, want};
});

OP_CASE(rms_norm, rows_and_in_place) {
  const int64_t rows = 5, dim = 67;
  Matrix w = make_matrix(DType::kBF16, 1, dim, 3);
  const auto x = random_vec(static_cast<size_t>(rows * dim), 4, -3, 3);
  Buf<float> xb(ops, x), yb(ops, x.size());
  ops.rms_norm(xb.view(rows, dim), w, 1e-6f, yb.view(rows, dim));
  ops.rms_norm(xb.view(rows, dim), w, 1e-6f, xb.view(rows, dim));  // in place
  std::vector<float> yr(x.size()), xr = x;
  ref.rms_norm(hv(x, rows, dim), w, 1e-6f, hv(yr, rows, dim));
  ref.rms_norm(hv(xr, rows, dim), w, 1e-6f, hv(xr, rows, dim));
  auto got = yb.host(), in_place = xb.host();
  got.insert(got.end(), in_place.begin(), in_place.end());
  yr.insert(yr.end(), xr.begin(), xr.end());
  return {got, yr};
});

// The per-head q norm of the decoder: groups of head_dim in a column range of a stacked row, in place.
OP_CASE(rms_norm, heads_of_a_strided_view) {
  const int64_t rows = 4, heads = 3, hd = 20, stride = heads * hd + 2 * hd + 5;
  Matrix w = make_matrix(DType::kBF16, 1, hd, 9);
  const auto x = random_vec(static_cast<size_t>(rows * stride), 10, -3, 3);
  Buf<float> xb(ops, x);
  ops.rms_norm(xb.view(rows, stride, stride).cols_range(hd, heads * hd), w, 1e-6f,
               xb.view(rows, stride, stride).cols_range(hd, heads * hd));
  std::vector<float> xr = x;
  ref.rms_norm(hv(xr, rows, stride).cols_range(hd, heads * hd), w, 1e-6f,
               hv(xr, rows, stride).cols_range(hd, heads * hd));
  return {xb.host(), xr};
});

OP_CASE(rope, strided_rows) {
  const int64_t rows = 3, heads = 3, hd = 16, stride = heads * hd + 5;
  const auto x = random_vec(static_cast<size_t>(rows * stride), 6);
  const auto cos = random_vec(static_cast<size_t>(rows * hd / 2), 7), sin = random_vec(cos.size(), 8);
  Buf<float> xb(ops, x), cb(ops, cos), sb(ops, sin);
  ops.rope(xb.view(rows, heads * hd, stride), cb.view(rows, hd / 2), sb.view(rows, hd / 2));
  std::vector<float> xr = x;
  ref.rope(hv(xr, rows, heads * hd, stride), hv(cos, rows, hd / 2), hv(sin, rows, hd / 2));
  return {xb.host(), xr};
});

OP_CASE(silu_mul, odd_length) {
  const int64_t n = 1001;
  const auto g = random_vec(n, 9, -8, 8), u = random_vec(n, 10);
  Buf<float> gb(ops, g), ub(ops, u), ob(ops, n);
  ops.silu_mul(gb.view(), ub.view(), ob.view());
  std::vector<float> o(n);
  ref.silu_mul(hv(g, 1, n), hv(u, 1, n), hv(o, 1, n));
  return {ob.host(), o};
});

// The decoder's MLP: [gate | up] rows, the activation written over the gate half.
OP_CASE(silu_mul, gate_half_of_stacked_rows_in_place) {
  const int64_t rows = 7, n = 33;
  const auto gu = random_vec(static_cast<size_t>(rows * 2 * n), 11, -8, 8);
  Buf<float> b(ops, gu);
  const View all = b.view(rows, 2 * n);
  ops.silu_mul(all.cols_range(0, n), all.cols_range(n, n), all.cols_range(0, n));
  std::vector<float> r = gu;
  const View allr = hv(r, rows, 2 * n);
  ref.silu_mul(allr.cols_range(0, n), allr.cols_range(n, n), allr.cols_range(0, n));
  return {b.host(), r};
});

OP_CASE(gelu, odd_length_wide_range) {
  const auto x = random_vec(1001, 12, -7, 7);
  Buf<float> xb(ops, x);
  ops.gelu(xb.view());
  std::vector<float> xr = x;
  ref.gelu(hv(xr, 1, static_cast<int64_t>(xr.size())));
  return {xb.host(), xr};
});

OP_CASE(add, odd_length) {
  const auto y = random_vec(1001, 13), x = random_vec(1001, 14);
  Buf<float> yb(ops, y), xb(ops, x);
  ops.add(yb.view(), xb.view());
  std::vector<float> yr = y;
  ref.add(hv(yr, 1, 1001), hv(x, 1, 1001));
  return {yb.host(), yr};
});

OP_CASE(attention, contiguous_gqa_causal_and_not) {
  std::vector<float> got, want;
  for (bool causal : {false, true}) {
    AttentionParams p;
    p.n_kv = 13;
    p.n_heads = 4, p.n_kv_heads = 2, p.head_dim = 64;
    p.scale = 0.125f;
    p.causal = causal;
    const int64_t n = 13, w = p.n_heads * p.head_dim;  // k/v use the first kv heads' columns
    const auto q = random_vec(static_cast<size_t>(n * w), 15);
    const auto k = random_vec(q.size(), 16), v = random_vec(q.size(), 17);
    Buf<float> qb(ops, q), kb(ops, k), vb(ops, v), ob(ops, q.size());
    ops.attention(qb.view(n, w), kb.view(n, w), vb.view(n, w), ob.view(n, w), p);
    std::vector<float> o(q.size());
    ref.attention(hv(q, n, w), hv(k, n, w), hv(v, n, w), hv(o, n, w), p);
    const auto h = ob.host();
    got.insert(got.end(), h.begin(), h.end());
    want.insert(want.end(), o.begin(), o.end());
  }
  return {got, want};
});

// The vision encoder's case: q, k and v column ranges of one stacked [q | k | v] buffer.
OP_CASE(attention, stacked_qkv_rows) {
  AttentionParams p;
  p.n_kv = 11;
  p.n_heads = p.n_kv_heads = 2, p.head_dim = 64;
  p.scale = 0.125f;
  const int64_t n = 11, w = p.n_heads * p.head_dim;
  const auto qkv = random_vec(static_cast<size_t>(n * 3 * w), 18);
  Buf<float> b(ops, qkv), ob(ops, static_cast<size_t>(n * w));
  const View all = b.view(n, 3 * w), allr = hv(qkv, n, 3 * w);
  ops.attention(all.cols_range(0, w), all.cols_range(w, w), all.cols_range(2 * w, w), ob.view(n, w), p);
  std::vector<float> o(static_cast<size_t>(n * w));
  ref.attention(allr.cols_range(0, w), allr.cols_range(w, w), allr.cols_range(2 * w, w), hv(o, n, w), p);
  return {ob.host(), o};
});

OP_CASE(embed, bf16_table) {
  Matrix t = make_matrix(DType::kBF16, 50, 67, 18);
  const std::vector<int32_t> ids{3, 0, 49, 3, 17, 8, 22};
  const int64_t n = static_cast<int64_t>(ids.size());
  Buf<int32_t> ib(ops, ids);
  Buf<float> ob(ops, ids.size() * 67);
  ops.embed(t, ib.view(), ob.view(n, 67));
  std::vector<float> o(ids.size() * 67);
  ref.embed(t, hv_i32(ids), hv(o, n, 67));
  return {ob.host(), o};
});

// A GGUF's quantized token_embd (Q8_0, Q4_K, Q6_K): rows decoded as Matrix::at.
OP_CASE(embed, quantized_tables) {
  std::vector<float> got, want;
  const std::vector<int32_t> ids{3, 0, 49, 3, 17};
  for (DType dt : {DType::kQ8_0, DType::kQ4_K, DType::kQ6_K}) {
    const int64_t dim = dt == DType::kQ8_0 ? 96 : 256;
    Matrix t = make_quantized_matrix(dt, 50, dim, 26);
    Buf<int32_t> ib(ops, ids);
    Buf<float> ob(ops, ids.size() * dim);
    const int64_t n = static_cast<int64_t>(ids.size());
    ops.embed(t, ib.view(), ob.view(n, dim));
    std::vector<float> o(ids.size() * dim);
    ref.embed(t, hv_i32(ids), hv(o, n, dim));
    const auto h = ob.host();
    got.insert(got.end(), h.begin(), h.end());
    want.insert(want.end(), o.begin(), o.end());
  }
  return {got, want};
});

OP_CASE(add_rms_norm, residual_and_norm) {
  const int64_t rows = 5, dim = 67;
  Matrix w = make_matrix(DType::kBF16, 1, dim, 19);
  const auto x = random_vec(static_cast<size_t>(rows * dim), 20), d = random_vec(x.size(), 21);
  Buf<float> xb(ops, x), db(ops, d), yb(ops, x.size());
  ops.add_rms_norm(xb.view(rows, dim), db.view(rows, dim), w, 1e-6f, yb.view(rows, dim));
  std::vector<float> xr = x, yr(x.size());
  ref.add_rms_norm(hv(xr, rows, dim), hv(d, rows, dim), w, 1e-6f, hv(yr, rows, dim));
  auto got = yb.host(), xs = xb.host();
  got.insert(got.end(), xs.begin(), xs.end());
  yr.insert(yr.end(), xr.begin(), xr.end());
  return {got, yr};
});

// A pool of `rows` rows of kv layer `kv` (dtype = the backend's KV dtype) in backend memory.
struct Pool {
  Pool(Ops& ops, DType dt, int64_t rows, int64_t nkv, int64_t hd)
      : k(ops.alloc(rows * nkv * hd * dtype_size(dt))), v(ops.alloc(rows * nkv * hd * dtype_size(dt))),
        ks(ops.alloc(rows * nkv * 4)), vs(ops.alloc(rows * nkv * 4)) {
    kv.dtype = dt, kv.k = k.get(), kv.v = v.get(), kv.n_kv_heads = nkv, kv.head_dim = hd, kv.rows = rows;
    if (dt == DType::kF8E4M3) kv.k_scale = static_cast<float*>(ks.get()), kv.v_scale = static_cast<float*>(vs.get());
  }
  std::shared_ptr<void> k, v, ks, vs;
  KvLayer kv;
};

// The stored rows `slots` (keys, then values), decoded to F32 on the host.
std::vector<float> decode_rows(Ops& ops, const Pool& p, const std::vector<int32_t>& slots) {
  const int64_t w = p.kv.width(), nkv = p.kv.n_kv_heads, hd = p.kv.head_dim;
  const int64_t rows = *std::max_element(slots.begin(), slots.end()) + 1;
  std::vector<uint8_t> k(rows * w * dtype_size(p.kv.dtype)), v(k.size());
  std::vector<float> ks(rows * nkv), vs(rows * nkv);
  ops.to_host(k.data(), p.k.get(), k.size());
  ops.to_host(v.data(), p.v.get(), v.size());
  if (p.kv.k_scale) {
    ops.to_host(ks.data(), p.kv.k_scale, ks.size() * 4);
    ops.to_host(vs.data(), p.kv.v_scale, vs.size() * 4);
  }
  std::vector<float> out;
  for (const uint8_t* src : {k.data(), v.data()}) {
    const float* sc = src == k.data() ? ks.data() : vs.data();
    for (int32_t s : slots)
      for (int64_t i = 0; i < w; ++i) {
        const int64_t e = s * w + i;
        float f = 0;
        if (p.kv.dtype == DType::kF32) std::memcpy(&f, src + e * 4, 4);
        if (p.kv.dtype == DType::kBF16) {
          uint16_t b;
          std::memcpy(&b, src + e * 2, 2);
          f = bf16_to_f32(b);
        }
        if (p.kv.dtype == DType::kF8E4M3) f = fp8_e4m3_to_f32(src[e]) * sc[s * nkv + i / hd];
        out.push_back(f);
      }
  }
  return out;
}

OP_CASE(kv_store, scattered_slots_every_kv_dtype) {
  std::vector<float> got, want;
  const int64_t nkv = 2, hd = 64, stride = nkv * hd + 3, n = 5;
  const std::vector<int32_t> slots{9, 2, 14, 0, 7};
  const auto k = random_vec(static_cast<size_t>(n * stride), 22, -4, 4), v = random_vec(k.size(), 23, -4, 4);
  std::vector<DType> dts{DType::kF32, DType::kBF16, DType::kF8E4M3};
  if (!ops.host_memory()) dts = {ops.kv_dtype(), DType::kF8E4M3};  // a device backend: its own, or FP8
  for (DType dt : dts) {
    Pool p(ops, dt, 16, nkv, hd), pr(ref, dt, 16, nkv, hd);
    Buf<float> kb(ops, k), vb(ops, v);
    Buf<int32_t> sb(ops, slots);
    ops.kv_store(kb.view(n, nkv * hd, stride), vb.view(n, nkv * hd, stride), sb.view(), p.kv);
    ref.kv_store(hv(k, n, nkv * hd, stride), hv(v, n, nkv * hd, stride), hv_i32(slots), pr.kv);
    const auto g = decode_rows(ops, p, slots), w = decode_rows(ref, pr, slots);
    got.insert(got.end(), g.begin(), g.end());
    want.insert(want.end(), w.begin(), w.end());
  }
  return {got, want};
});

OP_CASE(paged_attention, three_sequences_shuffled_blocks) {
  const int64_t nq = 4, nkv = 2, hd = 64, bs = 4, qw = nq * hd, w = nkv * hd;
  // (pos0, n_new) per sequence: a decode, a fresh prefill, a chunk after 20 cached keys.
  const std::vector<std::pair<int64_t, int64_t>> seqs{{5, 1}, {0, 4}, {20, 9}};
  const int64_t max_blocks = 8, n_seqs = 3;
  std::vector<int32_t> tables(n_seqs * max_blocks, 0), cu_q{0}, seq_lens;
  std::vector<int32_t> perm(24);
  for (int i = 0; i < 24; ++i) perm[i] = (i * 7 + 3) % 24;  // every block once, shuffled
  int next = 0;
  for (int64_t i = 0; i < n_seqs; ++i) {
    const int64_t len = seqs[i].first + seqs[i].second;
    for (int64_t b = 0; b < (len + bs - 1) / bs; ++b) tables[i * max_blocks + b] = perm[next++];
    cu_q.push_back(cu_q.back() + static_cast<int32_t>(seqs[i].second));
    seq_lens.push_back(static_cast<int32_t>(len));
  }
  const int64_t rows = cu_q.back();
  // Every cached and new key/value row, stored by ref into a host pool of the backend's KV dtype
  // (then of FP8), then copied to the backend: both attend over the same stored bits.
  const auto q = random_vec(static_cast<size_t>(rows * qw), 24);
  std::vector<float> got, want;
  for (DType dt : {ops.kv_dtype() == DType::kBF16 ? DType::kBF16 : DType::kF32, DType::kF8E4M3}) {
    Pool host(ref, dt, 24 * bs, nkv, hd);
    for (int64_t i = 0; i < n_seqs; ++i)
      for (int64_t j = 0; j < seq_lens[i]; ++j) {
        const auto kv = random_vec(static_cast<size_t>(2 * w), static_cast<uint32_t>(100 + i * 64 + j));
        const int32_t slot = tables[i * max_blocks + j / bs] * bs + static_cast<int32_t>(j % bs);
        ref.kv_store(hv(kv.data(), 1, w), hv(kv.data() + w, 1, w), hv_i32({slot}), host.kv);
      }
    Pool dev(ops, dt, 24 * bs, nkv, hd);
    const size_t bytes = static_cast<size_t>(24 * bs * w) * dtype_size(dt), scale_bytes = 24 * bs * nkv * 4;
    ops.from_host(dev.k.get(), host.k.get(), bytes);
    ops.from_host(dev.v.get(), host.v.get(), bytes);
    if (dt == DType::kF8E4M3) {
      ops.from_host(dev.ks.get(), host.ks.get(), scale_bytes);
      ops.from_host(dev.vs.get(), host.vs.get(), scale_bytes);
    }
    Buf<float> qb(ops, q), ob(ops, q.size());
    Buf<int32_t> tb(ops, tables), cb(ops, cu_q), lb(ops, seq_lens);
    PagedBatch b;
    b.n_seqs = n_seqs;
    b.cu_q = cb.get(), b.seq_lens = lb.get(), b.tables = tb.get();
    b.host_cu_q = cu_q.data(), b.host_seq_lens = seq_lens.data(), b.host_tables = tables.data();
    b.max_blocks = max_blocks, b.block_size = bs, b.max_q = 9, b.max_seq_len = 29;
    ops.paged_attention(qb.view(rows, qw), dev.kv, b, 0.125f, ob.view(rows, qw));
    PagedBatch bh = b;
    bh.cu_q = cu_q.data(), bh.seq_lens = seq_lens.data(), bh.tables = tables.data();
    std::vector<float> o(q.size());
    ref.paged_attention(hv(q, rows, qw), host.kv, bh, 0.125f, hv(o, rows, qw));
    const auto h = ob.host();
    got.insert(got.end(), h.begin(), h.end());
    want.insert(want.end(), o.begin(), o.end());
  }
  return {got, want};
});

OP_CASE(patch_merge, odd_grid) {
  const int gh = 5, gw = 6, m = 2;
  const int64_t d = 7;
  const auto x = random_vec(static_cast<size_t>(gh * gw * d), 25);
  const size_t n_out = static_cast<size_t>((gh / m) * (gw / m) * d * m * m);
  Buf<float> xb(ops, x), ob(ops, n_out);
  const int64_t n_rows = (gh / m) * (gw / m);
  ops.patch_merge(xb.view(gh * gw, d), gh, gw, m, ob.view(n_rows, d * m * m));
  std::vector<float> o(n_out);
  ref.patch_merge(hv(x, gh * gw, d), gh, gw, m, hv(o, n_rows, d * m * m));
  return {ob.host(), o};
});

// ---- The Qwen3.5 family ----

// LayerNorm of a column range (strided), weights BF16 and F32, and in place.
OP_CASE(layer_norm, strided_and_in_place) {
  const int64_t rows = 6, dim = 67, stride = dim + 9;
  Matrix w = make_matrix(DType::kBF16, 1, dim, 40), b = make_matrix(DType::kF32, 1, dim, 41);
  const auto x = random_vec(static_cast<size_t>(rows * stride), 42, -2, 4);
  Buf<float> xb(ops, x), yb(ops, static_cast<size_t>(rows * dim));
  ops.layer_norm(xb.view(rows, stride).cols_range(4, dim), w, b, 1e-6f, yb.view(rows, dim));
  ops.layer_norm(xb.view(rows, stride).cols_range(4, dim), w, b, 1e-6f, xb.view(rows, stride).cols_range(4, dim));
  std::vector<float> xr = x, yr(static_cast<size_t>(rows * dim));
  ref.layer_norm(hv(xr, rows, stride).cols_range(4, dim), w, b, 1e-6f, hv(yr, rows, dim));
  ref.layer_norm(hv(xr, rows, stride).cols_range(4, dim), w, b, 1e-6f, hv(xr, rows, stride).cols_range(4, dim));
  auto got = yb.host(), in_place = xb.host();
  got.insert(got.end(), in_place.begin(), in_place.end());
  yr.insert(yr.end(), xr.begin(), xr.end());
  return {got, yr};
});

OP_CASE(add_bias, strided_rows) {
  const int64_t rows = 5, n = 37, stride = n + 6;
  Matrix b = make_matrix(DType::kBF16, 1, n, 43);
  const auto y = random_vec(static_cast<size_t>(rows * stride), 44);
  Buf<float> yb(ops, y);
  ops.add_bias(yb.view(rows, stride).cols_range(2, n), b);
  std::vector<float> yr = y;
  ref.add_bias(hv(yr, rows, stride).cols_range(2, n), b);
  return {yb.host(), yr};
});

OP_CASE(gelu_tanh, odd_length_wide_range) {
  const auto x = random_vec(1001, 45, -12, 7);
  Buf<float> xb(ops, x);
  ops.gelu_tanh(xb.view());
  std::vector<float> xr = x;
  ref.gelu_tanh(hv(xr, 1, static_cast<int64_t>(xr.size())));
  return {xb.host(), xr};
});

// The attention output gate: [q | gate] rows, the gated output over the attention output in place.
OP_CASE(sigmoid_mul, gate_columns_in_place) {
  const int64_t rows = 7, n = 33;
  const auto qg = random_vec(static_cast<size_t>(rows * 2 * n), 46, -10, 10);
  const auto o = random_vec(static_cast<size_t>(rows * n), 47);
  Buf<float> gb(ops, qg), ob(ops, o);
  ops.sigmoid_mul(gb.view(rows, 2 * n).cols_range(n, n), ob.view(rows, n), ob.view(rows, n));
  std::vector<float> r = o;
  ref.sigmoid_mul(hv(qg, rows, 2 * n).cols_range(n, n), hv(r, rows, n), hv(r, rows, n));
  return {ob.host(), r};
});

// The step arrays of a StateBatch in a backend's memory, with their host copies.
struct States {
  States(Ops& ops, const std::vector<int64_t>& lens, const std::vector<int32_t>& slots_,
         const std::vector<int32_t>& fresh_)
      : slots(slots_), fresh(fresh_), cb(ops, cu_of(lens)), sb(ops, slots), fb(ops, fresh) {
    cu = cu_of(lens);
    b.n_seqs = static_cast<int64_t>(lens.size());
    b.cu_q = cb.get(), b.slots = sb.get(), b.fresh = fb.get();
    b.host_cu_q = cu.data(), b.host_slots = slots.data(), b.host_fresh = fresh.data();
    b.max_q = *std::max_element(lens.begin(), lens.end());
  }
  static std::vector<int32_t> cu_of(const std::vector<int64_t>& lens) {
    std::vector<int32_t> c{0};
    for (int64_t n : lens) c.push_back(c.back() + static_cast<int32_t>(n));
    return c;
  }
  // The same batch for the host (ref): every array its host copy.
  StateBatch host() const {
    StateBatch h = b;
    h.cu_q = cu.data(), h.slots = slots.data(), h.fresh = fresh.data();
    return h;
  }
  std::vector<int32_t> cu, slots, fresh;
  Buf<int32_t> cb, sb, fb;
  StateBatch b;
};

// Four sequences (a prefill, decodes, an empty one) in shuffled slots, fresh and carried, x a
// column range of the stacked projection; then a second step from the states the first left.
OP_CASE(conv1d_silu, batch_of_sequences_two_steps) {
  const int64_t C = 70, K = 4, xs = C + 13, sw = (K - 1) * C, n_slots = 5;
  Matrix w = make_matrix(DType::kBF16, C, K, 48, 0.6f);
  const auto s0 = random_vec(static_cast<size_t>(n_slots * sw), 49, -2, 2);
  Buf<float> st(ops, s0);
  std::vector<float> sr = s0, got, want;
  const std::vector<std::vector<int64_t>> lens{{11, 1, 0, 2}, {1, 1, 3, 1}};
  const std::vector<std::vector<int32_t>> fresh{{1, 0, 1, 0}, {0, 0, 1, 0}};
  const std::vector<int32_t> slots{3, 0, 4, 1};
  for (size_t step = 0; step < lens.size(); ++step) {
    States b(ops, lens[step], slots, fresh[step]);
    const int64_t rows = b.cu.back();
    const auto x = random_vec(static_cast<size_t>(rows * xs), 50 + static_cast<uint32_t>(step), -2, 2);
    Buf<float> xb(ops, x), ob(ops, static_cast<size_t>(rows * C));
    ops.conv1d_silu(xb.view(rows, xs).cols_range(5, C), w, st.view(n_slots, sw), b.b, ob.view(rows, C));
    std::vector<float> o(static_cast<size_t>(rows * C));
    ref.conv1d_silu(hv(x, rows, xs).cols_range(5, C), w, hv(sr, n_slots, sw), b.host(), hv(o, rows, C));
    const auto h = ob.host();
    got.insert(got.end(), h.begin(), h.end());
    want.insert(want.end(), o.begin(), o.end());
  }
  const auto h = st.host();
  got.insert(got.end(), h.begin(), h.end());
  want.insert(want.end(), sr.begin(), sr.end());
  return {got, want};
});

// Three sequences with two value heads per key head, k_dim != v_dim, q/k/v column ranges of one
// buffer (the conv's output), a prefill then a decode step from the carried states.
OP_CASE(gated_delta_net, batch_of_sequences_two_steps) {
  DeltaNetParams p;
  p.n_k_heads = 2, p.n_v_heads = 4, p.k_dim = 40, p.v_dim = 24;
  const int64_t nq = p.n_k_heads * p.k_dim, nvv = p.n_v_heads * p.v_dim, width = 2 * nq + nvv + 3;
  const int64_t ab = 2 * p.n_v_heads + 1, n_slots = 4, sf = p.state_floats();
  Matrix a_log = make_matrix(DType::kBF16, 1, p.n_v_heads, 51), dt = make_matrix(DType::kF32, 1, p.n_v_heads, 52);
  const auto s0 = random_vec(static_cast<size_t>(n_slots * sf), 53, -0.5f, 0.5f);
  Buf<float> st(ops, s0);
  std::vector<float> sr = s0, got, want;
  const std::vector<std::vector<int64_t>> lens{{9, 1, 20}, {1, 1, 1}};
  const std::vector<std::vector<int32_t>> fresh{{0, 1, 1}, {0, 0, 0}};
  const std::vector<int32_t> slots{2, 0, 3};
  for (size_t step = 0; step < lens.size(); ++step) {
    States b(ops, lens[step], slots, fresh[step]);
    const int64_t rows = b.cu.back();
    const auto x = random_vec(static_cast<size_t>(rows * width), 54 + static_cast<uint32_t>(step));
    const auto g = random_vec(static_cast<size_t>(rows * ab), 56 + static_cast<uint32_t>(step), -4, 4);
    Buf<float> xb(ops, x), gb(ops, g), ob(ops, static_cast<size_t>(rows * nvv));
    const View xv = xb.view(rows, width), gv = gb.view(rows, ab);
    ops.gated_delta_net(xv.cols_range(0, nq), xv.cols_range(nq, nq), xv.cols_range(2 * nq, nvv),
                        gv.cols_range(0, p.n_v_heads), gv.cols_range(p.n_v_heads + 1, p.n_v_heads), a_log, dt,
                        st.view(n_slots, sf), b.b, p, ob.view(rows, nvv));
    const View xh = hv(x, rows, width), gh = hv(g, rows, ab);
    std::vector<float> o(static_cast<size_t>(rows * nvv));
    ref.gated_delta_net(xh.cols_range(0, nq), xh.cols_range(nq, nq), xh.cols_range(2 * nq, nvv),
                        gh.cols_range(0, p.n_v_heads), gh.cols_range(p.n_v_heads + 1, p.n_v_heads), a_log, dt,
                        hv(sr, n_slots, sf), b.host(), p, hv(o, rows, nvv));
    const auto h = ob.host();
    got.insert(got.end(), h.begin(), h.end());
    want.insert(want.end(), o.begin(), o.end());
  }
  const auto h = st.host();
  got.insert(got.end(), h.begin(), h.end());
  want.insert(want.end(), sr.begin(), sr.end());
  return {got, want};
});

class OpTable : public testing::TestWithParam<BackendCase> {
 protected:
  void SetUp() override {
    const BackendCase& b = GetParam();
    if (b.name == "cuda") {
      std::string why;
      if (!cuda_usable(&why)) GTEST_SKIP() << "backend cuda: " << why;
      ops_ = make_ops("cuda");
    } else if (b.isa != CpuIsa::kAuto) {
      if (!cpu_isa_supported(b.isa)) GTEST_SKIP() << "this CPU lacks " << cpu_isa_name(b.isa);
      ops_ = make_cpu_ops(b.name == "cpu-f32" ? CpuPrecision::kF32 : CpuPrecision::kBF16, b.isa);
    } else {
      ops_ = make_ops(b.name);
    }
    ref_ = make_ops("ref");
  }
  double rtol(const std::string& what) const {
    const std::string& b = GetParam().name;
    const double base = b == "cpu-bf16" || b == "cuda" ? 1.0 / 64 : 1e-5;
    return what == "quantized_weights" && b.rfind("cpu", 0) == 0 ? 1.0 / 32 : base;
  }

  void run_op(const std::string& op) {
    auto [lo, hi] = cases().equal_range(op);
    ASSERT_NE(lo, hi) << "op " << op << " has no case";
    for (auto it = lo; it != hi; ++it) {
      SCOPED_TRACE(op + "/" + it->second.first);
      const auto [got, want] = it->second.second(*ops_, *ref_);
      ASSERT_EQ(got.size(), want.size());
      ASSERT_FALSE(want.empty());
      double scale = 0;
      for (float w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
      const double tol = rtol(it->second.first) * std::max(scale, 1e-3);
      int bad = 0;
      for (size_t i = 0; i < got.size() && bad < 5; ++i)
        if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
          ++bad;
          ADD_FAILURE() << "element " << i << ": " << got[i] << " vs ref " << want[i] << " (tol " << tol << ")";
        }
    }
  }
  std::unique_ptr<Ops> ops_, ref_;
};

// One test per op, so a backend that lacks an op shows up by name.
#define OP_TEST(op) \
  TEST_P(OpTable, op) { run_op(#op); }
OP_TEST(matmul)
OP_TEST(matmul_argmax)
OP_TEST(rms_norm)
OP_TEST(rope)
OP_TEST(silu_mul)
OP_TEST(gelu)
OP_TEST(add)
OP_TEST(attention)
OP_TEST(embed)
OP_TEST(add_rms_norm)
OP_TEST(kv_store)
OP_TEST(paged_attention)
OP_TEST(patch_merge)
OP_TEST(layer_norm)
OP_TEST(add_bias)
OP_TEST(gelu_tanh)
OP_TEST(sigmoid_mul)
OP_TEST(conv1d_silu)
OP_TEST(gated_delta_net)

INSTANTIATE_TEST_SUITE_P(Backends, OpTable, testing::ValuesIn(backends()), param_name);

// The ops of the interface, read from its header: every backend hook (a private `run_<op>` of
// kernels::Ops) must have a case above and a test.
TEST(OpTableCoverage, EveryOpOfTheInterfaceHasACase) {
  std::ifstream f(std::string(LOCR_SOURCE_DIR) + "/kernels/ops.h");
  ASSERT_TRUE(f) << "cannot read src/kernels/ops.h";
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  const size_t begin = text.find("class Ops {"), end = text.find("\n};", begin);
  ASSERT_NE(begin, std::string::npos);
  const std::string body = text.substr(begin, end - begin);
  const std::regex decl(R"(virtual\s+void\s+run_(\w+)\s*\()");
  std::set<std::string> ops;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), decl); it != std::sregex_iterator(); ++it)
    ops.insert((*it)[1]);
  EXPECT_GE(ops.size(), 12u) << "the header parse found too few ops";
  const std::set<std::string> tested{"matmul", "matmul_argmax", "rms_norm", "rope", "silu_mul", "gelu", "add", "attention",
                                     "embed", "add_rms_norm", "kv_store", "paged_attention", "patch_merge",
                                     "layer_norm", "add_bias", "gelu_tanh", "sigmoid_mul", "conv1d_silu",
                                     "gated_delta_net"};
  for (const auto& op : ops) {
    EXPECT_TRUE(cases().count(op)) << "op " << op << " of kernels::Ops has no case in the op table";
    EXPECT_TRUE(tested.count(op)) << "op " << op << " of kernels::Ops has no OP_TEST";
  }
  for (const auto& [op, c] : cases()) EXPECT_TRUE(ops.count(op)) << "case for " << op << ", which is no op";
}

}  // namespace
}  // namespace locr::kernels
