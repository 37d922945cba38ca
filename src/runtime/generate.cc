#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

namespace locr::runtime {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

SamplingParams default_sampling(const model::GenerationConfig& g) {
  SamplingParams s;
  if (g.do_sample) {
    s.temperature = g.temperature;
    s.top_p = g.top_p;
    s.top_k = g.top_k;
  } else {
    s.temperature = 0.0f;
  }
  return s;
}

GenerateResult generate(const model::LightOnOcr& m, const model::Prompt& prompt, const GenerateOptions& opts,
                        const GenerateHooks& hooks) {
  GenerateResult r;
  const auto& tc = m.config().text;
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  const int64_t V = tc.vocab_size;

  auto t0 = std::chrono::steady_clock::now();
  model::ImageEncoding enc = m.encode_images(prompt.images);
  r.vision_s = seconds_since(t0);
  if (hooks.on_images && !prompt.images.empty()) hooks.on_images(enc);

  t0 = std::chrono::steady_clock::now();
  Tensor x = m.embed_prompt(prompt.ids, prompt.images.empty() ? nullptr : &enc.embeds);
  model::KvCache cache(tc, T + std::max(0, opts.max_tokens), 16, m.decoder().kv_dtype());
  std::function<void(int, const float*)> on_hidden;
  if (hooks.on_hidden) on_hidden = [&](int i, const float* h) { hooks.on_hidden(i, h, T); };
  m.decoder().forward(x.data<float>(), T, cache, on_hidden);
  std::vector<float> logits(V);
  m.decoder().logits(x.data<float>() + (T - 1) * tc.hidden_size, 1, logits.data());
  if (hooks.on_prompt_logits) hooks.on_prompt_logits(logits.data(), V);
  r.prefill_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  Sampler sampler(opts.sampling);
  LoopGuard guard(opts.loop_guard);
  std::vector<float> h(tc.hidden_size);
  r.finish_reason = "length";
  for (int step = 0; step < opts.max_tokens; ++step) {
    if (step > 0) {
      m.decoder().embed(&r.tokens.back(), 1, h.data());
      m.decoder().forward(h.data(), 1, cache);
      m.decoder().logits(h.data(), 1, logits.data());
    }
    const int32_t tok = sampler.sample(logits.data(), V);
    r.tokens.push_back(tok);
    const bool eos = !opts.ignore_eos &&
                     std::find(opts.eos_ids.begin(), opts.eos_ids.end(), tok) != opts.eos_ids.end();
    if (hooks.on_token && !hooks.on_token(tok)) {
      r.finish_reason = "stop";
      break;
    }
    if (eos) {
      r.finish_reason = "stop";
      break;
    }
    if (guard.push(tok)) {
      r.finish_reason = "stop";
      r.stop_reason = "repetition";
      break;
    }
  }
  r.decode_s = seconds_since(t0);
  return r;
}

}  // namespace locr::runtime
