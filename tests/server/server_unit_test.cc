// Unit tests of the server's pure pieces: base64, API keys, local media URLs, size parsing, error
// bodies. (Stop strings are runtime's: tests/unit/text_output_test.cc.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "server/auth.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "server/decode_budget.h"
#include "server/errors.h"
#include "server/http_server.h"
#include "server/legacy_api.h"
#include "server/media.h"
#include "server/ocr_figures.h"
#include "server/ocr_mistral.h"
#include "server/openai_schema.h"
#include "server/memory_plan.h"
#include "server/queue_wait.h"

namespace locr::server {
namespace {

// The decode budget is a counting semaphore of bytes: holders never exceed the capacity together,
// a waiter proceeds when bytes are given back, and one lease larger than the capacity goes alone.
TEST(DecodeBudget, LeasesWaitAndNeverExceedTheCapacity) {
  DecodeBudget b(100);
  std::atomic<int64_t> held{0}, max_held{0};
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i)
    ts.emplace_back([&, i] {
      const int64_t n = 30 + 10 * (i % 3);
      DecodeBudget::Lease l(b, n);
      const int64_t now = held += n;
      int64_t m = max_held.load();
      while (now > m && !max_held.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      held -= n;
    });
  for (auto& t : ts) t.join();
  EXPECT_LE(max_held.load(), 100);
  EXPECT_GE(max_held.load(), 30);
  EXPECT_EQ(b.in_use(), 0);
  {
    DecodeBudget::Lease big(b, 1000);  // clamped to the capacity: does not wait forever
    EXPECT_EQ(b.in_use(), 100);
  }
  EXPECT_EQ(b.in_use(), 0);
  EXPECT_GT(DecodeBudget::estimate(13000, 13000), int64_t{13000} * 13000 * 4);
}

TEST(Base64, StandardUrlSafeAndPadding) {
  EXPECT_EQ(*base64_decode("aGVsbG8="), "hello");
  EXPECT_EQ(*base64_decode("aGVsbG8"), "hello");
  EXPECT_EQ(*base64_decode("-_8="), std::string("\xfb\xff", 2));
  EXPECT_EQ(*base64_decode("+/8="), std::string("\xfb\xff", 2));
  EXPECT_EQ(*base64_decode(""), "");
  EXPECT_FALSE(base64_decode("aGVs bG8="));
  EXPECT_FALSE(base64_decode("a"));
  EXPECT_FALSE(base64_decode("@@@@"));
}

TEST(Base64, EncodeIsRfc4648WithPadding) {
  // RFC 4648 section 10 test vectors.
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xfb\xff", 2)), "+/8=");
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_EQ(*base64_decode(base64_encode(all)), all);
}

TEST(OcrFigures, FindsBboxMarkersWithTheirSpans) {
  const std::string t = "Intro\n![image](image_1.png)100,200,500,600\ntext ![chart](image_2.png) 10 , 20 ,30, 40 end";
  const auto f = find_figures(t);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].alt, "image");
  EXPECT_EQ(f[0].target, "image_1.png");
  EXPECT_EQ((std::vector<int>{f[0].x1, f[0].y1, f[0].x2, f[0].y2}), (std::vector<int>{100, 200, 500, 600}));
  EXPECT_EQ(t.substr(f[0].begin, f[0].end - f[0].begin), "![image](image_1.png)100,200,500,600");
  EXPECT_EQ(t.substr(f[1].begin, f[1].end - f[1].begin), "![chart](image_2.png) 10 , 20 ,30, 40");
  EXPECT_EQ(replace_figures(t, f, {"img-0.jpeg", ""}),
            "Intro\n![img-0.jpeg](img-0.jpeg)\ntext  end");
}

TEST(OcrFigures, MalformedMarkersAreNotFiguresAndBoxesAreClamped) {
  for (const char* bad : {"![image](a.png)1,2,3", "![image](a.png)1,2,x,4", "![im\nage](a.png)1,2,3,4",
                          "![image](a.png)1234567,2,3,4", "![image](a.png", "![image]a.png)1,2,3,4",
                          "![image](a.png)5,5,5,9" /* empty box */})
    EXPECT_TRUE(find_figures(bad).empty()) << bad;
  const auto f = find_figures("![image](a.png)1200,900,300,-0");
  // "-0" is not a number: three coordinates only.
  EXPECT_TRUE(f.empty());
  const auto g = find_figures("![x](y)1200,900,300,50");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ((std::vector<int>{g[0].x1, g[0].y1, g[0].x2, g[0].y2}), (std::vector<int>{300, 50, 1000, 900}));
}

