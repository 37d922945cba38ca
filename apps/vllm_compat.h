// The `vllm serve` flags that `locr serve` accepts without implementing them: those with no
// meaning on this backend (one notice each, saying why) and those accepted only with the one value
// locr can honour (anything else is refused, saying why). The flags locr implements are declared
// in cmd_serve.cc. docs/api.md keeps the table of every vLLM flag; tests/server/test_vllm_flags.py
// checks that table, tests/server/vllm_serve_flags.txt (vLLM's list) and this binary agree.
#pragma once

#include <set>
#include <string>

#include "apps/args.h"

namespace locr::app {

// Declares every no-effect and refused-unless flag, and vLLM's short aliases (-tp, -O, ...).
void declare_vllm_compat(Args& a);

// Refuses (locr::Error kUnsupported) a refused-unless flag given with another value, then logs
// one notice for each no-effect flag given, except those in `handled` (cmd_serve gives them a
// meaning on some devices, e.g. --enforce-eager on CUDA).
void check_vllm_compat(const Args& a, const std::set<std::string>& handled);

}  // namespace locr::app
