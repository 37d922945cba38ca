// `locr dump --taps` end to end on the tiny fixture model: the list, the named tensors in the
// output file next to the parity tensors (and equal to them where they are the same quantity),
// and the errors for an unknown name, a pattern matching nothing and a vision tap without image.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "io/safetensors.h"
#include "toolkit/compare.h"

namespace fs = std::filesystem;

namespace {

const std::string kModel = std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a";
const std::string kImage = std::string(LOCR_FIXTURES_DIR) + "/images/page_small.png";

// Runs `locr dump ARGS` and returns (exit status, stdout + stderr).
std::pair<int, std::string> dump(const std::string& args) {
  const std::string cmd = std::string(LOCR_BIN) + " dump --model '" + kModel + "' --threads 1 " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  return {rc, out};
}

TEST(DumpTaps, ListPrintsEveryName) {
  const auto [rc, out] = dump("--taps list");
  ASSERT_EQ(rc, 0) << out;
  std::istringstream in(out);
  int n = 0;
  bool q = false, patch = false, proj = false;
  for (std::string line; std::getline(in, line);) {
    ++n;
    q |= line == "text.1.q";
    patch |= line == "vision.patch_embed";
    proj |= line == "projector.out";
  }
  EXPECT_TRUE(q && patch && proj) << out;
  // tiny_a: 2 + 2 vision blocks x 11 + 6 projector + 1 + 2 text layers x 11 + 1.
  EXPECT_EQ(n, 2 + 22 + 6 + 1 + 22 + 1) << out;
  EXPECT_EQ(dump("--list-taps").second, out);
}

TEST(DumpTaps, WritesTheNamedTensors) {
  const std::string file = (fs::temp_directory_path() / "locr_dump_taps.safetensors").string();
  const auto [rc, out] = dump("--backend ref --image-align 14 --image '" + kImage +
                              "' --max-tokens 2 --taps 'text.*.attn_out,vision.patch_embed,projector.*' --out '" + file + "'");
  ASSERT_EQ(rc, 0) << out;
  auto f = locr::io::SafetensorsFile::open(file);
  for (const char* n : {"text.0.attn_out", "text.1.attn_out", "vision.patch_embed", "projector.in", "projector.out",
                        "hidden.0", "vision_hidden", "image_embeds"})
    EXPECT_TRUE(f->has(n)) << n;
  EXPECT_FALSE(f->has("text.0.q"));
  // The taps that are the parity tensors hold the same numbers.
  for (auto [tap, parity] : {std::pair{"projector.in", "vision_hidden"}, {"projector.out", "image_embeds"}}) {
    const locr::Tensor a = f->get(tap), b = f->get(parity);
    ASSERT_EQ(a.shape(), b.shape()) << tap;
    EXPECT_EQ(locr::toolkit::compare_tensors(a.data<float>(), b.data<float>(), a.numel()).max_abs_error, 0.0) << tap;
  }
  const locr::Tensor ids = f->get("input_ids");
  EXPECT_EQ(f->get("text.0.attn_out").dim(0), ids.numel());
  fs::remove(file);
}

TEST(DumpTaps, ErrorsAreClear) {
  const std::string out_file = " --out " + (fs::temp_directory_path() / "locr_dump_taps_err.safetensors").string();
  auto [rc, out] = dump("--prompt hi --taps text.0.atn_out" + out_file);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("unknown tap 'text.0.atn_out'; closest: text.0.attn_out"), std::string::npos) << out;
  std::tie(rc, out) = dump("--prompt hi --taps 'text.*.nothing'" + out_file);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("matches no tap"), std::string::npos) << out;
  std::tie(rc, out) = dump("--prompt hi --taps vision.patch_embed" + out_file);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("tap vision.patch_embed was not recorded (the prompt has no image"), std::string::npos) << out;
  // A pattern over text and vision with a text-only prompt writes the text taps.
  std::tie(rc, out) = dump("--prompt hi --taps '*.0.q'" + out_file);
  EXPECT_EQ(rc, 0) << out;
  fs::remove(fs::temp_directory_path() / "locr_dump_taps_err.safetensors");
}

}  // namespace
