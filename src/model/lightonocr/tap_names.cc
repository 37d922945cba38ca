#include "model/lightonocr/tap_names.h"

namespace locr::model {

namespace {

const char* const kLayerSites[] = {"attn_norm", "q",        "k",       "v",       "attn_out", "attn_proj",
                                   "post_attn", "ffn_norm", "mlp_act", "mlp_out", "out"};

}  // namespace

std::vector<std::string> tap_names(const ModelConfig& cfg, bool vision) {
  std::vector<std::string> n;
  if (vision) {
    n.push_back("vision.patch_embed");
    n.push_back("vision.ln_pre");
    for (int l = 0; l < cfg.vision.num_hidden_layers; ++l)
      for (const char* s : kLayerSites) n.push_back("vision." + std::to_string(l) + "." + s);
    for (const char* s : {"in", "norm", "merged", "merge_out", "act", "out"}) n.push_back(std::string("projector.") + s);
  }
  n.push_back("text.embed");
  for (int l = 0; l < cfg.text.num_hidden_layers; ++l)
    for (const char* s : kLayerSites) n.push_back("text." + std::to_string(l) + "." + s);
  n.push_back("text.norm");
  return n;
}

}  // namespace locr::model
