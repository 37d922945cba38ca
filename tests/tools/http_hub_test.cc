#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "test_util.h"
#include "toolkit/http_client.h"
#include "toolkit/hub.h"
#include "toolkit/synth_image.h"

namespace locr::toolkit {
namespace {

TEST(HttpUrl, Parses) {
  auto u = parse_url("http://localhost:8000/v1/chat/completions?x=1");
  EXPECT_EQ(u.scheme, "http");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 8000);
  EXPECT_EQ(u.path, "/v1/chat/completions?x=1");
  EXPECT_EQ(u.origin(), "http://localhost:8000");
  u = parse_url("https://huggingface.co");
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.path, "/");
  EXPECT_THROW(parse_url("localhost:8000"), Error);
  EXPECT_THROW(parse_url("ftp://x/y"), Error);
  EXPECT_EQ(url_encode("a b/c.safetensors", true), "a%20b/c.safetensors");
  EXPECT_EQ(url_encode("a/b"), "a%2Fb");
}

TEST(SseParser, SplitsEventsAcrossChunks) {
  SseParser p;
  std::vector<std::string> ev;
  auto on = [&](const std::string& e) { ev.push_back(e); return true; };
  const std::string s = "data: {\"a\":1}\n\n: comment\ndata: x\r\ndata: y\r\n\r\ndata: [DONE]\n\n";
  for (char c : s) p.feed(&c, 1, on);  // byte by byte
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0], "{\"a\":1}");
  EXPECT_EQ(ev[1], "x\ny");
  EXPECT_EQ(ev[2], "[DONE]");
}

TEST(Hub, RepoIdsAndCacheLayout) {
  EXPECT_TRUE(looks_like_repo_id("lightonai/LightOnOCR-2-1B"));
  EXPECT_FALSE(looks_like_repo_id("/abs/path"));
  EXPECT_FALSE(looks_like_repo_id("a/b/c"));
  EXPECT_FALSE(looks_like_repo_id(LOCR_FIXTURES_DIR));
  EXPECT_FALSE(looks_like_repo_id("plain"));
  EXPECT_EQ(repo_cache_dir("/c", "lightonai/LightOnOCR-2-1B"), "/c/models--lightonai--LightOnOCR-2-1B");
  ::setenv("HF_HUB_CACHE", "/x/hub", 1);
  EXPECT_EQ(hf_cache_dir(), "/x/hub");
  ::unsetenv("HF_HUB_CACHE");
  ::setenv("HF_HOME", "/y", 1);
  EXPECT_EQ(hf_cache_dir(), "/y/hub");
  ::unsetenv("HF_HOME");
  EXPECT_EQ(resolve_model(LOCR_FIXTURES_DIR), LOCR_FIXTURES_DIR);  // directories pass through
}

TEST(Hub, Digests) {
  test::TempDir t;
  {
    std::ofstream f(t / "x");
    f << "hello\n";
  }
  EXPECT_EQ(sha256_file(t / "x"), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
  EXPECT_EQ(git_blob_sha1_file(t / "x"), "ce013625030ba8dba906f756967f9e9ca394464a");  // git hash-object
}

TEST(SynthImage, PngRoundTrips) {
  const io::Image im = synth_page(120, 170, 3);
  const std::string png = encode_png(im);
  const io::Image back = io::decode_image(png);
  EXPECT_EQ(back.width, 120);
  EXPECT_EQ(back.height, 170);
  EXPECT_EQ(back.rgb, im.rgb);
  EXPECT_NE(synth_page(120, 170, 4).rgb, im.rgb);
  EXPECT_EQ(base64_encode("ab"), "YWI=");
  EXPECT_EQ(base64_encode("abc"), "YWJj");
  EXPECT_EQ(png_data_url("a").rfind("data:image/png;base64,", 0), 0u);
}

}  // namespace
}  // namespace locr::toolkit
