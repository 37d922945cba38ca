// Sends a running Generation as an HTTP response body through httplib's chunked content
// provider: streamed as server-sent events (`data: {...}\n\n` ... `data: [DONE]\n\n`) or as one
// JSON body written when the generation ends. While waiting for tokens it checks that the client
// is still connected; a disconnect (or a failed write) cancels the generation, whose engine
// requests then free their KV blocks at the engine's next step. The engine never waits on a
// client: its events queue up in the request stream.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/generation.h"
#include "server/server_context.h"

namespace locr::server {

struct GenerationWriter {
  // Appends the bytes to send before any token (e.g. the chat role chunks); may be empty.
  std::function<void(std::string& out)> on_start;
  // Appends the bytes to send for a batch of deltas (may append nothing).
  std::function<void(std::vector<ChoiceDelta>& deltas, std::string& out)> on_deltas;
  // Appends the final bytes once every choice has finished.
  std::function<void(std::string& out)> on_done;
};

void respond_with_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<Generation> gen,
                             const std::string& content_type, GenerationWriter writer);

// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);
std::string json_text(const nlohmann::json& j);  // compact, invalid UTF-8 replaced

}  // namespace locr::server
