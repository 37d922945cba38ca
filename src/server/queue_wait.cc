#include "server/queue_wait.h"

#include <algorithm>
#include <cmath>

namespace locr::server {

double estimate_queue_wait_s(int64_t running, int64_t waiting, int max_num_seqs, double service_s) {
  if (!(service_s > 0) || waiting < 0 || running < 0) return 0;
  if (waiting == 0 && running < max_num_seqs) return 0;
  // Requests leave the running batch at about `slots` per service time; the new one is the
  // (waiting + 1)-th in line. Fewer running than --max-num-seqs with a queue means the KV cache
  // is what holds them back: the running ones are the rate.
  const double slots = static_cast<double>(std::max<int64_t>(1, std::min<int64_t>(running, max_num_seqs)));
  return static_cast<double>(waiting + 1) * service_s / slots;
}

int retry_after_s(double wait_s, double limit_s) {
  const double s = std::ceil(wait_s - limit_s);
  return s < 1 ? 1 : s > 86400 ? 86400 : static_cast<int>(s);
}

}  // namespace locr::server
