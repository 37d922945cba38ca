#include "model/qwen35/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "model/qwen35/positions.h"

namespace locr::model::qwen35 {

StatePool::StatePool(const TextConfig& cfg, int64_t n_slots, kernels::Ops& ops)
    : ops_(ops), n_slots_(n_slots),
      conv_floats_(static_cast<int64_t>(cfg.linear_conv_kernel_dim - 1) * cfg.conv_dim()),
      rec_floats_(static_cast<int64_t>(cfg.linear_num_value_heads) * cfg.linear_key_head_dim *
                  cfg.linear_value_head_dim) {
  LOCR_CHECK(n_slots > 0, "a state pool of ", n_slots, " slots");
  for (int i = 0; i < cfg.n_linear_layers(); ++i) {
    conv_.push_back(ops.alloc(static_cast<size_t>(n_slots * conv_floats_) * sizeof(float)));
    rec_.push_back(ops.alloc(static_cast<size_t>(n_slots * rec_floats_) * sizeof(float)));
  }
}

kernels::View StatePool::conv(int i) const {
  return ops_.f32(static_cast<const float*>(conv_[i].get()), n_slots_, conv_floats_);
}

kernels::View StatePool::recurrent(int i) const {
  return ops_.f32(static_cast<const float*>(rec_[i].get()), n_slots_, rec_floats_);
}

int64_t StatePool::bytes_per_slot(const TextConfig& cfg) {
  const int64_t conv = static_cast<int64_t>(cfg.linear_conv_kernel_dim - 1) * cfg.conv_dim();
  const int64_t rec =
      static_cast<int64_t>(cfg.linear_num_value_heads) * cfg.linear_key_head_dim * cfg.linear_value_head_dim;
  return static_cast<int64_t>(sizeof(float)) * cfg.n_linear_layers() * (conv + rec);
}

model::TextConfig kv_shape(const TextConfig& cfg) {
  model::TextConfig t;
  t.hidden_size = cfg.hidden_size;
  t.intermediate_size = cfg.intermediate_size;
  t.num_hidden_layers = cfg.n_full_layers();
  t.num_attention_heads = cfg.num_attention_heads;
  t.num_key_value_heads = cfg.num_key_value_heads;
  t.head_dim = cfg.head_dim;
  t.vocab_size = cfg.vocab_size;
  t.rms_norm_eps = cfg.rms_norm_eps;
  return t;
}

KvPool make_kv_pool(const TextConfig& cfg, int64_t n_blocks, int block_size, DType dtype, kernels::Ops* ops) {
  return KvPool(kv_shape(cfg), n_blocks, block_size, dtype, ops);
}

void Decoder::embed(const int32_t* ids, int64_t n, float* out) const {
  if (ops_.host_memory()) {
    ops_.embed(w_.embed_tokens, ops_.i32(ids, n), ops_.f32(out, n, w_.embed_tokens.cols));
    return;
  }
  std::shared_ptr<void> d = ops_.alloc(static_cast<size_t>(n) * sizeof(int32_t));
  ops_.from_host(d.get(), ids, static_cast<size_t>(n) * sizeof(int32_t));
  ops_.embed(w_.embed_tokens, ops_.i32(static_cast<const int32_t*>(d.get()), n), ops_.f32(out, n, w_.embed_tokens.cols));
  ops_.synchronize();
}

void Decoder::greedy(const float* h, int64_t n, int32_t* out) const {
  ops_.matmul_argmax(ops_.f32(h, n, cfg_.hidden_size), w_.lm_head, out);
}

void Decoder::logits(const float* h, int64_t n, float* out) const {
  ops_.matmul(ops_.f32(h, n, cfg_.hidden_size), w_.lm_head, ops_.f32(out, n, w_.lm_head.rows));
}

namespace {

enum Slot { kH, kProj, kConv, kCore, kAttn, kO, kGateUp, kArrays };

// The step's host arrays, and their copies in backend memory when the backend has its own.
struct StepArrays {
  std::vector<float> cos, sin;
  std::vector<int32_t> slots, cu_q, seq_lens, tables, state_slots, fresh, prompt;
  int64_t max_blocks = 1, max_q = 0, max_len = 0;
};

}  // namespace

void Decoder::forward(float* x_data, const std::vector<Seq>& seqs, KvPool& kv, StatePool& states, Workspace& ws,
                      const std::function<void(int, const float*)>& on_hidden) const {
  const int64_t H = cfg_.hidden_size, hd = cfg_.head_dim, rot = cfg_.rotary_dim();
  const int64_t nq = cfg_.num_attention_heads, nkv = cfg_.num_key_value_heads;
  const int64_t qw = nq * hd, kvw = nkv * hd, I = cfg_.intermediate_size;
  const int64_t nk = cfg_.linear_num_key_heads, nv = cfg_.linear_num_value_heads;
  const int64_t kw = nk * cfg_.linear_key_head_dim, vw = nv * cfg_.linear_value_head_dim, C = cfg_.conv_dim();
  const float eps = cfg_.rms_norm_eps;
  const int64_t bs = kv.block_size();

  // Host arrays of the step.
  StepArrays a;
  int64_t R = 0;
  for (const Seq& s : seqs) {
    R += s.n_new;
    a.max_blocks = std::max<int64_t>(a.max_blocks, (s.kv_pos0 + s.n_new + bs - 1) / bs);
    a.max_q = std::max(a.max_q, s.n_new);
    a.max_len = std::max(a.max_len, s.kv_pos0 + s.n_new);
  }
  const int64_t n = static_cast<int64_t>(seqs.size());
  a.cos.resize(R * rot / 2);
  a.sin.resize(R * rot / 2);
  a.slots.resize(R);
  a.cu_q.assign(n + 1, 0);
  a.seq_lens.resize(n);
  a.tables.assign(n * a.max_blocks, 0);
  a.state_slots.resize(n);
  a.fresh.resize(n);
  a.prompt.resize(n);
  int64_t row = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Seq& s = seqs[i];
    std::vector<int64_t> p3;
    const int64_t *pt, *ph, *pw;
    if (s.positions) {
      pt = s.positions;
      ph = s.positions + s.n_new;
      pw = s.positions + 2 * s.n_new;
    } else {
      p3.resize(s.n_new);
      for (int64_t j = 0; j < s.n_new; ++j) p3[j] = s.rope_pos0 + j;
      pt = ph = pw = p3.data();
    }
    const RopeTable t = text_mrope(cfg_, pt, ph, pw, s.n_new);
    std::copy(t.cos.begin(), t.cos.end(), a.cos.begin() + row * rot / 2);
    std::copy(t.sin.begin(), t.sin.end(), a.sin.begin() + row * rot / 2);
    for (int64_t j = 0; j < s.n_new; ++j) {
      const int64_t pos = s.kv_pos0 + j;
      a.slots[row + j] = static_cast<int32_t>(static_cast<int64_t>(s.block_table[pos / bs]) * bs + pos % bs);
    }
    const int64_t nb = (s.kv_pos0 + s.n_new + bs - 1) / bs;
    std::copy(s.block_table, s.block_table + nb, a.tables.begin() + i * a.max_blocks);
    a.seq_lens[i] = static_cast<int32_t>(s.kv_pos0 + s.n_new);
    a.state_slots[i] = s.state_slot;
    a.fresh[i] = s.fresh ? 1 : 0;
    a.prompt[i] = s.prompt ? 1 : 0;
    row += s.n_new;
    a.cu_q[i + 1] = static_cast<int32_t>(row);
  }

