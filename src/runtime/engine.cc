#include "runtime/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <optional>
#include <span>

#include "core/log.h"
#include "model/memory_sizing.h"
#include "runtime/executor_factory.h"

namespace locr::runtime {

using Clock = std::chrono::steady_clock;

struct Engine::Seq {
  RequestInput in;
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  size_t n_prompt = 0;
  std::vector<int32_t> table;   // KV block table
  int32_t slot = -1;            // recurrent-state slot (hybrid models), while running
  std::vector<int64_t> positions;  // multimodal RoPE rows [3, n_prompt] (models with them)
  int64_t rope_delta = 0;
  int64_t n_computed = 0;       // tokens whose KV is in the cache
  std::vector<BlockHash> block_hashes;  // content keys of the prompt's full blocks
  bool hashed = false;                 // block_hashes computed (once: image digests are not cheap)
  int64_t n_published = 0;
  // Vision.
  std::unique_ptr<model::VisionJob> vision;
  std::shared_ptr<VisionLane::Task> vision_task;  // in the vision lane (lane_), until collected
  std::shared_ptr<model::ImageEmbeds> image_embeds;  // [n image tokens, hidden] once encoded
  std::vector<int64_t> image_index;  // per prompt position: row of image_embeds or -1
  bool vision_done = true;
  // Token selection and the finish decision (runtime/token_selector.h, as runtime::generate).
  std::unique_ptr<TokenSelector> selector;
  uint64_t device_seed = 0;     // seeds device sampling (the request's seed when it gives one)
  // Speculative decoding (runtime/speculative.h): the drafter, and this step's verification rows
  // [last token, drafts...] when it has drafts.
  std::unique_ptr<Drafter> drafter;
  std::vector<int32_t> verify;
  // Timing.
  Clock::time_point t_submit, t_admit, t_first_token, t_last_token;
  bool admitted = false;
  bool finished = false;
  RequestTimes times;

