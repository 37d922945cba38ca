// POST /tokenize, POST /detokenize and GET /v1/models (vLLM's shapes).
#include "server/errors.h"
#include "server/handlers.h"
#include "server/openai_schema.h"

namespace locr::server {

void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  check_model(body, ctx);
  const tokenizer::Tokenizer& tok = ctx.model().tokenizer();
  std::vector<int32_t> ids;
  const bool has_messages = body.contains("messages") && !body["messages"].is_null();
  const bool has_prompt = body.contains("prompt") && !body["prompt"].is_null();
  if (has_messages == has_prompt) bad_request("give either 'prompt' (a string) or 'messages' (a chat)");
  if (has_prompt) {
    ids = tok.encode(*opt_string(body, "prompt"));
  } else {
    if (auto agp = opt_bool(body, "add_generation_prompt"); agp && !*agp)
      bad_request("'add_generation_prompt': false is not supported by this server", "add_generation_prompt");
    // Image tokens come from the image headers: /tokenize never decodes pixels.
    ids = build_chat_prompt(ctx, parse_chat_messages(body), -1, /*decode=*/false).ids;
  }
  json out = {{"count", ids.size()}, {"max_model_len", ctx.engine().options().max_model_len}, {"tokens", ids},
              {"token_strs", nullptr}};
  if (opt_bool(body, "return_token_strs").value_or(false)) {
    json strs = json::array();
    for (int32_t id : ids) strs.push_back(tok.decode({id}, false));
    out["token_strs"] = std::move(strs);
  }
  send_json(res, out);
}

void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  check_model(body, ctx);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array()) bad_request("'tokens' must be a list of integer token ids", "tokens");
  const int64_t vocab = ctx.model().vocab_size();
  std::vector<int32_t> ids;
  for (const auto& v : *it) {
    if (!v.is_number_integer()) bad_request("'tokens' must be a list of integer token ids", "tokens");
    const int64_t id = v.get<int64_t>();
    if (id < 0 || id >= vocab) bad_request(str("token id ", id, " is out of range [0, ", vocab, ")"), "tokens");
    ids.push_back(static_cast<int32_t>(id));
  }
  send_json(res, {{"prompt", ctx.model().tokenizer().decode(ids, false)}});
}

void handle_models(ServerContext& ctx, const httplib::Request&, httplib::Response& res) {
  static const int64_t created = unix_now();
  json data = json::array();
  for (const auto& name : ctx.opts().served_model_names) {
    // One entry with vLLM's ModelPermission defaults (a fresh id each listing, as vLLM's).
    json permission = {{"id", "modelperm-" + ctx.random_hex()},
                       {"object", "model_permission"},
                       {"created", unix_now()},
                       {"allow_create_engine", false},
                       {"allow_sampling", true},
                       {"allow_logprobs", true},
                       {"allow_search_indices", false},
                       {"allow_view", true},
                       {"allow_fine_tuning", false},
                       {"organization", "*"},
                       {"group", nullptr},
                       {"is_blocking", false}};
    data.push_back({{"id", name},
                    {"object", "model"},
                    {"created", created},
                    {"owned_by", "locr"},
                    {"root", ctx.opts().model_path},
                    {"parent", nullptr},
                    {"max_model_len", ctx.engine().options().max_model_len},
                    {"permission", json::array({std::move(permission)})}});
  }
  send_json(res, {{"object", "list"}, {"data", std::move(data)}});
}

}  // namespace locr::server
