#include "runtime/block_hash.h"

#include <openssl/evp.h>

#include <memory>

#include "core/error.h"

namespace locr::runtime {

namespace {

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    LOCR_CHECK(ctx_ && EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1, "SHA-256 init failed");
  }
  void update(const void* p, size_t n) { LOCR_CHECK(EVP_DigestUpdate(ctx_.get(), p, n) == 1, "SHA-256 update failed"); }
  void update_u32(uint32_t v) {
    const uint8_t b[4] = {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
                          static_cast<uint8_t>(v >> 24)};
    update(b, 4);
  }
  BlockHash final() {
    BlockHash h{};
    unsigned int n = 0;
    LOCR_CHECK(EVP_DigestFinal_ex(ctx_.get(), h.data(), &n) == 1 && n == h.size(), "SHA-256 final failed");
    return h;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

}  // namespace

BlockHash chain_hash(const BlockHash& parent, const int32_t* tokens, int n, std::span<const BlockHash> images) {
  Sha256 s;
  s.update(parent.data(), parent.size());
  s.update_u32(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) s.update_u32(static_cast<uint32_t>(tokens[i]));
  s.update_u32(static_cast<uint32_t>(images.size()));
  for (const BlockHash& d : images) s.update(d.data(), d.size());
  return s.final();
}

BlockHash image_digest(const model::ProcessedImage& image) {
  Sha256 s;
  for (int v : {image.height, image.width, image.grid_h, image.grid_w}) s.update_u32(static_cast<uint32_t>(v));
  // Either form of the pixels: 8-bit RGB at the model's size, or normalised floats given directly
  // (each length-prefixed, so the two can never read as each other).
  s.update_u32(static_cast<uint32_t>(image.rgb.size()));
  s.update(image.rgb.data(), image.rgb.size());
  s.update_u32(static_cast<uint32_t>(image.pixels.size() * sizeof(image.pixels[0])));
  s.update(image.pixels.data(), image.pixels.size() * sizeof(image.pixels[0]));
  return s.final();
}

std::vector<BlockHash> prompt_block_hashes(const std::vector<int32_t>& prompt, int block_size, int32_t image_token,
                                           const std::vector<BlockHash>& image_digests,
                                           const std::vector<int64_t>& image_n_tokens) {
  LOCR_CHECK(block_size > 0 && image_digests.size() == image_n_tokens.size());
  const size_t n_blocks = prompt.size() / static_cast<size_t>(block_size);
  // Image of each placeholder position, in order: the k-th placeholder belongs to image i while
  // k < n_tokens[0] + ... + n_tokens[i].
  std::vector<int> image_at(prompt.size(), -1);
  size_t img = 0;
  int64_t used = 0;
  bool consistent = true;
  for (size_t t = 0; t < prompt.size() && consistent; ++t) {
    if (prompt[t] != image_token) continue;
    while (img < image_n_tokens.size() && used == image_n_tokens[img]) {
      ++img;
      used = 0;
    }
    if (img == image_n_tokens.size()) consistent = false;
    else image_at[t] = static_cast<int>(img), ++used;
  }
  if (consistent) {
    while (img < image_n_tokens.size() && used == image_n_tokens[img]) ++img, used = 0;
    consistent = img == image_n_tokens.size();
  }
  std::vector<BlockHash> out;
  out.reserve(n_blocks);
  BlockHash parent{};
  std::vector<BlockHash> in_block;
  for (size_t b = 0; b < n_blocks; ++b) {
    in_block.clear();
    if (!consistent) {
      in_block = image_digests;
    } else {
      int last = -1;
      for (size_t t = b * block_size; t < (b + 1) * block_size; ++t)
        if (image_at[t] >= 0 && image_at[t] != last) in_block.push_back(image_digests[last = image_at[t]]);
    }
    parent = chain_hash(parent, prompt.data() + b * block_size, block_size, in_block);
    out.push_back(parent);
  }
  return out;
}

}  // namespace locr::runtime
