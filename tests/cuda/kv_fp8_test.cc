// The FP8 E4M3 KV cache on the device: kv_store_fp8 writes kernels::kv_store_host's bytes and scales
// exactly (special heads included: all zero, subnormal after scaling, huge, infinite, NaN; a
// padding slot -1 is skipped), and paged attention over an FP8 pool, decode (F32 reads of byte *
// scale) and prefill chunks (the tile kernel, byte * scale rounded to BF16), against the scalar
// oracle reading the same pool (AttentionParams::kv_dtype F8_E4M3). Tolerance as the BF16 cache's
// (paged_attention_test.cc): 1e-2 absolute, values in [-1, 1].
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

struct HostPool {
  std::vector<uint8_t> k, v;
  std::vector<float> ks, vs;
  KvLayer layer(int nkv, int hd) {
    KvLayer kv;
    kv.dtype = DType::kF8E4M3, kv.n_kv_heads = nkv, kv.head_dim = hd;
    kv.rows = static_cast<int64_t>(ks.size()) / nkv;
    kv.k = k.data(), kv.v = v.data(), kv.k_scale = ks.data(), kv.v_scale = vs.data();
    return kv;
  }
};

HostPool host_pool(int64_t rows, int nkv, int hd) {
  HostPool p;
  p.k.assign(static_cast<size_t>(rows * nkv * hd), 0);
  p.v = p.k;
  p.ks.assign(static_cast<size_t>(rows * nkv), 0.0f);
  p.vs = p.ks;
  return p;
}

TEST(CudaKvFp8, StoreWritesKvStoreHostsBytesAndScales) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  for (int hd : {64, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(hd));
    const int nkv = 3, n = 9, width = nkv * hd, stride = width + 5, pool_rows = 12;
    std::vector<float> k = random_f32(n * stride, -6, 6, 81), v = random_f32(n * stride, -1, 1, 82);
    for (int d = 0; d < hd; ++d) {
      k[1 * stride + d] = 0.0f;
      k[2 * stride + hd + d] *= 1e-30f;
      v[3 * stride + d] *= 1e30f;
    }
    k[4 * stride + 2 * hd + 3] = std::numeric_limits<float>::infinity();
    v[5 * stride + 9] = std::numeric_limits<float>::quiet_NaN();
    std::vector<int32_t> slots(n);
    for (int r = 0; r < n; ++r) slots[r] = (r * 7 + 2) % pool_rows;
    slots[6] = -1;  // a padding row
    HostPool want = host_pool(pool_rows, nkv, hd);
    {
      // The host oracle has no padding rows: store the others one by one.
      KvLayer kv = want.layer(nkv, hd);
      for (int r = 0; r < n; ++r)
        if (slots[r] >= 0) kv_store_host(k.data() + r * stride, stride, v.data() + r * stride, stride, &slots[r], 1, kv);
    }
    Dev<float> dk(k), dv(v);
    Dev<int32_t> ds(slots);
    Dev<uint8_t> kp(pool_rows * width), vp(pool_rows * width);
    Dev<float> ksc(pool_rows * nkv), vsc(pool_rows * nkv);
    kv_store_fp8(dk.get(), dv.get(), stride, ds.get(), n, nkv, hd, kp.get(), vp.get(), ksc.get(), vsc.get(), nullptr);
    EXPECT_EQ(kp.host(), want.k);
    EXPECT_EQ(vp.host(), want.v);
    const std::vector<float> gks = ksc.host(), gvs = vsc.host();
    for (size_t i = 0; i < gks.size(); ++i) {
      EXPECT_TRUE((std::isnan(gks[i]) && std::isnan(want.ks[i])) || gks[i] == want.ks[i]) << i;
      EXPECT_TRUE((std::isnan(gvs[i]) && std::isnan(want.vs[i])) || gvs[i] == want.vs[i]) << i;
    }
  }
}