  int64_t n_generated() const { return static_cast<int64_t>(tokens.size() - n_prompt); }
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
};

namespace {
double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

model::ExecutorOptions executor_options(const EngineOptions& o) {
  model::ExecutorOptions e;
  e.block_size = o.block_size;
  e.kv_cache_bytes = o.kv_cache_bytes;
  e.gpu_memory_utilization = o.gpu_memory_utilization;
  // Sized from device memory: no more than the sequences could ever use, as server/memory_plan
  // caps the host pool (model/memory_sizing.h).
  if (o.kv_cache_bytes < 0) e.max_kv_blocks = model::kv_blocks_cap(o.max_num_seqs, o.max_model_len, o.block_size);
  e.max_num_seqs = o.max_num_seqs;
  e.max_num_batched_tokens = o.max_num_batched_tokens;
  e.max_model_len = o.max_model_len;
  e.cuda_graphs = o.cuda_graphs;
  return e;
}

}  // namespace

Engine::Engine(const model::Model& model, const EngineOptions& opts)
    : model_(model),
      opts_(opts),
      exec_(make_executor(model, executor_options(opts))),
      // A recurrent state cannot be restored from cached blocks: no prefix caching for hybrid models.
      blocks_(exec_->kv_blocks(), opts.block_size, opts.enable_prefix_caching && exec_->state_slots() == 0),
      metrics_(opts.max_model_len) {
  if (exec_->state_slots() > 0) {
    if (opts_.enable_prefix_caching)
      LOCR_INFO("engine: prefix caching is off: this model (", model.architecture(),
                ") keeps a recurrent state per sequence that cached KV blocks cannot restore");
    opts_.enable_prefix_caching = false;
    for (int32_t i = static_cast<int32_t>(exec_->state_slots()); i-- > 0;) free_slots_.push_back(i);
  }
  if (opts_.vision_budget <= 0) opts_.vision_budget = 4LL * opts_.max_num_batched_tokens;
  // vLLM's CacheConfig fields that mean something here, valued as Python's str() writes them.
  metrics_.cache_config = {
      {"block_size", std::to_string(opts_.block_size)},
      {"cache_dtype", model.kv_dtype() == DType::kF8E4M3 ? "fp8_e4m3" : "auto"},
      {"enable_prefix_caching", opts_.enable_prefix_caching ? "True" : "False"},
      {"engine", "0"},
      {"gpu_memory_utilization", prom_number(opts_.gpu_memory_utilization)},
      {"is_attention_free", "False"},
      {"kv_cache_memory_bytes", opts_.kv_cache_bytes >= 0 ? std::to_string(opts_.kv_cache_bytes) : "None"},
      {"num_cpu_blocks", "None"},
      {"num_gpu_blocks", std::to_string(blocks_.n_blocks())},
      {"num_gpu_blocks_override", "None"},
      {"prefix_caching_hash_algo", "sha256"},
      {"sliding_window", "None"},
  };
  free_blocks_ = blocks_.n_free();
  const int threads = ThreadPool::global().size();
  if (opts_.vision_lane && exec_->concurrent_vision() && threads >= 2) {
    lane_ = std::make_unique<VisionLane>(*exec_, threads, [this] {
      {
        std::lock_guard<std::mutex> lock(mu_);
        lane_signal_ = true;
      }
      cv_.notify_all();
    });
    LOCR_INFO("engine: vision lane of ", lane_->vision_threads(), " of ", threads,
              " threads beside the steps (all of them when there is nothing to decode)");
  }
  LOCR_INFO("engine: ", exec_->name(), " executor, ", blocks_.n_blocks(), " KV blocks of ", opts_.block_size,
            " tokens (", blocks_.n_blocks() * opts_.block_size, " tokens, ",
            (blocks_.n_blocks() * exec_->kv_bytes_per_block()) >> 20,
            " MiB reserved), max_num_seqs ", opts_.max_num_seqs, ", max_num_batched_tokens ",
            opts_.max_num_batched_tokens, ", prefix caching ", opts_.enable_prefix_caching ? "on" : "off");
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(false); }

std::shared_ptr<RequestStream> Engine::submit(RequestInput in) {
  auto s = std::make_unique<Seq>();
  s->stream = std::make_shared<RequestStream>();
  s->tokens = in.prompt_ids;
  s->n_prompt = in.prompt_ids.size();
  // max_tokens, and never past max_model_len (a longer prompt is finished "length" at admission).
  const int64_t max_new =
      std::min<int64_t>(in.decode.max_tokens, opts_.max_model_len - static_cast<int64_t>(s->n_prompt));
  s->selector = std::make_unique<TokenSelector>(in.decode, max_new);
  s->device_seed = in.decode.sampling.has_seed ? in.decode.sampling.seed : std::random_device{}();
  // Requests speculate when asked and the executor can verify (several logits rows) and rewind (no
  // recurrent state); greedy ones keep the drafts the model would choose, sampled ones draw with the
  // speculative rule. Otherwise they decode plainly: the same tokens.
  if (in.spec.enabled() && in.decode.forced_ids.empty() && exec_->supports_multi_row_logits() &&
      exec_->state_slots() == 0) {
    std::vector<int32_t> text;
    for (int32_t id : in.prompt_ids)
      if (id != model_.image_token_id()) text.push_back(id);
    s->drafter = make_drafter(in.spec, std::move(text), std::move(in.draft_corpus));
  }
  s->t_submit = Clock::now();
  s->in = std::move(in);
  // Multimodal RoPE rows, on the caller's thread (a bad prompt throws here, to the caller).
  model_.rope_positions(s->in.prompt_ids, s->in.images, &s->positions, &s->rope_delta);
  // Content keys on the caller's thread: an image digest (SHA-256 of its pixels, some 30 ms for a
  // 1540 px page) must not stall the engine thread. block_size and prefix_caching never change.
  if (blocks_.prefix_caching()) hash_blocks(*s);
  auto stream = s->stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      TokenEvent e;
      e.finished = true;
      e.finish_reason = FinishReason::kAbort;
      e.error = "the server is shutting down";
      stream->push(e);
      return stream;
    }
    incoming_.push_back(std::move(s));
    metrics_.num_waiting.fetch_add(1);
    metrics_.num_unfinished.fetch_add(1);
  }
  cv_.notify_one();
  return stream;
}

