// Unit tests of the vLLM drop-in pieces: CORS (Starlette's CORSMiddleware rules), lone UTF-16
// surrogate escapes, --override-generation-config, --max-log-len clipping.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/cors.h"
#include "server/generation_defaults.h"
#include "server/json_surrogates.h"
#include "server/request_log.h"

namespace locr::server {
namespace {

std::string header(const HeaderList& h, const std::string& name) {
  for (const auto& [k, v] : h)
    if (k == name) return v;
  return "<none>";
}

TEST(Cors, DefaultPreflightAllowsEverythingWithStar) {
  const CorsPreflight p = cors_preflight(CorsOptions{}, "https://a.example", "POST", "Content-Type, X-Custom", true);
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.body, "OK");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Methods"), "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Headers"), "Content-Type, X-Custom");  // echoed
  EXPECT_EQ(header(p.headers, "Access-Control-Max-Age"), "600");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Credentials"), "<none>");
}

TEST(Cors, ExplicitOriginsMethodsHeaders) {
  CorsOptions o;
  o.origins = {"https://a.example"};
  o.methods = {"GET", "POST"};
  o.headers = {"Authorization"};
  CorsPreflight p = cors_preflight(o, "https://a.example", "POST", "authorization, content-type", true);
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(header(p.headers, "Vary"), "Origin");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Methods"), "GET, POST");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Headers"), "accept, accept-language, authorization, content-language, content-type");

  p = cors_preflight(o, "https://evil.example", "DELETE", "x-other", true);
  EXPECT_EQ(p.status, 400);
  EXPECT_EQ(p.body, "Disallowed CORS origin, method, headers");
  EXPECT_EQ(header(p.headers, "Access-Control-Allow-Origin"), "<none>");
}

TEST(Cors, SimpleHeaders) {
  CorsOptions all;
  EXPECT_EQ(header(cors_simple_headers(all, "https://a.example", false), "Access-Control-Allow-Origin"), "*");
  // With a cookie the origin is named, never "*".
  EXPECT_EQ(header(cors_simple_headers(all, "https://a.example", true), "Access-Control-Allow-Origin"), "https://a.example");
  CorsOptions some;
  some.origins = {"https://a.example"};
  some.credentials = true;
  HeaderList h = cors_simple_headers(some, "https://a.example", false);
  EXPECT_EQ(header(h, "Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(header(h, "Access-Control-Allow-Credentials"), "true");
  h = cors_simple_headers(some, "https://evil.example", false);
  EXPECT_EQ(header(h, "Access-Control-Allow-Origin"), "<none>");
}

TEST(Cors, ParseList) {
  EXPECT_EQ(parse_cors_list("[\"https://a\", \"https://b\"]", "allowed-origins"),
            (std::vector<std::string>{"https://a", "https://b"}));
  EXPECT_EQ(parse_cors_list("https://a", "allowed-origins"), (std::vector<std::string>{"https://a"}));
  EXPECT_THROW(parse_cors_list("[1, 2]", "allowed-origins"), locr::Error);
  EXPECT_THROW(parse_cors_list("[\"a\"", "allowed-origins"), locr::Error);
}

TEST(JsonSurrogates, LoneOnesBecomeReplacementPairsStay) {
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"x\ud800y"})"), R"({"a":"x\ufffdy"})");
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"\uDC00"})"), R"({"a":"\ufffd"})");
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"\ud83d\ude00"})"), R"({"a":"\ud83d\ude00"})");  // a pair: kept
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"\ud83d\ud83d\ude00"})"), R"({"a":"\ufffd\ud83d\ude00"})");
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"\\ud800"})"), R"({"a":"\\ud800"})");  // an escaped backslash: text
  EXPECT_EQ(replace_lone_surrogates(R"({"a":"\u00e9"})"), R"({"a":"\u00e9"})");
  // What nlohmann::json then makes of it: U+FFFD.
  const auto j = nlohmann::json::parse(replace_lone_surrogates(R"({"a":"x\ud800"})"));
  EXPECT_EQ(j["a"].get<std::string>(), "x\xEF\xBF\xBD");
  nlohmann::json raw;
  EXPECT_THROW(raw = nlohmann::json::parse(R"({"a":"x\ud800"})"), nlohmann::json::parse_error);
  EXPECT_FALSE(has_surrogate_escape(R"({"a":"\u00e9 \n"})"));
  EXPECT_TRUE(has_surrogate_escape(R"({"a":"\uD800"})"));
}

TEST(GenerationDefaults, OverridesMergeOverTheBase) {
  model::GenerationConfig base;
  base.do_sample = false;
  base.temperature = 0.7f;
  base.eos_token_ids = {2};
  auto g = apply_generation_overrides(base, nlohmann::json::parse(R"({"repetition_penalty": 1.2, "max_new_tokens": 64})"));
  EXPECT_FALSE(g.do_sample);
  EXPECT_FLOAT_EQ(g.repetition_penalty, 1.2f);
  EXPECT_EQ(g.max_new_tokens, 64);
  g = apply_generation_overrides(base, nlohmann::json::parse(R"({"temperature": 0.2, "top_k": 5, "unknown": 1})"));
  EXPECT_TRUE(g.do_sample);
  EXPECT_FLOAT_EQ(g.temperature, 0.2f);
  EXPECT_EQ(g.top_k, 5);
  EXPECT_EQ(g.eos_token_ids, std::vector<int>{2});
  EXPECT_THROW(apply_generation_overrides(base, nlohmann::json::parse(R"({"temperature": "hot"})")), locr::Error);
  EXPECT_THROW(apply_generation_overrides(base, nlohmann::json::parse(R"([1])")), locr::Error);
  const auto v = vllm_generation_defaults(base);
  EXPECT_TRUE(v.do_sample);
  EXPECT_FLOAT_EQ(v.temperature, 1.0f);
  EXPECT_EQ(v.eos_token_ids, std::vector<int>{2});
}

TEST(ClipForLog, CutsCharactersNotBytes) {
  EXPECT_EQ(clip_for_log("hello", -1), "hello");
  EXPECT_EQ(clip_for_log("hello", 5), "hello");
  EXPECT_EQ(clip_for_log("hello world", 5), "hello... (6 more characters)");
  EXPECT_EQ(clip_for_log("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xC3\xA9... (1 more characters)");
  EXPECT_EQ(clip_for_log("abc", 0), "... (3 more characters)");
}

}  // namespace
}  // namespace locr::server
