// The serving engine: one thread owns the model, the paged KV cache and the scheduler, and runs
// steps in the style of vLLM's continuous batching. Each step mixes
//   - vision encoding of newly admitted requests, a few encoder layers per step (budgeted in
//     patch-layers) so a large page never starves running decodes; or, when asked for
//     (EngineOptions::vision_lane, host backends, 2+ threads), in the vision lane
//     (runtime/vision_lane.h): a thread of its own that encodes pages first come first served
//     beside the steps, the cores split between the two,
//   - chunked prefill and one decode token for every running sequence, within a token budget
//     (max_num_batched_tokens) and a sequence cap (max_num_seqs),
// over a paged KV cache with admission by free blocks, preemption by recompute when blocks run
// out, and prefix caching of full blocks by content hash.
// Hybrid models (Qwen3.5: Gated DeltaNet layers beside attention) also keep a recurrent state per
// sequence: each running sequence holds one of the executor's state slots from admission to its
// end or preemption (a preempted sequence recomputes its state from token 0). Such a state cannot
// be rewound or shared, so these models run without prefix caching and without speculative
// decoding (both refused with a notice).
// Frontends (HTTP threads, CLI) call submit() from any thread and read events from the returned
// stream; cancelling a stream frees its blocks at the next step.
//
// Faults stay with the requests they hit: an exception in a sequence's vision encoding ends that
// request, one in a decoder step (an allocation failure, an internal error) ends the requests of
// that step; each gets finish_reason "error" with the message in its final event, its KV blocks are
// freed, and the engine goes on serving everyone else.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "model/executor.h"
#include "model/model.h"
#include "runtime/block_manager.h"
#include "runtime/metrics.h"
#include "runtime/request.h"
#include "runtime/vision_lane.h"

namespace locr::runtime {

struct EngineOptions {
  int max_num_seqs = 32;
  int max_num_batched_tokens = 4096;
  int max_model_len = 8192;
  int block_size = 16;
  int64_t kv_cache_bytes = 512LL << 20;  // KV pool budget (reserved; committed as used);
                                         // < 0 on a device backend: from gpu_memory_utilization
  double gpu_memory_utilization = 0.9;   // device backends only, when kv_cache_bytes < 0
  bool cuda_graphs = true;               // device backends: replay decode-only steps as graphs
  bool enable_prefix_caching = true;
  int64_t vision_budget = 0;  // patch-layers per step; 0 = 4 * max_num_batched_tokens
  bool vision_lane = false;   // encode in the vision lane where the executor and threads allow
                              // (off by default: on 2 cores it costs pages per hour, docs/benchmarks.md)
  // Testing only (--debug-fail-step / --debug-fail-vision): the N-th decoder step, or the N-th
  // vision encoding, counted from 1 since start, throws as an internal error would. 0: never.
  int64_t debug_fail_step = 0;
  int64_t debug_fail_vision = 0;
};

class Engine {
 public:
  Engine(const model::Model& model, const EngineOptions& opts);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. The request is validated by the caller (lengths, ids); the engine trusts it.
  std::shared_ptr<RequestStream> submit(RequestInput in);
  // Stops accepting work; with drain, finishes what is in flight first, else aborts it.
  void shutdown(bool drain);

  const EngineOptions& options() const { return opts_; }
  const EngineMetrics& metrics() const { return metrics_; }
  // Threads of the vision lane's share of the cores (0: no lane; encodings run inside the steps).
  int vision_lane_threads() const { return lane_ ? lane_->vision_threads() : 0; }
  int64_t kv_blocks_total() const { return blocks_.n_blocks(); }
  int64_t kv_blocks_free() const { return free_blocks_.load(); }
  const char* executor_name() const { return exec_->name(); }

 private:
  struct Seq;
  void loop();
  bool step();  // returns false when there was nothing to do
  void finish(Seq& s, Finish f);
  // A step threw: its sequences (in_step_; every running one if it failed before scheduling) end
  // with finish_reason "error".
  void fail_step(const std::string& what);
  bool ensure_blocks(Seq& s, int64_t n_tokens);
  // Hybrid models: a state slot for s (false when none is free), and back to the pool.
  bool take_slot(Seq& s);
  void release_slot(Seq& s);
  void preempt(Seq& s);
  void hash_blocks(Seq& s) const;  // content keys of the prompt's full blocks (prefix cache)
  void admit_prefix(Seq& s);
  void publish_blocks(Seq& s);
  void run_vision(Seq& s, int64_t budget);
  // The vision lane's side in a step: results of finished encodings taken (before scheduling), new
  // ones handed over (after admission), in admission order.
  void collect_vision();
  void submit_vision();
  void vision_finished(Seq& s, std::shared_ptr<model::ImageEmbeds> embeds);  // embeddings in, positions mapped
  void sample_and_emit(Seq& s, float* logits);
  void verify_and_emit(Seq& s, float* logits);  // speculative verification (runtime/speculative.h)
  void emit(Seq& s, int32_t tok, TokenEvent e);
  bool device_sampling(const Seq& s) const;

  const model::Model& model_;
  EngineOptions opts_;
  std::unique_ptr<model::Executor> exec_;  // owns the KV pool; before blocks_ (sizes it)
  BlockManager blocks_;
  std::vector<int32_t> free_slots_;  // recurrent-state slots not held by a running sequence
  EngineMetrics metrics_;
  std::atomic<int64_t> free_blocks_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Seq>> incoming_;
  bool stopping_ = false, drain_ = true;
  bool lane_signal_ = false;  // the lane finished a task since the engine last looked

  // Engine-thread state.
  std::deque<std::unique_ptr<Seq>> waiting_;
  std::vector<std::unique_ptr<Seq>> running_;
  std::vector<Seq*> in_step_;  // the sequences the current step computes
  int64_t n_steps_ = 0, n_visions_ = 0;
  bool idle_on_lane_ = false;  // the last step had nothing to run but encodings in the lane
  std::unique_ptr<VisionLane> lane_;  // after exec_: stopped before it
  std::thread thread_;
};

}  // namespace locr::runtime