void Engine::shutdown(bool drain) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    drain_ = drain;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (waiting_.empty() && running_.empty()) {
        cv_.wait(lock, [&] { return stopping_ || !incoming_.empty(); });
      } else if (idle_on_lane_) {
        // Nothing to compute until the lane finishes an encoding; look again now and then for
        // cancelled requests (their encodings stop at the next layer).
        cv_.wait_for(lock, std::chrono::milliseconds(50),
                     [&] { return stopping_ || !incoming_.empty() || lane_signal_; });
      }
      lane_signal_ = false;
      while (!incoming_.empty()) {
        waiting_.push_back(std::move(incoming_.front()));
        incoming_.pop_front();
      }
      if (stopping_ && (!drain_ || (waiting_.empty() && running_.empty()))) break;
    }
    try {
      step();
    } catch (const std::exception& e) {
      fail_step(e.what());
    }
  }
  // Abort whatever is left.
  for (auto& s : running_) finish(*s, {FinishReason::kAbort, {}, {}});
  for (auto& s : waiting_) finish(*s, {FinishReason::kAbort, {}, {}});
  running_.clear();
  waiting_.clear();
}

void Engine::fail_step(const std::string& what) {
  LOCR_ERROR("engine: a step failed: ", what, "; its ", in_step_.empty() ? running_.size() : in_step_.size(),
             " request(s) end with an error, the others go on");
  const std::string msg = "internal error in the engine: " + what;
  if (in_step_.empty())
    for (auto& s : running_) in_step_.push_back(s.get());
  for (Seq* s : in_step_)
    if (!s->finished) finish(*s, {FinishReason::kError, {}, msg});
  in_step_.clear();
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& s) { return s->finished; }),
                 running_.end());
  metrics_.num_running = static_cast<int64_t>(running_.size());
  free_blocks_ = blocks_.n_free();
  metrics_.kv_usage = blocks_.usage();
}

void Engine::finish(Seq& s, Finish f) {
  if (s.vision_task) s.vision_task->cancelled.store(true);
  // Before the final event: a client that reads it sees its slot free (the gauges follow at the
  // end of the step).
  if (!s.finished) metrics_.num_unfinished.fetch_sub(1);
  s.finished = true;
  blocks_.release(s.table);
  s.table.clear();
  release_slot(s);
  // Before the final event: a caller that reads the free-block gauge right after it must see these blocks back.
  free_blocks_ = blocks_.n_free();
  metrics_.kv_usage = blocks_.usage();
  const auto now = Clock::now();
  s.times.finished_s = secs(s.t_submit, now);
  s.times.generated_tokens = s.n_generated();
  s.stream->set_times(s.times);
  // Metrics first: a client that reads /metrics right after its final event must see itself.
  metrics_.count_finished(finish_reason_name(f.reason));
  metrics_.e2e.observe(s.times.finished_s);
  metrics_.gen_len.observe(static_cast<double>(s.n_generated()));
  metrics_.max_tokens_param.observe(static_cast<double>(s.in.decode.max_tokens));
  if (s.admitted && (f.reason == FinishReason::kStop || f.reason == FinishReason::kLength)) {
    const double service = secs(s.t_admit, now), was = metrics_.recent_service_s.load();
    metrics_.recent_service_s.store(was > 0 ? was + 0.2 * (service - was) : service);
  }
  if (s.admitted && s.n_generated() > 0) {
    metrics_.prefill_time.observe(secs(s.t_admit, s.t_first_token));
    metrics_.decode_time.observe(secs(s.t_first_token, s.t_last_token));
    metrics_.inference_time.observe(secs(s.t_admit, s.t_last_token));
  }
  TokenEvent e;
  e.finished = true;
  e.finish_reason = f.reason;
  e.stop_reason = std::move(f.stop);
  e.error = std::move(f.error);
  s.stream->push(std::move(e));
}

bool Engine::take_slot(Seq& s) {
  if (exec_->state_slots() == 0 || s.slot >= 0) return true;
  if (free_slots_.empty()) return false;
  s.slot = free_slots_.back();
  free_slots_.pop_back();
  return true;
}

void Engine::release_slot(Seq& s) {
  if (s.slot < 0) return;
  free_slots_.push_back(s.slot);
  s.slot = -1;
}

bool Engine::ensure_blocks(Seq& s, int64_t n_tokens) {
  const int64_t need = blocks_.blocks_for(n_tokens);
  while (static_cast<int64_t>(s.table.size()) < need) {
    const int32_t b = blocks_.allocate();
    if (b < 0) return false;
    s.table.push_back(b);
  }
  return true;
}

void Engine::preempt(Seq& s) {
  // Recompute later: drop the KV, keep the tokens (prompt + generated so far) and image embeddings.
  blocks_.release(s.table);
  s.table.clear();
  release_slot(s);  // the state is recomputed from token 0, in whatever slot is free then
  s.n_computed = 0;
  s.n_published = 0;
  s.verify.clear();
  metrics_.preemptions.fetch_add(1);
  LOCR_DEBUG("preempted request ", s.in.request_id, " at ", s.tokens.size(), " tokens");
}

