#include "server/sse.h"

#include "server/request_log.h"

namespace locr::server {

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string sse_event(const nlohmann::json& j) { return "data: " + json_text(j) + "\n\n"; }

void respond_with_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<Generation> gen,
                             const std::string& content_type, GenerationWriter writer) {
  auto w = std::make_shared<GenerationWriter>(std::move(writer));
  res.set_chunked_content_provider(
      content_type,
      [&ctx, gen, w](size_t /*offset*/, httplib::DataSink& sink) {
        std::vector<ChoiceDelta> deltas;
        std::string buf;
        auto disconnected = [&] {
          gen->cancel();
          ctx.metrics().disconnects.fetch_add(1);
          request_log().note = "client disconnected";
          return false;
        };
        if (w->on_start) {
          w->on_start(buf);
          w->on_start = nullptr;
          if (!buf.empty() && !sink.write(buf.data(), buf.size())) return disconnected();
        }
        while (!gen->done()) {
          deltas.clear();
          gen->poll(deltas, std::chrono::milliseconds(100));
          buf.clear();
          if (!deltas.empty()) w->on_deltas(deltas, buf);
          if (!buf.empty()) {
            if (!sink.write(buf.data(), buf.size())) return disconnected();
          } else if (!sink.is_writable()) {
            return disconnected();
          }
        }
        buf.clear();
        w->on_done(buf);
        request_log().prompt_tokens = gen->prompt_tokens();
        request_log().completion_tokens = gen->completion_tokens();
        if (!buf.empty() && !sink.write(buf.data(), buf.size())) return disconnected();
        sink.done();
        return true;
      },
      [gen](bool success) {
        if (!success) gen->cancel();
      });
}

}  // namespace locr::server
