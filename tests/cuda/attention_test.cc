// attention_varlen against the scalar oracle (f64 softmax), one oracle call per packed sequence,
// on BF16-rounded q/k/v. Awkward cases: sequences of very different lengths packed together
// (1 row, tile boundaries +-1), odd head counts, GQA ratios 1/2/3, misaligned and aligned strides
// (the 2-byte and the 16-byte load paths), bidirectional and causal (also with more keys than
// queries). Tolerance 1e-2 absolute: outputs are convex combinations of |v| <= 1, P is rounded to
// BF16 (2^-9 relative per weight) and so is the output.
#include <cmath>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

struct Case {
  std::vector<int> len_q, len_k;  // per sequence
  int n_heads, n_kv_heads, head_dim;
  int q_pad, kv_pad, out_pad;  // extra elements per row
  bool causal;
};

void run_case(const Case& c) {
  const int n_seqs = static_cast<int>(c.len_q.size());
  std::vector<int32_t> cu_q(n_seqs + 1, 0), cu_k(n_seqs + 1, 0);
  int max_q = 0;
  for (int i = 0; i < n_seqs; ++i) {
    cu_q[i + 1] = cu_q[i] + c.len_q[i];
    cu_k[i + 1] = cu_k[i] + c.len_k[i];
    max_q = std::max(max_q, c.len_q[i]);
  }
  const int64_t hd = c.head_dim;
  const int64_t qs = c.n_heads * hd + c.q_pad, ks = c.n_kv_heads * hd + c.kv_pad, os = c.n_heads * hd + c.out_pad;
  const int64_t tq = cu_q[n_seqs], tk = cu_k[n_seqs];
  std::vector<uint16_t> qb, kb, vb;
  const std::vector<float> q = random_bf16(std::max<int64_t>(tq * qs, 1), -2, 2, 201, &qb);
  const std::vector<float> k = random_bf16(std::max<int64_t>(tk * ks, 1), -2, 2, 202, &kb);
  const std::vector<float> v = random_bf16(std::max<int64_t>(tk * ks, 1), -1, 1, 203, &vb);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  auto ref = make_ops("ref");
  std::vector<float> want(tq * c.n_heads * hd);
  for (int i = 0; i < n_seqs; ++i) {
    if (c.len_q[i] == 0) continue;
    AttentionParams p;
    p.n_q = c.len_q[i];
    p.n_kv = c.len_k[i];
    p.n_heads = c.n_heads;
    p.n_kv_heads = c.n_kv_heads;
    p.head_dim = hd;
    p.q_stride = qs;
    p.kv_stride = ks;
    p.out_stride = c.n_heads * hd;
    p.scale = scale;
    p.causal = c.causal;
    p.q_offset = c.len_k[i] - c.len_q[i];
    const int64_t qw = c.n_heads * hd, kvw = c.n_kv_heads * hd;
    ref->attention(ref->f32(q.data() + cu_q[i] * qs, p.n_q, qw, qs), ref->f32(k.data() + cu_k[i] * ks, p.n_kv, kvw, ks),
                   ref->f32(v.data() + cu_k[i] * ks, p.n_kv, kvw, ks), ref->f32(want.data() + cu_q[i] * qw, p.n_q, qw), p);
  }

  Dev<uint16_t> dq(qb), dk(kb), dv(vb);
  std::vector<uint16_t> sentinel(std::max<int64_t>(tq * os, 1), 0x7fc1);  // a NaN pattern
  Dev<uint16_t> dout(sentinel);
  Dev<int32_t> dcq(cu_q), dck(cu_k);
  VarlenAttention p;
  p.q = dq.get();
  p.k = dk.get();
  p.v = dv.get();
  p.out = dout.get();
  p.cu_q = dcq.get();
  p.cu_k = dck.get();
  p.n_seqs = n_seqs;
  p.max_q = max_q;
  p.n_heads = c.n_heads;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.q_stride = qs;
  p.kv_stride = ks;
  p.out_stride = os;
  p.scale = scale;
  p.causal = c.causal;
  attention_varlen(p, nullptr);
  const std::vector<uint16_t> out = dout.host();
  for (int64_t r = 0; r < tq; ++r) {
    for (int64_t i = 0; i < c.n_heads * hd; ++i) {
      const float got = host_f32(out[r * os + i]), w = want[r * c.n_heads * hd + i];
      ASSERT_LE(std::fabs(got - w), 1e-2f) << "row " << r << " head " << i / hd << " d " << i % hd << " got " << got
                                           << " want " << w;
    }
    for (int64_t i = c.n_heads * hd; i < os; ++i) ASSERT_EQ(out[r * os + i], 0x7fc1) << "padding written";
  }
}

TEST(CudaAttentionVarlen, BidirectionalPackedImages) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  // Vision-encoder shape: 16 heads of 64, no GQA; images of 1, 63, 64, 65 and 300 patches.
  run_case({{1, 63, 64, 65, 300}, {1, 63, 64, 65, 300}, 16, 16, 64, 0, 0, 0, false});
  // q, k, v as views into one fused QKV row (stride 3 * width), misaligned by an odd pad.
  run_case({{129, 31}, {129, 31}, 3, 3, 64, 1, 3, 5, false});
  run_case({{33, 127}, {33, 127}, 5, 5, 128, 8, 8, 8, false});
}

TEST(CudaAttentionVarlen, CausalWithGqa) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  // Decoder shape: 16 query heads over 8 kv heads of 128.
  run_case({{1, 31, 129, 200}, {1, 31, 129, 200}, 16, 8, 128, 0, 0, 0, true});
  // GQA ratio 3, odd kv head count, odd strides.
  run_case({{64, 65, 2}, {64, 65, 2}, 9, 3, 64, 3, 1, 1, true});
  // More keys than queries (a prompt continuing cached context): query t sees keys <= t + offset.
  run_case({{1, 17, 70}, {40, 17, 300}, 4, 2, 128, 0, 0, 0, true});
  // A sequence with no query rows in the pack.
  run_case({{0, 33}, {5, 33}, 2, 1, 64, 0, 0, 0, true});
  // Qwen3.5's gated attention: 8 query heads over 2 kv heads of 256, and a continued prompt.
  run_case({{1, 31, 129, 200}, {1, 31, 129, 200}, 8, 2, 256, 0, 0, 0, true});
  run_case({{1, 17, 70}, {40, 17, 300}, 4, 1, 256, 8, 8, 8, true});
}

TEST(CudaAttentionVarlen, LongSequenceStaysFinite) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  run_case({{1500}, {1500}, 2, 2, 64, 0, 0, 0, false});
  run_case({{1025}, {1025}, 2, 1, 128, 0, 0, 0, true});
  run_case({{1025}, {1025}, 2, 1, 256, 0, 0, 0, true});
}

}  // namespace
}  // namespace locr::kernels::cuda::test
