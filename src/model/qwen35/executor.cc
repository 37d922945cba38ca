#include "model/qwen35/executor.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace locr::model::qwen35 {

namespace {

struct Job : VisionJob {
  std::unique_ptr<VisionState> state;
  int depth = 0;
  int64_t n_patches() const override { return state->n; }
  bool done() const override { return state->next_layer >= depth; }
};

}  // namespace

Seq decoder_seq(const StepSeq& s, std::vector<int64_t>* positions) {
  std::vector<int64_t>& p3 = *positions;
  p3.resize(3 * s.n);
  for (int64_t i = 0; i < s.n; ++i) {
    const int64_t p = s.pos0 + i;
    for (int a = 0; a < 3; ++a) p3[a * s.n + i] = p < s.mrope_len ? s.mrope[a * s.mrope_len + p] : p + s.rope_delta;
  }
  Seq q;
  q.n_new = s.n;
  q.kv_pos0 = s.pos0;
  q.block_table = s.block_table;
  q.positions = p3.data();
  q.state_slot = s.state_slot;
  q.fresh = s.pos0 == 0;
  q.prompt = s.prompt;
  return q;
}

CpuExecutor::CpuExecutor(const Model& model, const ExecutorOptions& opts)
    : model_(model),
      kv_(make_kv_pool(model.config().text,
                       kv_blocks_for(opts.kv_cache_bytes,
                                     KvPool::bytes_per_block(kv_shape(model.config().text), opts.block_size,
                                                             model.decoder().kv_dtype()),
                                     opts.max_kv_blocks),
                       opts.block_size, model.decoder().kv_dtype())),
      states_(model.config().text, std::max(1, opts.max_num_seqs), model.ops()),
      ws_(model.ops()) {
  LOCR_CHECK(model.ops().host_memory(), "the Qwen3.5 executor runs on the host backends");
}

int64_t CpuExecutor::kv_bytes_per_block() const {
  return KvPool::bytes_per_block(kv_shape(model_.config().text), kv_.block_size(), kv_.dtype());
}

std::unique_ptr<VisionJob> CpuExecutor::vision_begin(const std::vector<ProcessedImage>& images) {
  auto job = std::make_unique<Job>();
  const std::vector<float> patches = model_.vision_patches(images);
  job->state = model_.vision().begin(patches.data(), Model::grids(images));
  job->depth = model_.vision().depth();
  return job;
}

void CpuExecutor::vision_run(VisionJob& j, int n_layers) {
  auto& job = dynamic_cast<Job&>(j);
  model_.vision().run(*job.state, n_layers);
}

std::shared_ptr<ImageEmbeds> CpuExecutor::vision_finish(VisionJob& j, Tensor* vision_hidden) {
  auto& job = dynamic_cast<Job&>(j);
  return std::make_shared<TensorEmbeds>(model_.vision().finish(*job.state, vision_hidden), model_.ops());
}

int CpuExecutor::vision_layers() const { return model_.vision().depth(); }

void CpuExecutor::step(const std::vector<StepSeq>& seqs, StepOutput* out, const HiddenHook& hidden) {
  const int64_t H = model_.config().text.hidden_size, V = model_.config().text.vocab_size;
  int64_t R = 0;
  for (const auto& s : seqs) R += s.n;
  Tensor x = Tensor::empty(DType::kF32, {R, H});
  std::vector<Seq> steps;
  std::vector<std::vector<int64_t>> positions(seqs.size());
  std::vector<int64_t> sample_rows, greedy_rows;
  std::vector<size_t> greedy_seqs;
  out->logits_seq.clear();
  out->tokens.assign(seqs.size(), -1);
  out->logprobs.assign(seqs.size(), 0.0f);
  int64_t row = 0;
  for (size_t k = 0; k < seqs.size(); ++k) {
    const StepSeq& s = seqs[k];
    LOCR_CHECK(s.state_slot >= 0 && s.state_slot < states_.n_slots(), "state slot ", s.state_slot, " of ",
               states_.n_slots());
    float* xr = x.data<float>() + row * H;
    model_.decoder().embed(s.ids, s.n, xr);
    write_image_rows(s, xr, H);
    steps.push_back(decoder_seq(s, &positions[k]));
    if (greedy_on_executor(s)) {
      greedy_rows.push_back(row + s.n - 1);
      greedy_seqs.push_back(k);
    } else {
      want_logits_rows(s, static_cast<int>(k), row, &sample_rows, out);
    }
    row += s.n;
  }
  std::function<void(int, const float*)> on_hidden;
  if (hidden) on_hidden = [&](int i, const float* h) { hidden(i, h, R); };
  model_.decoder().forward(x.data<float>(), steps, kv_, states_, ws_, on_hidden);
  out->logits = Tensor();
  if (!greedy_rows.empty()) {
    const Tensor h = gather_rows(x, greedy_rows);
    std::vector<int32_t> tokens(greedy_rows.size());
    model_.decoder().greedy(h.data<float>(), h.dim(0), tokens.data());
    for (size_t i = 0; i < tokens.size(); ++i) out->tokens[greedy_seqs[i]] = tokens[i];
  }
  if (sample_rows.empty()) return;
  const Tensor h = gather_rows(x, sample_rows);
  out->logits = Tensor::empty(DType::kF32, {h.dim(0), V});
  model_.decoder().logits(h.data<float>(), h.dim(0), out->logits.data<float>());
}

}  // namespace locr::model::qwen35