TEST(OcrFigures, PixelsAndCrop) {
  Figure f;
  f.x1 = 100, f.y1 = 250, f.x2 = 500, f.y2 = 1000;
  const PixelBox b = figure_pixels(f, 200, 100);
  EXPECT_EQ((std::vector<int>{b.left, b.top, b.right, b.bottom}), (std::vector<int>{20, 25, 100, 100}));
  Figure thin;
  thin.x1 = 0, thin.y1 = 0, thin.x2 = 1, thin.y2 = 1;
  const PixelBox t = figure_pixels(thin, 10, 10);
  EXPECT_EQ(t.right - t.left, 1);
  EXPECT_EQ(t.bottom - t.top, 1);
  io::Image page;
  page.width = 4, page.height = 3;
  for (int i = 0; i < 12; ++i) page.rgb.insert(page.rgb.end(), {uint8_t(i), uint8_t(100 + i), uint8_t(200 + i)});
  const io::Image c = crop(page, PixelBox{1, 1, 3, 3});
  ASSERT_EQ(c.width, 2);
  ASSERT_EQ(c.height, 2);
  EXPECT_EQ((std::vector<uint8_t>{c.rgb[0], c.rgb[3], c.rgb[6], c.rgb[9]}), (std::vector<uint8_t>{5, 6, 9, 10}));
}

TEST(MistralPage, FiguresBecomeNumberedCropsAndReferences) {
  io::Image page;
  page.width = 200, page.height = 100;
  page.rgb.assign(static_cast<size_t>(200) * 100 * 3, 255);
  const std::string md = "A ![image](image_1.png)0,0,500,500 B ![image](image_2.png)900,900,905,905 C "
                         "![image](image_3.png)500,500,1000,1000";
  MistralOptions o;
  o.active = true;
  o.include_image_base64 = true;
  o.image_min_size = 2;  // the second figure is 1x0.5 px: dropped
  int next = 3;          // numbering goes on across the document's pages
  const nlohmann::json p = mistral_page(4, md, 200, 100, 144, &page, nullptr, o, &next);
  EXPECT_EQ(p["index"], 4);
  EXPECT_EQ(p["dimensions"], (nlohmann::json{{"dpi", 144}, {"height", 100}, {"width", 200}}));
  EXPECT_EQ(p["markdown"], "A ![img-3.jpeg](img-3.jpeg) B  C ![img-4.jpeg](img-4.jpeg)");
  ASSERT_EQ(p["images"].size(), 2u);
  EXPECT_EQ(next, 5);
  const auto& a = p["images"][0];
  EXPECT_EQ(a["id"], "img-3.jpeg");
  EXPECT_EQ((std::vector<int>{a["top_left_x"], a["top_left_y"], a["bottom_right_x"], a["bottom_right_y"]}),
            (std::vector<int>{0, 0, 100, 50}));
  const std::string url = a["image_base64"];
  ASSERT_EQ(url.rfind("data:image/jpeg;base64,", 0), 0u);
  const io::Image crop = io::decode_image(*base64_decode(url.substr(23)));
  EXPECT_EQ(crop.width, 100);
  EXPECT_EQ(crop.height, 50);
  EXPECT_FALSE(p.contains("confidence_scores"));
  // image_limit counts across the document; without base64 no crop is made.
  o.include_image_base64 = false;
  o.image_limit = 4;
  const nlohmann::json q = mistral_page(0, md, 200, 100, 72, nullptr, nullptr, o, &next);
  ASSERT_EQ(q["images"].size(), 0u);
  EXPECT_EQ(q["markdown"], "A  B  C ");
}

