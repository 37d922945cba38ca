// Content keys of the prefix cache: SHA-256, chained block to block as vLLM does (its default
// `sha256` prefix-caching hash). A full block's key is
//   SHA-256(parent key || token ids (int32, little-endian) || digests of the images in the block)
// so two blocks share KV only when their whole prefix, their tokens and the pixels of every image
// placeholder up to them are equal (up to a SHA-256 collision). Images are keyed by the SHA-256 of
// their preprocessed pixels and size.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "model/image_input.h"

namespace locr::runtime {

using BlockHash = std::array<uint8_t, 32>;

struct BlockHashHasher {
  size_t operator()(const BlockHash& h) const {
    size_t v;
    std::memcpy(&v, h.data(), sizeof v);  // already uniformly distributed
    return v;
  }
};

// The key of a block holding tokens[0, n) after a block keyed `parent` (all zeros for the first
// block), with the content digests of the images whose placeholder tokens lie in it.
BlockHash chain_hash(const BlockHash& parent, const int32_t* tokens, int n, std::span<const BlockHash> images = {});

// SHA-256 over an image's preprocessed size and pixel bytes.
BlockHash image_digest(const model::ProcessedImage& image);

// Keys of the full blocks of `prompt` (block_size tokens each; a trailing partial block has none).
// `image_token` marks placeholder positions; images[i] takes the i-th run of n_tokens[i] such tokens.
// If the placeholders do not add up to the images, every block carries every image digest (still
// safe, only less sharing).
std::vector<BlockHash> prompt_block_hashes(const std::vector<int32_t>& prompt, int block_size, int32_t image_token,
                                           const std::vector<BlockHash>& image_digests,
                                           const std::vector<int64_t>& image_n_tokens);

}  // namespace locr::runtime
