// The Qwen3.5 family's CUDA kernels (qwen35.cu) through kernels::Ops on "cuda", against the host
// oracle (make_ops("ref"): kernels/ops_qwen35.cc): LayerNorm, bias, tanh-GELU, the sigmoid gate,
// and the recurrent conv1d + SiLU and gated delta rule over batches of sequences (fresh and carried
// slots out of order, strided views, two value heads per key head, k_dim != v_dim). Also: a
// sequence in one call, split in two and token by token gives the same bits on the device, and a
// captured CUDA graph replays with new contents of the step's device arrays (slots, fresh, cu_q).
// Tolerances: F32 kernels, sums in another order than the oracle's f64: 1e-5 (1 + |y|) for the
// recurrences (outputs and states), 1e-5 |y| + 1e-12 for the element-wise ones.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cuda_test_util.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/ops.h"
#include "random_weights.h"

namespace locr::kernels::cuda::test {
namespace {

using testing_util::hv;
using testing_util::make_matrix;
using testing_util::random_vec;

// A host vector in the backend's memory.
struct Mem {
  Mem(Ops& ops, const std::vector<float>& h) : ops(ops), n(h.size()), p(ops.alloc(h.size() * 4)) {
    ops.from_host(p.get(), h.data(), n * 4);
  }
  float* get() const { return static_cast<float*>(p.get()); }
  View view(int64_t rows, int64_t cols, int64_t stride = -1) const { return ops.f32(get(), rows, cols, stride); }
  std::vector<float> host() const {
    std::vector<float> h(n);
    ops.to_host(h.data(), p.get(), n * 4);
    return h;
  }
  Ops& ops;
  size_t n;
  std::shared_ptr<void> p;
};

struct IMem {
  IMem(Ops& ops, const std::vector<int32_t>& h) : ops(ops), p(ops.alloc(h.size() * 4 + 4)) { set(h); }
  void set(const std::vector<int32_t>& h) { ops.from_host(p.get(), h.data(), h.size() * 4); }
  const int32_t* get() const { return static_cast<const int32_t*>(p.get()); }
  Ops& ops;
  std::shared_ptr<void> p;
};

// A step of sequences (lengths, slots, fresh flags) with device and host arrays.
struct Step {
  Step(Ops& ops, const std::vector<int64_t>& lens, std::vector<int32_t> slots_, std::vector<int32_t> fresh_)
      : slots(std::move(slots_)), fresh(std::move(fresh_)), dcu(ops, cu_of(lens)), dslots(ops, slots),
        dfresh(ops, fresh) {
    cu = cu_of(lens);
    b.n_seqs = static_cast<int64_t>(lens.size());
    b.cu_q = dcu.get(), b.slots = dslots.get(), b.fresh = dfresh.get();
    b.host_cu_q = cu.data(), b.host_slots = slots.data(), b.host_fresh = fresh.data();
    for (int64_t n : lens) b.max_q = std::max(b.max_q, n);
  }
  static std::vector<int32_t> cu_of(const std::vector<int64_t>& lens) {
    std::vector<int32_t> c{0};
    for (int64_t n : lens) c.push_back(c.back() + static_cast<int32_t>(n));
    return c;
  }
  StateBatch host() const {
    StateBatch h = b;
    h.cu_q = cu.data(), h.slots = slots.data(), h.fresh = fresh.data();
    return h;
  }
  int64_t rows() const { return cu.back(); }
  std::vector<int32_t> cu, slots, fresh;
  IMem dcu, dslots, dfresh;
  StateBatch b;
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double tol = rel * std::fabs(want[i]) + abs;
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
      ++bad;
      ADD_FAILURE() << what << " at " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

TEST(CudaQwen35, ElementwiseMatchTheOracle) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ops = make_ops("cuda");
  auto ref = make_ops("ref");
  for (int64_t dim : {1, 33, 768, 1030}) {
    const int64_t rows = 37, stride = dim + 5;
    const Matrix w = make_matrix(DType::kBF16, 1, dim, 1), b = make_matrix(DType::kF32, 1, dim, 2);
    const auto x = random_vec(static_cast<size_t>(rows * stride), 3, -2, 4);
    Mem dx(*ops, x), dy(*ops, std::vector<float>(rows * dim));
    ops->layer_norm(dx.view(rows, dim, stride), w, b, 1e-6f, dy.view(rows, dim));
    ops->layer_norm(dx.view(rows, dim, stride), w, b, 1e-6f, dx.view(rows, dim, stride));  // in place
    std::vector<float> xr = x, yr(rows * dim);
    ref->layer_norm(hv(xr, rows, dim, stride), w, b, 1e-6f, hv(yr, rows, dim));
    ref->layer_norm(hv(xr, rows, dim, stride), w, b, 1e-6f, hv(xr, rows, dim, stride));
    expect_close(dy.host(), yr, 1e-5, 1e-5, "layer_norm");
    expect_close(dx.host(), xr, 1e-5, 1e-5, "layer_norm in place");
    ops->add_bias(dx.view(rows, dim, stride), b);
    ref->add_bias(hv(xr, rows, dim, stride), b);
    expect_close(dx.host(), xr, 1e-6, 1e-6, "add_bias");
  }
  const int64_t n = 40001;
  const auto g = random_vec(n, 4, -12, 8), x = random_vec(n, 5, -3, 3);
  Mem dg(*ops, g), dx(*ops, x), dgelu(*ops, g);
  ops->gelu_tanh(dgelu.view(1, n));
  std::vector<float> gr = g;
  ref->gelu_tanh(hv(gr, 1, n));
  expect_close(dgelu.host(), gr, 1e-5, 1e-12, "gelu_tanh");
  ops->sigmoid_mul(dg.view(1, n), dx.view(1, n), dx.view(1, n));  // out over x
  std::vector<float> xr = x;
  ref->sigmoid_mul(hv(g, 1, n), hv(xr, 1, n), hv(xr, 1, n));
  expect_close(dx.host(), xr, 1e-5, 1e-12, "sigmoid_mul");
}

struct Shapes {
  int64_t nk, nv, kd, vd, K;
  bool tiled = false;  // value heads in a GGUF file's tiled order (DeltaNetParams::tiled)
};

// Two steps (prefill chunks, then decodes) of a batch through the conv and the delta rule, q/k/v
// column ranges of the conv's output, against ref on the same inputs.
void run_batch(const Shapes& sh) {
  SCOPED_TRACE(testing::Message() << sh.nk << "/" << sh.nv << " heads, " << sh.kd << "x" << sh.vd);
  auto ops = make_ops("cuda");
  auto ref = make_ops("ref");
  DeltaNetParams p;
  p.n_k_heads = sh.nk, p.n_v_heads = sh.nv, p.k_dim = sh.kd, p.v_dim = sh.vd, p.tiled = sh.tiled;
  const int64_t nq = sh.nk * sh.kd, nvv = sh.nv * sh.vd, C = 2 * nq + nvv, K = sh.K, sw = (K - 1) * C;
  const int64_t n_slots = 5, sf = p.state_floats(), xs = C + 3, gs = 2 * sh.nv + 1;
  const Matrix w = make_matrix(DType::kBF16, C, K, 10, 0.6f);
  const Matrix a_log = make_matrix(DType::kF32, 1, sh.nv, 11), dt = make_matrix(DType::kBF16, 1, sh.nv, 12);
  const auto cs0 = random_vec(static_cast<size_t>(n_slots * sw), 13, -1, 1);
  const auto ss0 = random_vec(static_cast<size_t>(n_slots * sf), 14, -0.3f, 0.3f);
  Mem dcs(*ops, cs0), dss(*ops, ss0);
  std::vector<float> csr = cs0, ssr = ss0;
  const std::vector<std::vector<int64_t>> lens{{40, 1, 0, 3}, {1, 1, 1, 1}};
  const std::vector<std::vector<int32_t>> fresh{{1, 0, 1, 1}, {0, 0, 1, 0}};
  const std::vector<int32_t> slots{3, 0, 4, 1};
  for (size_t step = 0; step < lens.size(); ++step) {
    Step st(*ops, lens[step], slots, fresh[step]);
    const int64_t rows = st.rows();
    const auto x = random_vec(static_cast<size_t>(rows * xs), 20 + static_cast<uint32_t>(step), -2, 2);
    const auto gin = random_vec(static_cast<size_t>(rows * gs), 22 + static_cast<uint32_t>(step), -4, 4);
    Mem dx(*ops, x), dg(*ops, gin), dconv(*ops, std::vector<float>(rows * C)), dout(*ops, std::vector<float>(rows * nvv));
    std::vector<float> conv(rows * C), out(rows * nvv);
    ops->conv1d_silu(dx.view(rows, C, xs), w, dcs.view(n_slots, sw), st.b, dconv.view(rows, C));
    ref->conv1d_silu(hv(x, rows, C, xs), w, hv(csr, n_slots, sw), st.host(), hv(conv, rows, C));
    // The delta rule reads ref's conv output on both (the conv is compared on its own).
    Mem dqkv(*ops, conv);
    const View v = dqkv.view(rows, C), vg = dg.view(rows, gs), hq = hv(conv, rows, C), hg = hv(gin, rows, gs);
    ops->gated_delta_net(v.cols_range(0, nq), v.cols_range(nq, nq), v.cols_range(2 * nq, nvv),
                         vg.cols_range(0, sh.nv), vg.cols_range(sh.nv + 1, sh.nv), a_log, dt, dss.view(n_slots, sf),
                         st.b, p, dout.view(rows, nvv));
    ref->gated_delta_net(hq.cols_range(0, nq), hq.cols_range(nq, nq), hq.cols_range(2 * nq, nvv),
                         hg.cols_range(0, sh.nv), hg.cols_range(sh.nv + 1, sh.nv), a_log, dt, hv(ssr, n_slots, sf),
                         st.host(), p, hv(out, rows, nvv));
    expect_close(dconv.host(), conv, 1e-5, 1e-5, "conv1d_silu");
    expect_close(dout.host(), out, 1e-5, 1e-5, "gated_delta_net");
    expect_close(dcs.host(), csr, 0, 0, "conv state");
    expect_close(dss.host(), ssr, 1e-5, 1e-5, "delta rule state");
  }
}

TEST(CudaQwen35, RecurrentBatchesMatchTheOracle) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  run_batch({2, 2, 128, 128, 4});  // the 0.8B's head size
  run_batch({2, 4, 40, 24, 4});    // two value heads per key head, k_dim != v_dim, partial tiles
  run_batch({1, 1, 3, 5, 2});      // tiny
  run_batch({1, 2, 256, 40, 3});   // the widest key head (8 warps)
  run_batch({2, 4, 128, 128, 4, true});  // the 4B's layout as a GGUF holds it (tiled value heads)
}

// One call, two calls, one row per call: the same bits (the kernels' arithmetic per row does not
// depend on where a call starts).
TEST(CudaQwen35, SplitsChangeNoBit) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ops = make_ops("cuda");
  DeltaNetParams p;
  p.n_k_heads = 2, p.n_v_heads = 4, p.k_dim = 64, p.v_dim = 48;
  const int64_t n = 21, nq = p.n_k_heads * p.k_dim, nvv = p.n_v_heads * p.v_dim, C = 2 * nq + nvv, K = 4;
  const int64_t sw = (K - 1) * C, sf = p.state_floats();
  const Matrix w = make_matrix(DType::kF32, C, K, 1, 0.5f), a_log = make_matrix(DType::kF32, 1, p.n_v_heads, 2);
  const Matrix dt = make_matrix(DType::kF32, 1, p.n_v_heads, 3);
  const auto x = random_vec(static_cast<size_t>(n * C), 4, -2, 2), g = random_vec(static_cast<size_t>(n * 8), 5, -3, 3);
  Mem dx(*ops, x), dg(*ops, g);
  auto run = [&](const std::vector<int64_t>& parts) {
    Mem cs(*ops, std::vector<float>(2 * sw, 7.0f)), ss(*ops, std::vector<float>(2 * sf, 7.0f));
    Mem conv(*ops, std::vector<float>(n * C)), out(*ops, std::vector<float>(n * nvv));
    int64_t r0 = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      Step st(*ops, {parts[i]}, {1}, {i == 0 ? 1 : 0});
      const int64_t m = parts[i];
      const View cv = conv.view(n, C).rows_range(r0, m), gv = dg.view(n, 8).rows_range(r0, m);
      ops->conv1d_silu(dx.view(n, C).rows_range(r0, m), w, cs.view(2, sw), st.b, cv);
      ops->gated_delta_net(cv.cols_range(0, nq), cv.cols_range(nq, nq), cv.cols_range(2 * nq, nvv),
                           gv.cols_range(0, 4), gv.cols_range(4, 4), a_log, dt, ss.view(2, sf), st.b, p,
                           out.view(n, nvv).rows_range(r0, m));
      r0 += m;
    }
    std::vector<float> all = conv.host(), o = out.host(), c = cs.host(), s = ss.host();
    all.insert(all.end(), o.begin(), o.end());
    all.insert(all.end(), c.begin(), c.end());
    all.insert(all.end(), s.begin(), s.end());
    return all;
  };
  const auto whole = run({n});
  EXPECT_EQ(run({8, n - 8}), whole);
  EXPECT_EQ(run(std::vector<int64_t>(n, 1)), whole);
}

