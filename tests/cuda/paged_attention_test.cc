// kv_store and paged attention against the scalar oracle (which reads the same pools through the
// same block tables). Block tables are shuffled (a sequence's blocks are scattered over the pool),
// contexts cross block boundaries (block_size 16) and split-K boundaries (256 keys per split),
// batches mix sequence lengths; decode (max_q == 1, split-K with workspace) and prefill chunks
// (max_q > 1, the tile kernel) are both checked. Tolerance as attention_test: 1e-2 absolute.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cuda_test_util.h"
#include "kernels/ops.h"

namespace locr::kernels::cuda::test {
namespace {

struct Batch {
  std::vector<int> seq_lens;  // keys after this step
  std::vector<int> q_lens;    // new query rows this step (their keys are the last q_len of seq_len)
};

void run_case(const Batch& b, int n_heads, int n_kv_heads, int hd, int block_size, int q_pad, int extra_max_len) {
  const int n_seqs = static_cast<int>(b.seq_lens.size());
  const int64_t width = static_cast<int64_t>(n_kv_heads) * hd;
  int max_blocks = 0, total_blocks = 0, max_q = 0, max_len = 0;
  for (int i = 0; i < n_seqs; ++i) {
    const int nb = (b.seq_lens[i] + block_size - 1) / block_size;
    max_blocks = std::max(max_blocks, nb);
    total_blocks += nb;
    max_q = std::max(max_q, b.q_lens[i]);
    max_len = std::max(max_len, b.seq_lens[i]);
  }
  total_blocks += 3;  // unused blocks in the pool
  std::vector<int32_t> perm(total_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937 rng(301);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int32_t> tables(static_cast<size_t>(n_seqs) * std::max(max_blocks, 1), -1);
  int next = 0;
  for (int i = 0; i < n_seqs; ++i)
    for (int j = 0; j < (b.seq_lens[i] + block_size - 1) / block_size; ++j) tables[i * max_blocks + j] = perm[next++];
  const int64_t pool_rows = static_cast<int64_t>(total_blocks) * block_size;

  // Every key/value row of every sequence, stored through kv_store (the new rows) or directly.
  std::vector<uint16_t> kall, vall;
  int64_t total_keys = 0;
  for (int l : b.seq_lens) total_keys += l;
  random_bf16(total_keys * width, -2, 2, 302, &kall);
  random_bf16(total_keys * width, -1, 1, 303, &vall);
  std::vector<int32_t> slots(total_keys);
  {
    int64_t r = 0;
    for (int i = 0; i < n_seqs; ++i)
      for (int j = 0; j < b.seq_lens[i]; ++j, ++r)
        slots[r] = tables[i * max_blocks + j / block_size] * block_size + j % block_size;
  }
  std::vector<uint16_t> kpool(pool_rows * width, 0), vpool(pool_rows * width, 0);
  for (int64_t r = 0; r < total_keys; ++r)
    for (int64_t c = 0; c < width; ++c) {
      kpool[slots[r] * width + c] = kall[r * width + c];
      vpool[slots[r] * width + c] = vall[r * width + c];
    }
  Dev<uint16_t> dkp(pool_rows * width), dvp(pool_rows * width);
  {
    // kv_store with a padded row stride and a padding slot (-1) in the middle.
    const int64_t stride = width + 3;
    std::vector<uint16_t> ks((total_keys + 1) * stride, 0), vs((total_keys + 1) * stride, 0);
    std::vector<int32_t> sl(total_keys + 1);
    for (int64_t r = 0, o = 0; r <= total_keys; ++r) {
      if (r == total_keys / 2) {
        sl[r] = -1;
        continue;
      }
      for (int64_t c = 0; c < width; ++c) {
        ks[r * stride + c] = kall[o * width + c];
        vs[r * stride + c] = vall[o * width + c];
      }
      sl[r] = slots[o++];
    }
    Dev<uint16_t> dks(ks), dvs(vs);
    Dev<int32_t> dsl(sl);
    kv_store(dks.get(), dvs.get(), stride, dsl.get(), total_keys + 1, width, dkp.get(), dvp.get(), nullptr);
    ASSERT_EQ(dkp.host(), kpool);
    ASSERT_EQ(dvp.host(), vpool);
  }

  // Queries: q_len rows per sequence.
  std::vector<int32_t> cu_q(n_seqs + 1, 0);
  for (int i = 0; i < n_seqs; ++i) cu_q[i + 1] = cu_q[i] + b.q_lens[i];
  const int64_t tq = cu_q[n_seqs], qs = static_cast<int64_t>(n_heads) * hd + q_pad, os = qs;
  std::vector<uint16_t> qb;
  const std::vector<float> q = random_bf16(std::max<int64_t>(tq * qs, 1), -2, 2, 304, &qb);
  const std::vector<float> kf = to_f32(kpool), vf = to_f32(vpool);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  auto ref = make_ops("ref");
  std::vector<float> want(std::max<int64_t>(tq * n_heads * hd, 1));
  for (int i = 0; i < n_seqs; ++i) {
    if (b.q_lens[i] == 0) continue;
    AttentionParams p;
    p.n_q = b.q_lens[i];
    p.n_kv = b.seq_lens[i];
    p.n_heads = n_heads;
    p.n_kv_heads = n_kv_heads;
    p.head_dim = hd;
    p.q_stride = qs;
    p.kv_stride = width;
    p.out_stride = static_cast<int64_t>(n_heads) * hd;
    p.scale = scale;
    p.causal = true;
    p.q_offset = b.seq_lens[i] - b.q_lens[i];
    p.block_table = tables.data() + i * max_blocks;
    p.block_size = block_size;
    const int64_t qw = static_cast<int64_t>(n_heads) * hd, pool_rows = static_cast<int64_t>(kf.size()) / width;
    ref->attention(ref->f32(q.data() + cu_q[i] * qs, p.n_q, qw, qs), ref->f32(kf.data(), pool_rows, width),
                   ref->f32(vf.data(), pool_rows, width), ref->f32(want.data() + cu_q[i] * qw, p.n_q, qw), p);
  }

  Dev<uint16_t> dq(qb), dout(std::max<int64_t>(tq * os, 1));
  Dev<int32_t> dt(tables), dcq(cu_q), dsl(std::vector<int32_t>(b.seq_lens.begin(), b.seq_lens.end()));
  PagedAttention p;
  p.q = dq.get();
  p.out = dout.get();
  p.k_cache = dkp.get();
  p.v_cache = dvp.get();
  p.block_tables = dt.get();
  p.max_blocks = max_blocks;
  p.cu_q = dcq.get();
  p.seq_lens = dsl.get();
  p.n_seqs = n_seqs;
  p.max_q = max_q;
  p.max_seq_len = max_len + extra_max_len;
  p.block_size = block_size;
  p.n_heads = n_heads;
  p.n_kv_heads = n_kv_heads;
  p.head_dim = hd;
  p.q_stride = qs;
  p.out_stride = os;
  p.scale = scale;
  const size_t ws_bytes = paged_attention_workspace(p);
  if (max_q == 1 && p.max_seq_len > 256) {
    EXPECT_GT(ws_bytes, 0u);
  }
  if (max_q > 1) {
    EXPECT_EQ(ws_bytes, 0u);
  }
  DeviceBuffer ws(ws_bytes);
  paged_attention(p, ws.get(), nullptr);
  const std::vector<uint16_t> out = dout.host();
  for (int64_t r = 0; r < tq; ++r)
    for (int64_t i = 0; i < static_cast<int64_t>(n_heads) * hd; ++i) {
      const float got = host_f32(out[r * os + i]), w = want[r * n_heads * hd + i];
      ASSERT_LE(std::fabs(got - w), 1e-2f) << "row " << r << " head " << i / hd << " d " << i % hd << " got " << got
                                           << " want " << w;
    }
  if (max_q == 1) {
    // The decode path inside a captured CUDA graph (the runner's FULL_DECODE_ONLY mode) gives the
    // same bits as the eager launch.
    Stream st = create_stream();
    memset_device(dout.get(), 0, dout.buf.bytes(), st);
    synchronize(st);
    Graph g;
    g.begin_capture(st);
    paged_attention(p, ws.get(), st);
    g.end_capture(st);
    g.launch(st);
    synchronize(st);
    EXPECT_EQ(dout.host(), out);
    destroy_stream(st);
  }
}

TEST(CudaPagedAttention, DecodeAcrossBlockAndSplitBoundaries) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  const std::vector<int> lens = {1, 15, 16, 17, 255, 256, 257, 700, 1500};
  run_case({lens, std::vector<int>(lens.size(), 1)}, 16, 8, 128, 16, 0, 0);
  run_case({lens, std::vector<int>(lens.size(), 1)}, 6, 2, 64, 16, 3, 0);
  // A sequence without a query row this step, and max_seq_len larger than any sequence.
  run_case({{300, 40, 513}, {1, 0, 1}}, 4, 4, 128, 32, 0, 1000);
  // Short contexts only: a single split, no workspace.
  run_case({{1, 2, 200}, {1, 1, 1}}, 2, 1, 64, 16, 0, 0);
  // Qwen3.5's gated attention: 8 query heads over 2 kv heads of 256 (LightOnOCR-3-0.8B).
  run_case({lens, std::vector<int>(lens.size(), 1)}, 8, 2, 256, 16, 0, 0);
}

TEST(CudaPagedAttention, PrefillChunks) {
  LOCR_CUDA_TEST_SKIP_IF_UNAVAILABLE();
  // First chunks (q_len == seq_len), later chunks over cached context, and decode rows mixed in.
  run_case({{5, 64, 65, 130, 300, 17}, {5, 64, 65, 30, 129, 1}}, 16, 8, 128, 16, 0, 0);
  run_case({{33, 100, 1}, {33, 7, 1}}, 3, 1, 64, 16, 5, 0);
  run_case({{520}, {520}}, 2, 2, 128, 32, 8, 0);
  // head_dim 256 (Qwen3.5): first chunks, a later chunk over cached context, a decode row.
  run_case({{5, 64, 65, 300, 17}, {5, 64, 65, 129, 1}}, 8, 2, 256, 16, 0, 0);
}

}  // namespace
}  // namespace locr::kernels::cuda::test
