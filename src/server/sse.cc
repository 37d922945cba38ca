#include "server/sse.h"

#include "core/log.h"
#include "server/http_connection.h"
#include "server/request_log.h"

namespace locr::server {

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string sse_event(const nlohmann::json& j) { return "data: " + json_text(j) + "\n\n"; }

namespace {

bool disconnected(ServerContext& ctx, Generation& gen) {
  gen.cancel();
  ctx.metrics().disconnects.fetch_add(1);
  request_log().note = "client disconnected";
  return false;
}

// The whole body: returns true after sink.done(), false when the client went away.
bool run(ServerContext& ctx, Generation& gen, GenerationWriter& w, httplib::DataSink& sink) {
  std::vector<ChoiceDelta> deltas;
  std::string buf;
  if (w.on_start) {
    w.on_start(buf);
    w.on_start = nullptr;
    if (!buf.empty() && !sink.write(buf.data(), buf.size())) return disconnected(ctx, gen);
  }
  while (!gen.done()) {
    deltas.clear();
    gen.poll(deltas, std::chrono::milliseconds(100));
    buf.clear();
    if (!deltas.empty()) w.on_deltas(deltas, buf);
    if (!buf.empty()) {
      if (!sink.write(buf.data(), buf.size())) return disconnected(ctx, gen);
    } else if (!sink.is_writable()) {
      return disconnected(ctx, gen);
    }
  }
  buf.clear();
  w.on_done(buf);
  request_log().prompt_tokens = gen.prompt_tokens();
  request_log().completion_tokens = gen.completion_tokens();
  if (!buf.empty() && !sink.write(buf.data(), buf.size())) return disconnected(ctx, gen);
  sink.done();
  return true;
}

}  // namespace

void respond_with_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<Generation> gen,
                             const std::string& content_type, GenerationWriter writer) {
  auto w = std::make_shared<GenerationWriter>(std::move(writer));
  // HTTP/1.0 has no chunked transfer coding (RFC 9112 section 7.1): such a client gets the body
  // without a length, ended by closing the connection.
  const bool http10 = request_log().http10;
  if (http10) {
    res.set_header("Connection", "close");
    close_connection_after_response();
  }
  httplib::ContentProviderWithoutLength provider = [&ctx, gen, w](size_t /*offset*/, httplib::DataSink& sink) {
    // No exception may leave a content provider (httplib would terminate): the response is
    // under way, so all that is left is to cut it off.
    try {
      return run(ctx, *gen, *w, sink);
    } catch (const std::exception& e) {
      LOCR_ERROR("http: request ", request_log().id, " failed while responding: ", e.what());
      gen->cancel();
      request_log().note = std::string("failed: ") + e.what();
      return false;
    }
  };
  httplib::ContentProviderResourceReleaser release = [gen](bool success) {
    if (!success) gen->cancel();
  };
  if (http10) res.set_content_provider(content_type, std::move(provider), std::move(release));
  else res.set_chunked_content_provider(content_type, std::move(provider), std::move(release));
}

}  // namespace locr::server