// The decode step in a captured graph: a replay after new contents of the step arrays (other
// slots, a fresh flag) and of the inputs computes the new step.
TEST(CudaQwen35, GraphReplayReadsTheStepArrays) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  auto ops = make_ops("cuda");
  auto ref = make_ops("ref");
  DeltaNetParams p;
  p.n_k_heads = 2, p.n_v_heads = 4, p.k_dim = 128, p.v_dim = 64;
  const int64_t seqs = 3, nq = p.n_k_heads * p.k_dim, nvv = p.n_v_heads * p.v_dim, C = 2 * nq + nvv, K = 4;
  const int64_t sw = (K - 1) * C, sf = p.state_floats(), n_slots = 4;
  const Matrix w = make_matrix(DType::kBF16, C, K, 1, 0.5f), a_log = make_matrix(DType::kF32, 1, p.n_v_heads, 2);
  const Matrix dt = make_matrix(DType::kF32, 1, p.n_v_heads, 3);
  const auto cs0 = random_vec(static_cast<size_t>(n_slots * sw), 4), ss0 = random_vec(static_cast<size_t>(n_slots * sf), 5, -0.3f, 0.3f);
  Mem cs(*ops, cs0), ss(*ops, ss0), dx(*ops, std::vector<float>(seqs * C)), dg(*ops, std::vector<float>(seqs * 8));
  Mem conv(*ops, std::vector<float>(seqs * C)), out(*ops, std::vector<float>(seqs * nvv));
  Step st(*ops, {1, 1, 1}, {0, 1, 2}, {0, 0, 0});
  auto step = [&] {
    const View cv = conv.view(seqs, C), gv = dg.view(seqs, 8);
    ops->conv1d_silu(dx.view(seqs, C), w, cs.view(n_slots, sw), st.b, cv);
    ops->gated_delta_net(cv.cols_range(0, nq), cv.cols_range(nq, nq), cv.cols_range(2 * nq, nvv), gv.cols_range(0, 4),
                         gv.cols_range(4, 4), a_log, dt, ss.view(n_slots, sf), st.b, p, out.view(seqs, nvv));
  };
  step();  // eager: parameters uploaded, scratch grown
  ops->synchronize();
  Graph graph;
  graph.begin_capture(ops_stream(*ops));
  step();
  graph.end_capture(ops_stream(*ops));
  // New contents: the sequences in slots 3, 0, 2, the last one fresh; new inputs; fresh states.
  const std::vector<int32_t> slots{3, 0, 2}, fresh{0, 0, 1};
  st.dslots.set(slots);
  st.dfresh.set(fresh);
  const auto x = random_vec(static_cast<size_t>(seqs * C), 6, -2, 2), g = random_vec(static_cast<size_t>(seqs * 8), 7, -3, 3);
  ops->from_host(dx.get(), x.data(), x.size() * 4);
  ops->from_host(dg.get(), g.data(), g.size() * 4);
  ops->from_host(cs.get(), cs0.data(), cs0.size() * 4);
  ops->from_host(ss.get(), ss0.data(), ss0.size() * 4);
  graph.launch(ops_stream(*ops));
  ops->synchronize();
  std::vector<float> csr = cs0, ssr = ss0, convr(seqs * C), outr(seqs * nvv);
  StateBatch hb = st.host();
  hb.slots = hb.host_slots = slots.data();
  hb.fresh = hb.host_fresh = fresh.data();
  ref->conv1d_silu(hv(x, seqs, C), w, hv(csr, n_slots, sw), hb, hv(convr, seqs, C));
  const View hc = hv(convr, seqs, C), hg = hv(g, seqs, 8);
  ref->gated_delta_net(hc.cols_range(0, nq), hc.cols_range(nq, nq), hc.cols_range(2 * nq, nvv), hg.cols_range(0, 4),
                       hg.cols_range(4, 4), a_log, dt, hv(ssr, n_slots, sf), hb, p, hv(outr, seqs, nvv));
  expect_close(conv.host(), convr, 1e-5, 1e-5, "conv1d_silu (replay)");
  expect_close(cs.host(), csr, 0, 0, "conv state (replay)");
  expect_close(out.host(), outr, 1e-4, 1e-4, "gated_delta_net (replay)");  // reads the device's conv output
  expect_close(ss.host(), ssr, 1e-4, 1e-4, "delta rule state (replay)");
}

}  // namespace
}  // namespace locr::kernels::cuda::test
