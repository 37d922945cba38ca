#include "model/lightonocr/quantize_weights.h"

#include <string>

#include "core/dtype.h"
#include "core/log.h"
#include "model/gguf_export_common.h"

namespace locr::model {

QuantizeCounts quantize_weights(ModelWeights& w, const std::string& method) {
  const std::string k = quantization_method(method);
  const bool mix = k == "q4_k_m";
  const DType to = k == "q8_0" ? DType::kQ8_0 : DType::kQ4_K;
  QuantizeCounts n;
  auto q = [&](Matrix& m, DType t) { quantize_counted(m, t, &n); };
  // q4_k_m: llama-quantize's use_more_bits layers (model/gguf_export_common.cc q4_k_m_type) keep attn_v and
  // ffn_down in Q6_K, and so does the head.
  const int n_layers = static_cast<int>(w.text.layers.size());
  for (int i = 0; i < n_layers; ++i) {
    auto& L = w.text.layers[static_cast<size_t>(i)];
    const DType hi = mix && q4_k_m_more_bits(i, n_layers) ? DType::kQ6_K : to;
    for (Matrix* m : {&L.q_proj, &L.k_proj, &L.o_proj, &L.gate_proj, &L.up_proj}) q(*m, to);
    q(L.v_proj, hi);
    q(L.down_proj, hi);
  }
  // A tied head shares the embedding's storage: it gets its own copy, the table stays.
  q(w.text.lm_head, mix ? DType::kQ6_K : to);
  // q4_k_m: the vision tower and projector as `locr quantize --type q4_k_m`'s mmproj, Q8_0.
  const DType vt = mix ? DType::kQ8_0 : to;
  if (w.has_vision) {
    for (auto& L : w.vision.layers)
      for (Matrix* m : {&L.q_proj, &L.k_proj, &L.v_proj, &L.o_proj, &L.gate_proj, &L.up_proj, &L.down_proj}) q(*m, vt);
    for (Matrix* m : {&w.projector.merging_layer, &w.projector.linear_1, &w.projector.linear_2}) q(*m, vt);
  }
  if (mix)
    LOCR_INFO("quantization q4_k_m: ", n.q4_k, " weight matrices quantized to Q4_K at load, ", n.q6_k, " to Q6_K, ",
              n.q8_0, " to Q8_0 (the vision tower and projector, and rows not whole 256-weight super-blocks)");
  else if (to == DType::kQ4_K)
    LOCR_INFO("quantization q4_k: ", n.q4_k, " weight matrices quantized to Q4_K at load",
              n.q8_0 > 0 ? ", " + std::to_string(n.q8_0) + " to Q8_0 (rows not a whole number of 256-weight super-blocks)"
                         : std::string());
  else
    LOCR_INFO("quantization q8_0: ", n.q8_0, " weight matrices quantized to Q8_0 at load");
  return n;
}

}  // namespace locr::model
