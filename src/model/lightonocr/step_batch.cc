#include "model/lightonocr/step_batch.h"

#include <algorithm>

#include "model/rope.h"

namespace locr::model {

HostStepBatch::HostStepBatch(const TextConfig& cfg, const std::vector<SeqStep>& seqs, int block_size) {
  const int64_t hd = cfg.head_dim, bs = block_size;
  int64_t R = 0, max_blocks = 1, max_q = 0, max_len = 0;
  for (const auto& s : seqs) {
    R += s.n_new;
    max_blocks = std::max<int64_t>(max_blocks, (s.pos0 + s.n_new + bs - 1) / bs);
    max_q = std::max(max_q, s.n_new);
    max_len = std::max(max_len, s.pos0 + s.n_new);
  }
  const int64_t n = static_cast<int64_t>(seqs.size());
  cos.resize(R * hd / 2);
  sin.resize(R * hd / 2);
  slots.resize(R);
  cu_q.assign(n + 1, 0);
  seq_lens.resize(n);
  prompt.resize(n);
  tables.assign(n * max_blocks, 0);  // entries past a sequence's blocks are never read
  int64_t row = 0;
  for (int64_t i = 0; i < n; ++i) {
    const SeqStep& s = seqs[i];
    // RoPE angles per row, at the sequence's own positions.
    const RopeTable t = text_rope(cfg.rope_theta, static_cast<int>(hd), s.pos0, s.n_new);
    std::copy(t.cos.begin(), t.cos.end(), cos.begin() + row * hd / 2);
    std::copy(t.sin.begin(), t.sin.end(), sin.begin() + row * hd / 2);
    for (int64_t j = 0; j < s.n_new; ++j) {
      const int64_t pos = s.pos0 + j;
      slots[row + j] = static_cast<int32_t>(static_cast<int64_t>(s.block_table[pos / bs]) * bs + pos % bs);
    }
    const int64_t nb = (s.pos0 + s.n_new + bs - 1) / bs;
    std::copy(s.block_table, s.block_table + nb, tables.begin() + i * max_blocks);
    seq_lens[i] = static_cast<int32_t>(s.pos0 + s.n_new);
    prompt[i] = s.prompt ? 1 : 0;
    row += s.n_new;
    cu_q[i + 1] = static_cast<int32_t>(row);
  }
  b_.rows = R;
  b_.cos = cos.data();
  b_.sin = sin.data();
  b_.slots = slots.data();
  kernels::PagedBatch& a = b_.attn;
  a.n_seqs = n;
  a.cu_q = a.host_cu_q = cu_q.data();
  a.seq_lens = a.host_seq_lens = seq_lens.data();
  a.tables = a.host_tables = tables.data();
  a.max_blocks = max_blocks;
  a.block_size = bs;
  a.max_q = max_q;
  a.max_seq_len = max_len;
  a.host_prompt = prompt.data();
}

}  // namespace locr::model
