// `locr chat`: one chat turn, streamed to the terminal (the seeds' inference.py).
//   --mode local: runs the model in-process (same options as `locr generate`).
//   --mode api:   POSTs to an OpenAI-compatible /v1/chat/completions with `stream: true` (images as
//                 data: URLs) and prints the deltas as the SSE events arrive.
#include <chrono>
#include <cstdio>

#include "apps/commands.h"
#include "apps/model_args.h"
#include "core/log.h"
#include "toolkit/openai_client.h"

namespace locr::app {

namespace {

void print_delta(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

int chat_local(const Args& a) {
  auto m = load_any_model(a);
  const CliRun run = run_cli_request(a, *m, print_delta);
  print_delta("\n");
  const runtime::GenerateResult& r = run.result;
  LOCR_INFO("chat: ", run.prompt_tokens, " prompt tokens, ", r.tokens.size(), " generated, finish_reason=",
            runtime::finish_reason_name(r.finish_reason), ", decode ",
            r.tokens.size() > 1 && r.decode_s > 0 ? (r.tokens.size() - 1) / r.decode_s : 0.0, " tok/s");
  return 0;
}

int chat_api(const Args& a) {
  const std::string url = a.get("url", "http://localhost:8000/v1/chat/completions");
  const toolkit::HttpUrl u = toolkit::parse_url(url);
  nlohmann::json body;
  body["model"] = a.get("model-name", "lightonocr-2-1b");
  nlohmann::json messages = nlohmann::json::array();
  if (a.has("system")) messages.push_back({{"role", "system"}, {"content", a.get("system")}});
  std::vector<std::string> images;
  for (const auto& f : a.get_all("image")) images.push_back(toolkit::image_file_data_url(f));
  if (images.empty() && !a.has("prompt")) fail(ErrorKind::kInvalidArgument, "give --prompt TEXT and/or --image FILE");
  messages.push_back({{"role", "user"}, {"content", toolkit::user_content(images, a.get("prompt"))}});
  body["messages"] = messages;
  if (a.has("max-tokens")) body["max_tokens"] = a.get_int("max-tokens", 0);
  if (a.has("temperature")) body["temperature"] = a.get_double("temperature", 0);
  if (a.has("top-p")) body["top_p"] = a.get_double("top-p", 1);
  if (a.has("top-k")) body["top_k"] = a.get_int("top-k", 0);
  if (a.has("seed")) body["seed"] = std::stoll(a.get("seed"));
  if (a.has("repetition-penalty")) body["repetition_penalty"] = a.get_double("repetition-penalty", 0);
  if (a.has("presence-penalty")) body["presence_penalty"] = a.get_double("presence-penalty", 0);
  if (a.has("frequency-penalty")) body["frequency_penalty"] = a.get_double("frequency-penalty", 0);
  if (a.has("chat-template-kwargs")) {
    try {
      body["chat_template_kwargs"] = nlohmann::json::parse(a.get("chat-template-kwargs"));
    } catch (const nlohmann::json::exception& e) {
      fail(ErrorKind::kInvalidArgument, "--chat-template-kwargs is not valid JSON: ", e.what());
    }
  }
  toolkit::Headers h;
  if (a.has("api-key")) h.emplace_back("Authorization", "Bearer " + a.get("api-key"));
  toolkit::HttpClient cli(u.origin(), a.get_double("timeout", 600));
  const auto t0 = std::chrono::steady_clock::now();
  double ttft = -1;
  const auto r = toolkit::stream_completion(cli, u.path, body, h, /*chat=*/true, [&](const std::string& s) {
    if (ttft < 0) ttft = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    print_delta(s);
  });
  print_delta("\n");
  if (!r.ok()) fail(ErrorKind::kIo, url, ": ", r.error);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  LOCR_INFO("chat: finish_reason=", r.finish_reason.empty() ? "?" : r.finish_reason, ", prompt_tokens=", r.prompt_tokens,
            ", completion_tokens=", r.completion_tokens, ", ttft ", ttft, " s, total ", total, " s");
  return 0;
}

}  // namespace

int cmd_chat(int argc, char** argv) {
  Args a("chat",
         "One chat turn streamed to the terminal: --mode local runs the model in-process, --mode api sends it\n"
         "to an OpenAI-compatible server (stream: true; images as data: URLs).");
  a.option("mode", "local (default) or api", "MODE");
  add_model_options(a);
  add_prompt_options(a);
  add_sampling_options(a);
  a.option("url", "api mode: chat completions URL (default http://localhost:8000/v1/chat/completions)", "URL");
  a.option("model-name", "api mode: model name sent in the request (default lightonocr-2-1b)", "NAME");
  a.option("api-key", "api mode: bearer token", "KEY");
  a.option("timeout", "api mode: read timeout in seconds (default 600)", "S");
  if (!a.parse(argc, argv)) return 0;
  const std::string mode = a.get("mode", "local");
  if (mode == "local") return chat_local(a);
  if (mode == "api") return chat_api(a);
  fail(ErrorKind::kInvalidArgument, "--mode must be local or api, got '", mode, "'");
}

}  // namespace locr::app
