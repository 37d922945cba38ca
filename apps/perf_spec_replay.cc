#include "apps/perf_spec_replay.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "core/error.h"
#include "runtime/engine.h"
#include "toolkit/bench_stats.h"

namespace locr::app {

namespace {

struct Batch {
  std::vector<std::vector<int32_t>> tokens;
  double decode_tok_s = 0;
  int64_t drafted = 0, accepted = 0;
};

// Sequence b's prompt: the page prompt with its first token replaced by id b (a byte token of the
// BPE vocabulary, never a special one) for b = 1..255, so that the sequences of a batch share no
// cached block and each reads its own KV cache, as distinct pages do.
std::vector<int32_t> prompt_of(const model::Prompt& prompt, int b, int64_t vocab) {
  std::vector<int32_t> ids = prompt.ids;
  if (b > 0 && b < 256 && b < vocab && !ids.empty()) ids[0] = static_cast<int32_t>(b);
  return ids;
}

// `replay`: each sequence's drafts (none: plain decoding); `backoff`: the drafters' back-off (off for
// the ceiling, where every draft is right and a short first draft would only lower it).
Batch run(runtime::Engine& engine, const model::Prompt& prompt, int64_t vocab, int gen, int batch, int k,
          const std::vector<std::vector<int32_t>>* replay, bool backoff = false) {
  std::vector<std::shared_ptr<runtime::RequestStream>> streams;
  for (int b = 0; b < batch; ++b) {
    runtime::RequestInput in;
    in.request_id = "perf-" + std::to_string(b);
    in.prompt_ids = prompt_of(prompt, b, vocab);
    in.images = prompt.images;
    in.decode.max_tokens = gen;
    in.decode.ignore_eos = true;
    in.decode.sampling.temperature = 0;
    if (replay) {
      in.spec.method = runtime::SpeculativeConfig::Method::kReplay;
      in.spec.num_speculative_tokens = k;
      in.spec.backoff = backoff;
      in.draft_corpus = (*replay)[static_cast<size_t>(b)];
    }
    streams.push_back(engine.submit(std::move(in)));
  }
  Batch out;
  double first = 1e300, last = 0;
  int64_t after_first = 0;
  for (auto& s : streams) {
    std::vector<int32_t> toks;
    for (;;) {
      auto e = s->next(std::chrono::milliseconds(600000));
      if (!e) fail(ErrorKind::kInternal, "perf: the engine did not finish a request in 10 minutes");
      if (e->token >= 0) toks.push_back(e->token);
      if (e->finished) {
        if (e->finish_reason == runtime::FinishReason::kError) fail(ErrorKind::kInternal, "perf: ", e->error);
        break;
      }
    }
    const runtime::RequestTimes t = s->times();
    first = std::min(first, t.first_token_s);
    last = std::max(last, t.finished_s);
    after_first += std::max<int64_t>(0, static_cast<int64_t>(toks.size()) - 1);
    out.drafted += t.drafted_tokens;
    out.accepted += t.accepted_tokens;
    out.tokens.push_back(std::move(toks));
  }
  out.decode_tok_s = last > first ? static_cast<double>(after_first) / (last - first) : 0;
  return out;
}

}  // namespace

SpecReplayResult spec_replay(const model::LightOnOcr& m, const model::Prompt& prompt, int gen, int batch, int k,
                             int repeat) {
  const auto& cfg = m.config().text;
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  runtime::EngineOptions eo;
  eo.max_num_seqs = batch;
  eo.block_size = 16;
  eo.max_model_len = static_cast<int>(std::min<int64_t>(cfg.max_position_embeddings, T + gen + k + 2));
  // Prefix caching, warmed by a first run: the measured runs' prefills take their cached blocks, so
  // the batch decodes together from its first token (otherwise the later sequences' prefills would
  // fall inside the decode window at batch > 1).
  eo.enable_prefix_caching = true;
  const int64_t blocks = 2 * ((T + gen + k + 2 + eo.block_size - 1) / eo.block_size + 1);
  eo.kv_cache_bytes = blocks * batch * model::KvPool::bytes_per_block(cfg, eo.block_size, m.decoder().kv_dtype());
  if (m.backend() == "cuda") eo.kv_cache_bytes = -1;
  runtime::Engine engine(m, eo);
  std::vector<double> plain, replay, miss;
  const int64_t vocab = cfg.vocab_size;
  run(engine, prompt, vocab, 1, batch, k, nullptr);  // fills the prefix cache
  SpecReplayResult r;
  for (int i = 0; i < repeat; ++i) {
    const Batch p = run(engine, prompt, vocab, gen, batch, k, nullptr);
    const Batch s = run(engine, prompt, vocab, gen, batch, k, &p.tokens);
    std::vector<std::vector<int32_t>> wrong = p.tokens;
    for (auto& seq : wrong)
      for (int32_t& t : seq) t = static_cast<int32_t>((t + 1) % vocab);  // never the greedy token
    const Batch w = run(engine, prompt, vocab, gen, batch, k, &wrong, /*backoff=*/true);
    plain.push_back(p.decode_tok_s);
    replay.push_back(s.decode_tok_s);
    miss.push_back(w.decode_tok_s);
    r.identical = r.identical && s.tokens == p.tokens && w.tokens == p.tokens;
    r.drafted += s.drafted;
    r.accepted += s.accepted;
    r.miss_drafted += w.drafted;
    r.miss_accepted += w.accepted;
  }
  engine.shutdown(true);
  r.plain_tok_s = toolkit::percentile(plain, 50);
  r.replay_tok_s = toolkit::percentile(replay, 50);
  r.miss_tok_s = toolkit::percentile(miss, 50);
  return r;
}

}  // namespace locr::app