void Engine::hash_blocks(Seq& s) const {
  s.hashed = true;
  std::vector<BlockHash> digests;
  std::vector<int64_t> n_tokens;
  for (const auto& im : s.in.images) {
    digests.push_back(image_digest(im));
    n_tokens.push_back(model_.image_tokens(im));
  }
  s.block_hashes = prompt_block_hashes(s.in.prompt_ids, blocks_.block_size(), model_.image_token_id(), digests,
                                       n_tokens);
}

void Engine::admit_prefix(Seq& s) {
  if (!blocks_.prefix_caching() || s.n_computed != 0 || !s.table.empty()) return;
  const int bs = blocks_.block_size();
  if (!s.hashed) hash_blocks(s);
  // Always leave at least one prompt token to compute, so the step yields logits.
  std::vector<BlockHash> usable(s.block_hashes.begin(),
                               s.block_hashes.begin() + std::min<size_t>(s.block_hashes.size(), (s.n_prompt - 1) / bs));
  const int64_t reused = blocks_.reuse_prefix(usable, s.table);
  s.n_computed = reused * bs;
  s.n_published = reused;
  s.times.cached_tokens = s.n_computed;
}

void Engine::publish_blocks(Seq& s) {
  if (!blocks_.prefix_caching()) return;
  const int bs = blocks_.block_size();
  while (s.n_published < static_cast<int64_t>(s.block_hashes.size()) && (s.n_published + 1) * bs <= s.n_computed) {
    blocks_.publish(s.table[s.n_published], s.block_hashes[s.n_published]);
    ++s.n_published;
  }
}

void Engine::run_vision(Seq& s, int64_t budget) {
  const auto t0 = Clock::now();
  if (!s.vision && opts_.debug_fail_vision > 0 && ++n_visions_ == opts_.debug_fail_vision)
    throw std::runtime_error("injected fault (--debug-fail-vision " + std::to_string(opts_.debug_fail_vision) + ")");
  if (!s.vision) s.vision = exec_->vision_begin(s.in.images);
  const int64_t n = std::max<int64_t>(1, s.vision->n_patches());
  const int layers = static_cast<int>(std::clamp<int64_t>(budget / n, 1, exec_->vision_layers()));
  exec_->vision_run(*s.vision, layers);
  std::shared_ptr<model::ImageEmbeds> embeds;
  if (s.vision->done()) {
    embeds = exec_->vision_finish(*s.vision);
    s.vision.reset();
  }
  const double vision_s = secs(t0, Clock::now());
  s.times.vision_s += vision_s;
  metrics_.busy_vision_s.fetch_add(vision_s);
  if (embeds) vision_finished(s, std::move(embeds));
}

void Engine::vision_finished(Seq& s, std::shared_ptr<model::ImageEmbeds> embeds) {
  s.image_embeds = std::move(embeds);
  s.vision_done = true;
  // Map prompt positions to image embedding rows.
  s.image_index.assign(s.n_prompt, -1);
  int64_t next = 0;
  for (size_t t = 0; t < s.n_prompt; ++t)
    if (s.tokens[t] == model_.image_token_id()) s.image_index[t] = next++;
  LOCR_CHECK(next == s.image_embeds->rows(), "image tokens ", next, " != features ", s.image_embeds->rows());
  metrics_.vision_seconds.observe(s.times.vision_s);
}

void Engine::collect_vision() {
  for (size_t i = 0; i < running_.size(); ++i) {
    Seq& s = *running_[i];
    if (!s.vision_task || !s.vision_task->done.load()) continue;
    const std::shared_ptr<VisionLane::Task> t = std::move(s.vision_task);
    s.times.vision_s += t->seconds;
    metrics_.busy_vision_s.fetch_add(t->seconds);
    if (t->embeds && t->error.empty()) {
      try {
        vision_finished(s, t->embeds);
        continue;
      } catch (const std::exception& e) {
        t->error = e.what();
      }
    }
    LOCR_ERROR("engine: the vision encoding of ", s.in.request_id, " failed: ", t->error);
    finish(s, {FinishReason::kError, {}, std::string("internal error in the vision encoder: ") + t->error});
    running_.erase(running_.begin() + static_cast<long>(i));  // not scheduled yet: nothing refers to it
    --i;
  }
}