  // The arrays in backend memory (host backends read the host ones).
  auto dev_i32 = [&](std::vector<int32_t>& v, std::vector<std::shared_ptr<void>>& keep) -> const int32_t* {
    if (ops_.host_memory()) return v.data();
    keep.push_back(ops_.alloc(std::max<size_t>(1, v.size()) * sizeof(int32_t)));
    ops_.from_host(keep.back().get(), v.data(), v.size() * sizeof(int32_t));
    return static_cast<const int32_t*>(keep.back().get());
  };
  auto dev_f32 = [&](std::vector<float>& v, std::vector<std::shared_ptr<void>>& keep) -> const float* {
    if (ops_.host_memory()) return v.data();
    keep.push_back(ops_.alloc(std::max<size_t>(1, v.size()) * sizeof(float)));
    ops_.from_host(keep.back().get(), v.data(), v.size() * sizeof(float));
    return static_cast<const float*>(keep.back().get());
  };
  std::vector<std::shared_ptr<void>> keep;
  kernels::PagedBatch pb;
  pb.n_seqs = n;
  pb.cu_q = dev_i32(a.cu_q, keep);
  pb.seq_lens = dev_i32(a.seq_lens, keep);
  pb.tables = dev_i32(a.tables, keep);
  pb.host_cu_q = a.cu_q.data();
  pb.host_seq_lens = a.seq_lens.data();
  pb.host_tables = a.tables.data();
  pb.max_blocks = a.max_blocks;
  pb.block_size = bs;
  pb.max_q = a.max_q;
  pb.max_seq_len = a.max_len;
  pb.host_prompt = a.prompt.data();
  kernels::StateBatch sb;
  sb.n_seqs = n;
  sb.cu_q = pb.cu_q;
  sb.slots = dev_i32(a.state_slots, keep);
  sb.fresh = dev_i32(a.fresh, keep);
  sb.host_cu_q = a.cu_q.data();
  sb.host_slots = a.state_slots.data();
  sb.host_fresh = a.fresh.data();
  sb.max_q = a.max_q;
  const kernels::View cos = ops_.f32(dev_f32(a.cos, keep), R, rot / 2);
  const kernels::View sin = ops_.f32(dev_f32(a.sin, keep), R, rot / 2);
  const kernels::View slots = ops_.i32(dev_i32(a.slots, keep), R);