TEST(ParseBody, NumbersPastDoubleAre400NotACrash) {
  // Found by the openai_schema fuzzer: nlohmann throws out_of_range (not parse_error) for these.
  for (const char* body : {R"({"messages":646e66660})", R"({"max_tokens": 1e999})", R"({"x": -1e400})"}) {
    try {
      parse_body(body);
      ADD_FAILURE() << body << " parsed";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
}

TEST(RootPath, NormalisedOrRefused) {
  EXPECT_EQ(normalize_root_path(""), "");
  EXPECT_EQ(normalize_root_path("/"), "");
  EXPECT_EQ(normalize_root_path("/ocr"), "/ocr");
  EXPECT_EQ(normalize_root_path("/ocr/"), "/ocr");
  EXPECT_EQ(normalize_root_path("/a/b-c_d.e~f/"), "/a/b-c_d.e~f");
  for (const char* bad : {"ocr", "/o cr", "/ocr\"", "//ocr", "/a//b", "/<x>", "/ocr?x=1"})
    EXPECT_THROW(normalize_root_path(bad), Error) << bad;
}

TEST(ApiKey, BearerSchemeAndExactKey) {
  EXPECT_TRUE(api_key_matches("Bearer sk-1", "sk-1"));
  EXPECT_TRUE(api_key_matches("bearer sk-1", "sk-1"));  // the scheme is case-insensitive (vLLM)
  EXPECT_FALSE(api_key_matches("Bearer sk-2", "sk-1"));
  EXPECT_FALSE(api_key_matches("Bearer sk-1x", "sk-1"));
  EXPECT_FALSE(api_key_matches("Bearer sk-", "sk-1"));  // a prefix of the key is not the key
  EXPECT_FALSE(api_key_matches("Basic sk-1", "sk-1"));
  EXPECT_FALSE(api_key_matches("sk-1", "sk-1"));
  EXPECT_FALSE(api_key_matches("", "sk-1"));
}

TEST(ApiKey, FlagWinsOverVllmApiKeyEnvironment) {
  ::unsetenv("VLLM_API_KEY");
  EXPECT_EQ(resolve_api_key(std::nullopt), "");
  ::setenv("VLLM_API_KEY", "from-env", 1);
  EXPECT_EQ(resolve_api_key(std::nullopt), "from-env");
  EXPECT_EQ(resolve_api_key(std::string("from-flag")), "from-flag");
  ::unsetenv("VLLM_API_KEY");
}

// Runs fetch_image_bytes and returns the ApiError message ("" if it succeeded).
std::string media_error(const std::string& url, const ServerOptions& o) {
  try {
    fetch_image_bytes(url, o);
    return "";
  } catch (const ApiError& e) {
    return e.what();
  }
}

TEST(LocalMedia, FileUrlWithAHostIsRefusedNotReadAsARelativePath) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("locr-media-" + std::to_string(::getpid()));
  fs::create_directories(root / "host");
  std::ofstream(root / "host" / "x.png") << "bytes";
  ServerOptions o;
  o.allowed_local_media_path = root.string();
  const fs::path cwd = fs::current_path();
  fs::current_path(root);  // "host/x.png" relative to here is a file under the allowed directory
  const std::string err = media_error("file://host/x.png", o);
  fs::current_path(cwd);
  EXPECT_NE(err.find("with a host ('host')"), std::string::npos) << err;
  EXPECT_EQ(media_error("file://localhost" + (root / "host" / "x.png").string(), o), "");
  EXPECT_EQ(media_error("file://" + (root / "host" / "x.png").string(), o), "");
  fs::remove_all(root);
}

TEST(LocalMedia, ErrorsNeverRevealWhetherAFileExists) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("locr-media2-" + std::to_string(::getpid()));
  fs::create_directories(root / "sub");
  ServerOptions o;
  o.allowed_local_media_path = root.string();
  auto refused = [](const std::string& path) {
    return "local image '" + path + "' is not a readable file under --allowed-local-media-path";
  };
  // Exists outside, missing outside, missing inside, a directory inside: one message shape.
  for (const std::string& p : {std::string("/etc/passwd"), std::string("/nonexistent-locr/x.png"),
                              (root / "missing.png").string(), (root / "sub").string(),
                              (root / "sub" / ".." / ".." / "etc-passwd-nope").string()})
    EXPECT_EQ(media_error("file://" + p, o), refused(p)) << p;
  fs::remove_all(root);
}

TEST(ParseSize, Units) {
  EXPECT_EQ(parse_size("123", "x"), 123);
  EXPECT_EQ(parse_size("4GiB", "x"), 4LL << 30);
  EXPECT_EQ(parse_size("4G", "x"), 4LL << 30);
  EXPECT_EQ(parse_size("512MiB", "x"), 512LL << 20);
  EXPECT_EQ(parse_size("2GB", "x"), 2000000000LL);
  EXPECT_EQ(parse_size("8k", "x"), 8000);
  EXPECT_EQ(parse_size("8K", "x"), 8192);
  EXPECT_EQ(parse_size("1.5KiB", "x"), 1536);
  EXPECT_THROW(parse_size("lots", "x"), locr::Error);
  EXPECT_THROW(parse_size("4 parsecs", "x"), locr::Error);
}

TEST(Errors, OpenAiShape) {
  const auto j = error_body(ApiError(404, "The model `x` does not exist.", "model"));
  EXPECT_EQ(j["error"]["code"], 404);
  EXPECT_EQ(j["error"]["type"], "NotFoundError");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_TRUE(error_body(400, "bad")["error"]["param"].is_null());
  EXPECT_EQ(from_locr_error(locr::Error(ErrorKind::kLimit, "too many pixels")).status(), 400);
  EXPECT_EQ(from_locr_error(locr::Error(ErrorKind::kInternal, "bug")).status(), 500);
}