void Engine::submit_vision() {
  for (auto& sp : running_) {
    Seq& s = *sp;
    if (s.vision_done || s.vision_task) continue;
    auto t = std::make_shared<VisionLane::Task>();
    t->images = s.in.images;
    if (opts_.debug_fail_vision > 0 && ++n_visions_ == opts_.debug_fail_vision)
      t->fault = "injected fault (--debug-fail-vision " + std::to_string(opts_.debug_fail_vision) + ")";
    s.vision_task = t;
    lane_->submit(std::move(t));
  }
}

void Engine::sample_and_emit(Seq& s, float* logits) {
  std::optional<Selection> sel = s.selector->select(logits, model_.vocab_size(), s.tokens);
  if (!sel) {  // a forced output ended without an EOS id
    finish(s, {});
    return;
  }
  TokenEvent e;
  e.logprob = sel->logprob;
  e.top = std::move(sel->top);
  emit(s, sel->token, std::move(e));
}

// A verification step's rows [t, d1 .. dd] scored the tokens after each: the selector chooses the
// token after t from row 0, given draft d1; while the choice equals the next draft, that draft's
// KV row is kept and the next row chooses the token after it. The first choice that differs from
// its draft (or the one after the last draft) is emitted too: 1 to d + 1 tokens per step. Greedy:
// each the token a one-row decode step would have chosen (the rows' logits are bit-identical to
// such steps); sampled: drawn by the speculative rule (TokenSelector::select with the draft), the
// same distribution. The blocks holding only rejected drafts go back to the pool.
void Engine::verify_and_emit(Seq& s, float* logits) {
  const int64_t V = model_.vocab_size();
  const int d = static_cast<int>(s.verify.size()) - 1;
  s.times.drafted_tokens += d;
  metrics_.spec_drafts.fetch_add(1);
  metrics_.spec_draft_tokens.fetch_add(static_cast<uint64_t>(d));
  int accepted = 0;
  for (int j = 0; j <= d; ++j) {
    const int32_t draft = j < d ? s.verify[static_cast<size_t>(j) + 1] : -1;
    std::optional<Selection> sel = s.selector->select(logits + j * V, V, s.tokens, draft);
    if (!sel) {  // a forced output's end (such requests do not speculate; kept for safety)
      finish(s, {});
      break;
    }
    const int32_t tok = sel->token;
    TokenEvent e;
    e.logprob = sel->logprob;
    e.top = std::move(sel->top);
    emit(s, tok, std::move(e));
    if (s.finished || j == d || tok != s.verify[static_cast<size_t>(j) + 1]) break;
    // Draft j + 1 is the token chosen: its row's KV stays, and row j + 1 scores the next.
    ++s.n_computed;
    ++accepted;
    ++s.times.accepted_tokens;
    metrics_.spec_accepted_tokens.fetch_add(1);
    if (static_cast<size_t>(j) < metrics_.spec_accepted_per_pos.size()) metrics_.spec_accepted_per_pos[j].fetch_add(1);
  }
  s.drafter->accepted(d, accepted);
  s.verify.clear();
  if (s.finished) return;
  s.stream->set_times(s.times);  // the draft counts, readable before the request ends
  const int64_t keep = blocks_.blocks_for(static_cast<int64_t>(s.tokens.size()));
  if (static_cast<int64_t>(s.table.size()) > keep) {
    blocks_.release(std::vector<int32_t>(s.table.begin() + keep, s.table.end()));
    s.table.resize(static_cast<size_t>(keep));
  }
}

// Whether the device may sample this sequence's next token: nothing the host does to logits
// (penalties, top-logprob lists, min_tokens holding back EOS, a forced decode) applies.
bool Engine::device_sampling(const Seq& s) const {
  return exec_->supports_device_sampling() && s.selector->device_may_sample();
}

void Engine::emit(Seq& s, int32_t tok, TokenEvent e) {
  e.token = tok;
  s.tokens.push_back(tok);
  const auto now = Clock::now();
  if (s.n_generated() == 1) {
    s.t_first_token = now;
    s.times.first_token_s = secs(s.t_submit, now);
    metrics_.ttft.observe(s.times.first_token_s);
  } else {
    metrics_.itl.observe(secs(s.t_last_token, now));
  }
  s.t_last_token = now;
  metrics_.generation_tokens.fetch_add(1);
  std::optional<Finish> fin = s.selector->accept(tok);
  if (fin && fin->stop.kind == StopReason::Kind::kRepetition) metrics_.repetition_stops.fetch_add(1);
  s.stream->push(std::move(e));
  if (fin) finish(s, std::move(*fin));
}

