#include "runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>
#include <optional>

#include "core/error.h"
#include "runtime/executor_factory.h"

namespace locr::runtime {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

model::ExecutorOptions single_sequence_options(int64_t prompt_len, int64_t positions) {
  model::ExecutorOptions o;
  o.block_size = 16;
  o.max_kv_blocks = std::max<int64_t>(1, (positions + o.block_size - 1) / o.block_size);
  o.kv_cache_bytes = std::numeric_limits<int64_t>::max() / 2;  // the block cap decides
  o.max_num_seqs = 1;
  o.max_num_batched_tokens = static_cast<int>(std::max<int64_t>(1, prompt_len));
  o.max_model_len = static_cast<int>(std::max<int64_t>(1, positions));
  o.cuda_graphs = false;  // one sequence, a few hundred steps: capture would not pay off
  return o;
}

GenerateResult generate(const model::Model& m, const model::Prompt& prompt, const DecodeParams& opts,
                        const GenerateHooks& hooks) {
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  auto exec = make_executor(m, single_sequence_options(T, T + std::max(0, opts.max_tokens)));
  return generate(m, *exec, prompt, opts, hooks);
}

GenerateResult generate(const model::Model& m, model::Executor& exec, const model::Prompt& prompt,
                        const DecodeParams& opts, const GenerateHooks& hooks) {
  GenerateResult r;
  const int64_t T = static_cast<int64_t>(prompt.ids.size());
  const int64_t V = m.vocab_size();
  const int64_t positions = T + std::max(0, opts.max_tokens);
  LOCR_CHECK(exec.kv_blocks() * exec.block_size() >= positions, "KV cache overflow: ", positions, " > ",
             exec.kv_blocks() * exec.block_size());
  std::vector<int32_t> table(exec.kv_blocks());
  std::iota(table.begin(), table.end(), 0);

  if (hooks.taps && !exec.set_taps(hooks.taps))
    fail(ErrorKind::kUnsupported, "the ", exec.name(),
         " executor cannot record named taps; use --backend ref, cpu-f32 or cpu");
  // The executor never keeps the caller's taps past this call, also when it throws.
  struct TapsReset {
    model::Executor& e;
    bool on;
    ~TapsReset() {
      if (on) e.set_taps(nullptr);
    }
  } taps_reset{exec, hooks.taps != nullptr};
  auto t0 = std::chrono::steady_clock::now();
  std::shared_ptr<model::ImageEmbeds> images;
  std::vector<int64_t> image_rows;
  if (!prompt.images.empty()) {
    auto job = exec.vision_begin(prompt.images);
    exec.vision_run(*job, exec.vision_layers());
    model::ImageEncoding enc;
    images = exec.vision_finish(*job, hooks.on_images ? &enc.vision_hidden : nullptr);
    if (hooks.on_images) {
      enc.embeds = images->to_host();
      hooks.on_images(enc);
    }
  }
  {
    int64_t next = 0;
    const int64_t available = images ? images->rows() : 0;
    image_rows.assign(T, -1);
    for (int64_t t = 0; t < T; ++t)
      if (prompt.ids[t] == m.image_token_id()) {
        if (next >= available)
          fail(ErrorKind::kInvalidArgument, "prompt has more image tokens than image features (", available, ")");
        image_rows[t] = next++;
      }
    if (next != available)
      fail(ErrorKind::kInvalidArgument, "image features (", available, ") and image tokens (", next, ") do not match");
  }
  r.vision_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  model::StepSeq st;
  st.ids = prompt.ids.data();
  st.n = T;
  st.pos0 = 0;
  st.block_table = table.data();
  st.table_len = static_cast<int64_t>(table.size());
  st.images = images.get();
  st.image_rows = images ? image_rows.data() : nullptr;
  st.want_logits = true;
  // Multimodal RoPE rows (Qwen3.5) for the prompt and every step after it.
  st.mrope = prompt.positions.empty() ? nullptr : prompt.positions.data();
  st.mrope_len = prompt.positions.empty() ? 0 : T;
  st.rope_delta = prompt.rope_delta;
  model::StepOutput out;
  model::HiddenHook on_hidden;
  if (hooks.on_hidden) on_hidden = [&](int i, const float* h, int64_t rows) { hooks.on_hidden(i, h, rows); };
  exec.step({st}, &out, on_hidden);
  if (hooks.taps) exec.set_taps(nullptr);  // taps cover the prompt, as the hidden states do
  taps_reset.on = false;
  std::vector<float> logits(out.logits.data<float>(), out.logits.data<float>() + V);
  if (hooks.on_prompt_logits) hooks.on_prompt_logits(logits.data(), V);
  r.prefill_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  TokenSelector selector(opts, std::max(0, opts.max_tokens));
  std::vector<int32_t> context = prompt.ids;  // what the penalties look at: prompt + output
  for (int step = 0; step < opts.max_tokens; ++step) {
    if (step > 0) {
      model::StepSeq d;
      d.ids = &r.tokens.back();
      d.n = 1;
      d.pos0 = T + step - 1;
      d.block_table = table.data();
      d.table_len = st.table_len;
      d.want_logits = true;
      d.mrope = st.mrope;
      d.mrope_len = st.mrope_len;
      d.rope_delta = st.rope_delta;
      exec.step({d}, &out);
      std::copy(out.logits.data<float>(), out.logits.data<float>() + V, logits.begin());
    }
    const std::optional<Selection> sel = selector.select(logits.data(), V, context);
    if (!sel) {  // a forced output ended without an EOS id
      r.finish_reason = FinishReason::kStop;
      break;
    }
    r.tokens.push_back(sel->token);
    context.push_back(sel->token);
    const std::optional<Finish> fin = selector.accept(sel->token);
    if (hooks.on_token && !hooks.on_token(sel->token)) {
      r.finish_reason = FinishReason::kStop;
      break;
    }
    if (fin) {
      r.finish_reason = fin->reason;
      r.stop_reason = fin->stop;
      break;
    }
  }
  r.decode_s = seconds_since(t0);
  return r;
}

}  // namespace locr::runtime