TEST(Errors, UriTooLongHasItsOwnType) {
  EXPECT_EQ(error_body(414, "long")["error"]["type"], "URITooLongError");
  EXPECT_EQ(error_body(431, "big")["error"]["type"], "RequestHeaderFieldsTooLargeError");
}

// The queue-wait estimate: no refusal without data or with room, else (waiting + 1) x service /
// running slots; Retry-After is the time until the queue is back under the limit, at least 1 s.
TEST(QueueWait, EstimateFromQueueAndServiceTime) {
  EXPECT_EQ(estimate_queue_wait_s(32, 100, 32, 0.0), 0.0);  // nothing finished yet: no estimate
  EXPECT_EQ(estimate_queue_wait_s(3, 0, 32, 10.0), 0.0);    // a free slot, nobody waiting
  EXPECT_DOUBLE_EQ(estimate_queue_wait_s(32, 0, 32, 10.0), 10.0 / 32);
  EXPECT_DOUBLE_EQ(estimate_queue_wait_s(32, 63, 32, 10.0), 20.0);
  EXPECT_DOUBLE_EQ(estimate_queue_wait_s(1, 5, 1, 2.0), 12.0);
  // The KV cache holds the batch at 4 while 7 wait: the 4 running set the rate.
  EXPECT_DOUBLE_EQ(estimate_queue_wait_s(4, 7, 32, 10.0), 20.0);
  EXPECT_DOUBLE_EQ(estimate_queue_wait_s(0, 2, 32, 10.0), 30.0);  // between steps: one slot's rate
  EXPECT_EQ(retry_after_s(12.0, 5.0), 7);
  EXPECT_EQ(retry_after_s(5.2, 5.0), 1);
  EXPECT_EQ(retry_after_s(5.0, 5.0), 1);
  EXPECT_EQ(retry_after_s(1e12, 1.0), 86400);
}

// POST /generate's body: prompt and stream, SamplingParams fields with SamplingParams' defaults,
// anything else refused naming the field.
TEST(LegacyGenerate, ParsesPromptStreamAndSamplingFields) {
  auto r = parse_legacy_generate(nlohmann::json::parse(R"({"prompt": "San Francisco is", "stream": true, "n": 2,
                                                           "temperature": 0, "stop": ["."], "seed": 7})"));
  EXPECT_EQ(r.prompt, "San Francisco is");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.sampling["n"], 2);
  EXPECT_EQ(r.sampling["temperature"], 0);  // the request's value wins
  EXPECT_EQ(r.sampling["stop"], nlohmann::json::array({"."}));
  EXPECT_EQ(r.sampling["max_tokens"], 16);  // SamplingParams' default, not generation_config.json's
  EXPECT_EQ(r.sampling["top_p"], 1.0);
  EXPECT_FALSE(r.sampling.contains("prompt"));
  EXPECT_FALSE(r.sampling.contains("stream"));
  EXPECT_TRUE(parse_legacy_generate(nlohmann::json::parse(R"({"prompt": "x", "max_tokens": null})"))
                  .sampling["max_tokens"].is_null());  // None: up to the context
  EXPECT_FALSE(parse_legacy_generate(nlohmann::json::parse(R"({"prompt": "x"})")).stream);
  EXPECT_NO_THROW(parse_legacy_generate(nlohmann::json::parse(
      R"({"prompt": "x", "detokenize": true, "use_beam_search": false, "best_of": 1, "bad_words": []})")));

  auto status_and_param = [](const char* body) -> std::pair<int, std::string> {
    try {
      parse_legacy_generate(nlohmann::json::parse(body));
    } catch (const ApiError& e) {
      return {e.status(), e.param()};
    }
    return {0, ""};
  };
  EXPECT_EQ(status_and_param(R"({"stream": false})"), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(status_and_param(R"({"prompt": ["a", "b"]})"), std::make_pair(400, std::string("prompt")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "stream": "yes"})"), std::make_pair(400, std::string("stream")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "model": "m"})"), std::make_pair(400, std::string("model")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "messages": []})"), std::make_pair(400, std::string("messages")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "detokenize": false})"), std::make_pair(400, std::string("detokenize")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "length_penalty": 0.5})"),
            std::make_pair(400, std::string("length_penalty")));
  EXPECT_EQ(status_and_param(R"({"prompt": "x", "allowed_token_ids": [1]})"),
            std::make_pair(400, std::string("allowed_token_ids")));

  EXPECT_EQ(legacy_text_json("P: ", {"a", "bc"}), nlohmann::json::parse(R"({"text": ["P: a", "P: bc"]})"));
}

}  // namespace
}  // namespace locr::server