  kernels::DeltaNetParams dp;
  dp.n_k_heads = nk;
  dp.n_v_heads = nv;
  dp.k_dim = cfg_.linear_key_head_dim;
  dp.v_dim = cfg_.linear_value_head_dim;
  dp.tiled = w_.tiled_v_heads;

  const kernels::View x = ops_.f32(x_data, R, H);
  const kernels::View h = ws.view(kH, R, H);
  const kernels::View attn = ws.view(kAttn, R, std::max(qw, vw));
  const kernels::View o = ws.view(kO, R, H);
  const kernels::View gate_up = ws.view(kGateUp, R, 2 * I);
  const kernels::View gate = gate_up.cols_range(0, I), up = gate_up.cols_range(I, I);

  std::vector<float> host;
  auto hidden = [&](int i) {
    if (!on_hidden) return;
    if (ops_.host_memory()) return on_hidden(i, x.f32());
    host.resize(static_cast<size_t>(R * H));
    ops_.to_host(host.data(), x.f32(), host.size() * sizeof(float));
    on_hidden(i, host.data());
  };

  hidden(0);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  int full_i = 0, lin_i = 0;
  for (int l = 0; l < cfg_.num_hidden_layers; ++l) {
    const LayerWeights& L = w_.layers[l];
    ops_.rms_norm(x, L.input_layernorm, eps, h);
    if (L.full_attention) {
      const kernels::View proj = ws.view(kProj, R, 2 * qw + 2 * kvw);  // [q | gate | k | v]
      const kernels::View q = proj.cols_range(0, qw), g = proj.cols_range(qw, qw);
      const kernels::View k = proj.cols_range(2 * qw, kvw), v = proj.cols_range(2 * qw + kvw, kvw);
      ops_.matmul(h, L.attn.qgkv, proj);
      ops_.rms_norm(q, L.attn.q_norm, eps, q);  // per head
      ops_.rms_norm(k, L.attn.k_norm, eps, k);
      for (int64_t j = 0; j < nq; ++j) ops_.rope(q.cols_range(j * hd, rot), cos, sin);  // the rotary part of each head
      for (int64_t j = 0; j < nkv; ++j) ops_.rope(k.cols_range(j * hd, rot), cos, sin);
      const kernels::KvLayer layer = kv.layer(full_i++);
      const kernels::View out = attn.cols_range(0, qw);
      ops_.kv_store(k, v, slots, layer);
      ops_.paged_attention(q, layer, pb, scale, out);
      ops_.sigmoid_mul(g, out, out);
      ops_.matmul(out, L.attn.o_proj, o);
    } else {
      const DeltaNetWeights& D = L.linear;
      const kernels::View proj = ws.view(kProj, R, C + vw + 2 * nv);  // [qkv | z | b | a]
      const kernels::View qkv = proj.cols_range(0, C), z = proj.cols_range(C, vw);
      const kernels::View b = proj.cols_range(C + vw, nv), av = proj.cols_range(C + vw + nv, nv);
      const kernels::View conv = ws.view(kConv, R, C);
      const kernels::View core = attn.cols_range(0, vw);
      ops_.matmul(h, D.in_proj, proj);
      ops_.conv1d_silu(qkv, D.conv, states.conv(lin_i), sb, conv);
      ops_.gated_delta_net(conv.cols_range(0, kw), conv.cols_range(kw, kw), conv.cols_range(2 * kw, vw), av, b,
                           D.a_log, D.dt_bias, states.recurrent(lin_i), sb, dp, core);
      ++lin_i;
      ops_.rms_norm(core, D.norm, eps, core);  // per value head, plain weight
      ops_.silu_mul(z, core, z);               // norm(o) * silu(z), into z
      ops_.matmul(z, D.out_proj, o);
    }
    ops_.add_rms_norm(x, o, L.post_attention_layernorm, eps, h);
    ops_.matmul(h, L.gate_up, gate_up);
    ops_.silu_mul(gate, up, gate);
    ops_.matmul(gate, L.down_proj, o);
    ops_.add(x, o);
    if (l + 1 < cfg_.num_hidden_layers) hidden(l + 1);
  }
  ops_.rms_norm(x, w_.norm, eps, x);
  hidden(cfg_.num_hidden_layers);
  ops_.synchronize();
}

}  // namespace locr::model::qwen35