// seq_lens / q_lens per sequence; the pool filled by kv_store_host, attention on the device and by ref.
void run_attention(const std::vector<int>& seq_lens, const std::vector<int>& q_lens, int n_heads, int nkv, int hd,
                   int block_size) {
  const int n_seqs = static_cast<int>(seq_lens.size());
  const int64_t width = static_cast<int64_t>(nkv) * hd;
  int max_blocks = 1, total_blocks = 2, max_q = 0, max_len = 0;
  for (int i = 0; i < n_seqs; ++i) {
    const int nb = (seq_lens[i] + block_size - 1) / block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    max_q = std::max(max_q, q_lens[i]);
    max_len = std::max(max_len, seq_lens[i]);
  }
  std::vector<int32_t> perm(total_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937 rng(401);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(n_seqs) * max_blocks, 0);
  int next = 0;
  for (int i = 0; i < n_seqs; ++i)
    for (int j = 0; j < (seq_lens[i] + block_size - 1) / block_size; ++j) tables[i * max_blocks + j] = perm[next++];
  const int64_t pool_rows = static_cast<int64_t>(total_blocks) * block_size;
  HostPool pool = host_pool(pool_rows, nkv, hd);
  KvLayer kv = pool.layer(nkv, hd);
  for (int i = 0; i < n_seqs; ++i)
    for (int j = 0; j < seq_lens[i]; ++j) {
      const std::vector<float> k = random_f32(width, -2, 2, 1000 + 64 * i + j), v = random_f32(width, -1, 1, 5000 + 64 * i + j);
      const int32_t slot = tables[i * max_blocks + j / block_size] * block_size + j % block_size;
      kv_store_host(k.data(), width, v.data(), width, &slot, 1, kv);
    }
  std::vector<int32_t> cu_q(n_seqs + 1, 0);
  for (int i = 0; i < n_seqs; ++i) cu_q[i + 1] = cu_q[i] + q_lens[i];
  const int64_t tq = cu_q[n_seqs], qw = static_cast<int64_t>(n_heads) * hd;
  std::vector<uint16_t> qb;
  const std::vector<float> q = random_bf16(tq * qw, -2, 2, 402, &qb);
  auto ref = make_ops("ref");
  std::vector<float> want(tq * qw);
  for (int i = 0; i < n_seqs; ++i) {
    if (q_lens[i] == 0) continue;
    AttentionParams p;
    p.n_q = q_lens[i], p.n_kv = seq_lens[i];
    p.n_heads = n_heads, p.n_kv_heads = nkv, p.head_dim = hd;
    p.q_stride = qw, p.kv_stride = width, p.out_stride = qw;
    p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
    p.causal = true;
    p.q_offset = seq_lens[i] - q_lens[i];
    p.block_table = tables.data() + i * max_blocks;
    p.block_size = block_size;
    p.kv_dtype = DType::kF8E4M3;
    p.k_scale = pool.ks.data(), p.v_scale = pool.vs.data();
    const View kp(pool.k.data(), DType::kF8E4M3, Memory::kHost, pool_rows, width);
    const View vp(pool.v.data(), DType::kF8E4M3, Memory::kHost, pool_rows, width);
    ref->attention(ref->f32(q.data() + cu_q[i] * qw, p.n_q, qw), kp, vp, ref->f32(want.data() + cu_q[i] * qw, p.n_q, qw),
                   p);
  }
  Dev<uint16_t> dq(qb), dout(tq * qw);
  Dev<uint8_t> dk(pool.k), dv(pool.v);
  Dev<float> dks(pool.ks), dvs(pool.vs);
  Dev<int32_t> dt(tables), dcq(cu_q), dsl(std::vector<int32_t>(seq_lens.begin(), seq_lens.end()));
  PagedAttention p;
  p.q = dq.get(), p.out = dout.get();
  p.k_fp8 = dk.get(), p.v_fp8 = dv.get(), p.k_scale = dks.get(), p.v_scale = dvs.get();
  p.block_tables = dt.get(), p.max_blocks = max_blocks;
  p.cu_q = dcq.get(), p.seq_lens = dsl.get(), p.n_seqs = n_seqs;
  p.max_q = max_q, p.max_seq_len = max_len, p.block_size = block_size;
  p.n_heads = n_heads, p.n_kv_heads = nkv, p.head_dim = hd;
  p.q_stride = qw, p.out_stride = qw;
  p.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  DeviceBuffer ws(paged_attention_workspace(p));
  paged_attention(p, ws.get(), nullptr);
  const std::vector<uint16_t> out = dout.host();
  for (int64_t i = 0; i < tq * qw; ++i)
    ASSERT_LE(std::fabs(host_f32(out[i]) - want[i]), 1e-2f) << "row " << i / qw << " col " << i % qw;
}

TEST(CudaKvFp8, PagedDecodeOverAnFp8Cache) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  run_attention({1, 17, 300, 700}, {1, 1, 1, 1}, 8, 2, 128, 16);  // split-K beyond 256 keys
  run_attention({5, 40}, {1, 1}, 4, 4, 64, 16);
}

TEST(CudaKvFp8, PagedPrefillChunksOverAnFp8Cache) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  run_attention({5, 70, 130}, {5, 70, 33}, 4, 2, 128, 16);
  run_attention({33, 9}, {7, 1}, 2, 1, 64, 16);
}

}  // namespace
}  // namespace locr::kernels::cuda::test
