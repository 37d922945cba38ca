// --max-queue-wait-s: a request that would wait longer than that for the engine to admit it is
// answered 503 with Retry-After at once, instead of being queued to time out at its client. The
// wait is estimated from the engine's queue and the recent time a request took from admission to
// finish: with R requests running and W waiting (the engine's unfinished requests, those not in
// the running batch counted as waiting), requests finish at about R per service time, so a new one
// starts after about (W + 1) x service / R. Nothing is refused before a request has
// finished (no estimate yet), nor while there is a free slot and nobody waiting.
#pragma once

#include <cstdint>

namespace locr::server {

// Seconds a request submitted now waits before admission (0: at once, or no estimate yet).
// `service_s`: recent admission-to-finish time of one request (runtime::EngineMetrics).
double estimate_queue_wait_s(int64_t running, int64_t waiting, int max_num_seqs, double service_s);

// Whole seconds for Retry-After: until the queue is expected to be back under the limit, at least 1.
int retry_after_s(double wait_s, double limit_s);

}  // namespace locr::server