bool Engine::step() {
  in_step_.clear();
  // Cancelled requests leave first, freeing their blocks.
  auto cancelled = [&](std::unique_ptr<Seq>& s) {
    if (!s->stream->cancelled()) return false;
    finish(*s, {s->stream->cancel_reason(), {}, {}});
    return true;
  };
  running_.erase(std::remove_if(running_.begin(), running_.end(), cancelled), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), cancelled), waiting_.end());
  if (lane_) collect_vision();

  int64_t budget = opts_.max_num_batched_tokens;
  struct Sched {
    Seq* s;
    int64_t n;
  };
  std::vector<Sched> sched;

  // 1. Running sequences: decodes first (one token each), then unfinished prefills, in order.
  std::stable_sort(running_.begin(), running_.end(), [](const auto& a, const auto& b) {
    return (a->pending() == 1) > (b->pending() == 1);
  });
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Seq& s = *running_[i];
    if (!s.vision_done) continue;
    int64_t n = std::min(s.pending(), budget);
    s.verify.clear();
    if (s.drafter && s.pending() == 1 && s.n_generated() >= 1) {
      // Drafts to verify with the decode row: at most what max_tokens, the context and the
      // step's token budget leave after the token this step chooses anyway.
      const int64_t room = std::min({s.selector->max_new() - s.n_generated() - 1,
                                     opts_.max_model_len - static_cast<int64_t>(s.tokens.size()) - 1, budget - 1});
      if (room > 0) {
        std::vector<int32_t> draft = s.drafter->propose(std::span<const int32_t>(s.tokens).subspan(s.n_prompt));
        if (static_cast<int64_t>(draft.size()) > room) draft.resize(static_cast<size_t>(room));
        if (!draft.empty()) {
          s.verify.push_back(s.tokens.back());
          s.verify.insert(s.verify.end(), draft.begin(), draft.end());
          if (ensure_blocks(s, s.n_computed + static_cast<int64_t>(s.verify.size()))) {
            n = static_cast<int64_t>(s.verify.size());
          } else {  // no room for the drafts: a plain decode row
            s.verify.clear();
          }
        }
      }
    }
    bool ok = ensure_blocks(s, s.n_computed + n);
    while (!ok) {
      // Out of blocks: preempt the most recently admitted other sequence (recompute later).
      if (running_.size() <= i + 1) break;
      const size_t victim = running_.size() - 1;  // not scheduled yet: it comes after i
      preempt(*running_[victim]);
      waiting_.push_front(std::move(running_[victim]));
      running_.erase(running_.begin() + static_cast<long>(victim));
      ok = ensure_blocks(s, s.n_computed + n);
    }
    if (!ok) {  // cannot even fit this one: preempt it too
      preempt(s);
      waiting_.push_front(std::move(running_[i]));
      running_.erase(running_.begin() + static_cast<long>(i));
      --i;
      continue;
    }
    sched.push_back({&s, n});
    budget -= n;
  }

  // 2. Admit waiting requests (FCFS) while there is room.
  while (!waiting_.empty() && static_cast<int>(running_.size()) < opts_.max_num_seqs) {
    Seq& s = *waiting_.front();
    if (static_cast<int64_t>(s.tokens.size()) > opts_.max_model_len ||
        blocks_.blocks_for(static_cast<int64_t>(s.tokens.size()) + 1) > blocks_.n_blocks()) {
      // Validated upstream; guard anyway: a sequence the whole KV cache cannot hold would be
      // preempted and readmitted forever.
      finish(s, {FinishReason::kLength, {}, {}});
      waiting_.pop_front();
      continue;
    }
    admit_prefix(s);
    const bool needs_vision = !s.in.images.empty() && !s.image_embeds;
    const int64_t n = needs_vision ? 0 : std::min(s.pending(), budget);
    if (!needs_vision && n <= 0) {
      blocks_.release(s.table);  // keep the cached prefix for later
      s.table.clear();
      s.n_computed = 0;
      break;
    }
    // Admission control by free blocks: the first chunk must fit.
    if (!ensure_blocks(s, s.n_computed + std::max<int64_t>(n, 1)) || !take_slot(s)) {
      blocks_.release(s.table);
      s.table.clear();
      s.n_computed = 0;
      break;
    }
    if (!s.admitted) {
      s.admitted = true;
      s.t_admit = Clock::now();
      s.times.queued_s = secs(s.t_submit, s.t_admit);
      s.times.prompt_tokens = static_cast<int64_t>(s.n_prompt);
      metrics_.queue.observe(s.times.queued_s);
      if (blocks_.prefix_caching()) {  // in tokens, as vLLM counts them
        metrics_.prefix_queries.fetch_add(s.n_prompt);
        metrics_.prefix_hits.fetch_add(static_cast<uint64_t>(s.times.cached_tokens));
      }
      metrics_.prompt_tokens.fetch_add(s.n_prompt - s.n_computed);
      metrics_.prompt_len.observe(static_cast<double>(s.n_prompt));
      if (!s.in.images.empty()) {
        metrics_.images.fetch_add(s.in.images.size());
        int64_t it = 0;
        for (size_t t = 0; t < s.n_prompt; ++t) it += s.tokens[t] == model_.image_token_id();
        s.times.image_tokens = it;
        metrics_.image_tokens.observe(static_cast<double>(it));
      }
    }
    if (needs_vision) s.vision_done = false;
    else {
      sched.push_back({&s, n});
      budget -= n;
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }

  // 3. Vision: hand new encodings to the lane; without one, advance the oldest pending encoding by
  // a budgeted number of layers, or with nothing else to run finish it in one go. A fault there
  // ends that request only.
  if (lane_) submit_vision();
  for (size_t i = 0; i < running_.size() && !lane_; ++i) {
    Seq& s = *running_[i];
    if (s.vision_done) continue;
    try {
      run_vision(s, sched.empty() ? (1LL << 40) : opts_.vision_budget);
    } catch (const std::exception& e) {
      LOCR_ERROR("engine: the vision encoding of ", s.in.request_id, " failed: ", e.what());
      s.vision.reset();
      finish(s, {FinishReason::kError, {}, std::string("internal error in the vision encoder: ") + e.what()});
      running_.erase(running_.begin() + static_cast<long>(i));  // not scheduled: nothing else refers to it
    }
    break;
  }

  metrics_.num_running = static_cast<int64_t>(running_.size());
  metrics_.num_waiting = static_cast<int64_t>(waiting_.size());

  idle_on_lane_ = lane_ && sched.empty() && lane_->busy();
  if (lane_) lane_->set_engine_busy(!sched.empty());
  // While the lane encodes, this step runs on the engine's share of the cores.
  ThreadPool::ScopedUse lane_share(lane_ && lane_->busy() ? lane_->step_pool() : nullptr);
  if (sched.empty()) {
    free_blocks_ = blocks_.n_free();
    metrics_.kv_usage = blocks_.usage();
    return !running_.empty();
  }

  // 4. One decoder pass over all scheduled rows.
  std::vector<model::StepSeq> steps;
  std::vector<model::DeviceSample> dsample(sched.size());
  std::vector<Seq*> sample_seqs(sched.size(), nullptr);
  std::vector<std::vector<int64_t>> image_rows(sched.size());
  for (size_t k = 0; k < sched.size(); ++k) {
    Seq& s = *sched[k].s;
    model::StepSeq st;
    st.ids = s.verify.empty() ? s.tokens.data() + s.n_computed : s.verify.data();
    st.n = sched[k].n;
    st.pos0 = s.n_computed;
    st.block_table = s.table.data();
    st.table_len = static_cast<int64_t>(s.table.size());
    // Prompt rows (the first of them still in the prompt; a recomputation after preemption also
    // takes the generated tokens that follow): computed as a whole prompt is, so a prompt gives
    // the same bits alone, in chunks, or after a cached prefix.
    st.prompt = s.verify.empty() && s.n_computed < static_cast<int64_t>(s.n_prompt);
    if (exec_->state_slots() > 0) {
      LOCR_CHECK(s.slot >= 0, "a running sequence of a hybrid model holds no state slot");
      st.state_slot = s.slot;
    }
    if (!s.positions.empty()) {
      st.mrope = s.positions.data();
      st.mrope_len = static_cast<int64_t>(s.n_prompt);
      st.rope_delta = s.rope_delta;
    }
    if (!s.image_index.empty() && s.n_computed < static_cast<int64_t>(s.image_index.size())) {
      // Rows past the prompt (generated tokens, recomputed after preemption) take no image row.
      auto& rows = image_rows[k];
      rows.assign(st.n, -1);
      for (int64_t i = 0; i < st.n && s.n_computed + i < static_cast<int64_t>(s.image_index.size()); ++i)
        rows[i] = s.image_index[s.n_computed + i];
      st.images = s.image_embeds.get();
      st.image_rows = rows.data();
    }
    if (!s.verify.empty()) {
      st.want_logits = true;  // every row: row j scores the token after it
      st.n_logits = st.n;
      sample_seqs[k] = &s;
    } else if (s.n_computed + st.n == static_cast<int64_t>(s.tokens.size())) {
      st.want_logits = true;
      sample_seqs[k] = &s;
      if (device_sampling(s)) {
        model::DeviceSample& d = dsample[k];
        const SamplingParams& sp = s.in.decode.sampling;
        d.temperature = sp.top_k == 1 ? 0.0f : sp.temperature;
        d.top_p = sp.top_p;
        d.top_k = sp.top_k > 0 ? sp.top_k : 0;
        d.min_p = sp.min_p;
        d.seed = s.device_seed;
        d.step = static_cast<uint64_t>(s.n_generated());
        d.want_logprob = s.in.decode.logprobs == 0;
        st.sample = &d;
      }
    }
    steps.push_back(st);
  }
  in_step_.clear();
  for (const auto& sc : sched) in_step_.push_back(sc.s);
  if (opts_.debug_fail_step > 0 && ++n_steps_ == opts_.debug_fail_step)
    throw std::runtime_error("injected fault (--debug-fail-step " + std::to_string(opts_.debug_fail_step) + ")");
  model::StepOutput out;
  const auto t_step = Clock::now();
  exec_->step(steps, &out);
  const double step_s = secs(t_step, Clock::now());
  // Tokens of this step as vLLM counts them: prompt tokens computed plus tokens generated (a
  // decode row feeds back a token already counted when it was generated).
  int64_t step_tokens = 0;
  for (size_t k = 0; k < sched.size(); ++k) {
    const Seq& s = *sched[k].s;
    const bool decode_row = (sched[k].n == 1 || !s.verify.empty()) && s.n_generated() >= 1 && s.pending() == 1;
    if (!decode_row) step_tokens += sched[k].n;
    if (sample_seqs[k]) ++step_tokens;
  }
  metrics_.iteration_tokens.observe(static_cast<double>(step_tokens));
  bool prompt_rows = false;
  for (const auto& sc : sched) prompt_rows |= sc.s->n_computed < static_cast<int64_t>(sc.s->n_prompt);
  (prompt_rows ? metrics_.busy_prefill_s : metrics_.busy_decode_s).fetch_add(step_s);
  for (const auto& sc : sched) {
    sc.s->n_computed += sc.s->verify.empty() ? sc.n : 1;  // a verification's draft rows count once accepted
    publish_blocks(*sc.s);
  }
  const int64_t V = model_.vocab_size();
  std::vector<float*> host_logits(sched.size(), nullptr);
  for (size_t i = out.logits_seq.size(); i-- > 0;) host_logits[out.logits_seq[i]] = out.logits.data<float>() + i * V;
  for (size_t k = 0; k < sched.size(); ++k) {
    if (!sample_seqs[k]) continue;
    if (!sample_seqs[k]->verify.empty()) {
      LOCR_CHECK(host_logits[k], "the executor returned no logits for a verification");
      verify_and_emit(*sample_seqs[k], host_logits[k]);
    } else if (host_logits[k]) {
      sample_and_emit(*sample_seqs[k], host_logits[k]);
    } else {
      LOCR_CHECK(out.tokens.size() > k && out.tokens[k] >= 0, "the executor returned neither logits nor a token");
      TokenEvent e;
      if (sample_seqs[k]->in.decode.logprobs >= 0) e.logprob = out.logprobs[k];
      emit(*sample_seqs[k], out.tokens[k], std::move(e));
    }
  }
  // Drop finished sequences (their blocks are already released).
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& s) { return s->finished; }),
                 running_.end());
  in_step_.clear();
  metrics_.num_running = static_cast<int64_t>(running_.size());
  free_blocks_ = blocks_.n_free();
  metrics_.kv_usage = blocks_.usage();
  return true;
}

}  // namespace locr::runtime
