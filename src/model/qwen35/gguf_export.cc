// `locr quantize` for the Qwen3.5 family; see gguf_export.h.
#include "model/qwen35/gguf_export.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "io/safetensors.h"
#include "model/gguf_export_parts.h"
#include "model/gguf_export_vocab.h"
#include "model/qwen35/config.h"
#include "model/qwen35/processor.h"

namespace locr::model::qwen35 {

using nlohmann::json;
using io::GgmlType;
using namespace export_detail;

namespace {

// The matrices the items point at: views of the checkpoint, or buffers of transformed values.
class Store {
 public:
  // A fresh F32 [rows, cols] matrix to fill.
  Matrix& empty(int64_t rows, int64_t cols) {
    auto out = std::make_shared<Tensor>(Tensor::empty(DType::kF32, {rows, cols}));
    Matrix m = Matrix::from_tensor(*out);
    m.holder = out;
    mats_.push_back(m);
    return mats_.back();
  }
  const Matrix& view(const Tensor& t) {
    mats_.push_back(Matrix::from_tensor(t));
    return mats_.back();
  }
  // [rows, cols] F32 values f(i) of the tensor's i-th element (as F32).
  template <typename F>
  const Matrix& map(const Tensor& t, int64_t rows, int64_t cols, F f) {
    const Tensor src = t.to_f32();
    auto out = std::make_shared<Tensor>(Tensor::empty(DType::kF32, {rows, cols}));
    for (int64_t i = 0; i < rows * cols; ++i) out->data<float>()[i] = f(src.data<float>()[i], i);
    Matrix m = Matrix::from_tensor(*out);
    m.holder = out;
    mats_.push_back(m);
    return mats_.back();
  }
  // A copy of the [rows, cols] tensor with its columns moved: column c of the result is column
  // col_from[c] of the source (element bytes as stored).
  const Matrix& columns(const Tensor& t, int64_t rows, int64_t cols, const std::vector<int64_t>& col_from) {
    const size_t es = dtype_size(t.dtype());
    auto out = std::make_shared<Tensor>(Tensor::empty(t.dtype(), {rows, cols}));
    const char* src = static_cast<const char*>(t.raw());
    char* dst = static_cast<char*>(out->raw());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(dst + (r * cols + c) * es, src + (r * cols + col_from[c]) * es, es);
    Matrix m = Matrix::from_tensor(*out);
    m.holder = out;
    mats_.push_back(m);
    return mats_.back();
  }

 private:
  std::deque<Matrix> mats_;  // stable addresses
};

// The converter's value-head reorder (_LinearAttentionVReorderBase._reorder_v_heads): file head
// j * nk + g holds HF head g * r + j. For each output index of an axis of `total` entries whose
// [offset, offset + nk * r * width) are value heads of `width`: the source index.
std::vector<int64_t> tiled_from(int64_t total, int64_t offset, int64_t nk, int64_t r, int64_t width) {
  std::vector<int64_t> from(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) from[i] = i;
  for (int64_t g = 0; g < nk; ++g)
    for (int64_t j = 0; j < r; ++j)
      for (int64_t d = 0; d < width; ++d) from[offset + (j * nk + g) * width + d] = offset + (g * r + j) * width + d;
  return from;
}

}  // namespace

GgufExportResult export_gguf(const std::string& dir, const std::string& text_path, const std::string& mmproj_path,
                             GgufOutType type) {
  check_dir(text_path);
  check_dir(mmproj_path);
  if (std::filesystem::weakly_canonical(text_path) == std::filesystem::weakly_canonical(mmproj_path))
    fail(ErrorKind::kInvalidArgument, "the text GGUF and the mmproj GGUF would be the same file: ", text_path);
  const std::string cfg_path = io::join_path(dir, "config.json");
  const Config cfg = Config::from_file(cfg_path);
  const json raw = read_json(cfg_path);
  const json traw = raw.value("text_config", json::object());
  const ProcessorConfig pc = load_processor_config(dir);
  const io::SafetensorsSet st = io::SafetensorsSet::open_dir(dir);
  const TextConfig& t = cfg.text;
  const VisionConfig& v = cfg.vision;
  const bool k_mix = type == GgufOutType::kQ4_K_M;
  const GgmlType wt = weight_type(type);  // q4_k_m: Q4_K, the mix's default (set per tensor below)
  // The mmproj of a q4_k_m export is the q8_0 one (llama-quantize takes no clip model), as LightOnOCR's.
  const GgufOutType mm_type = k_mix ? GgufOutType::kQ8_0 : type;
  const GgmlType mwt = weight_type(mm_type);
  const int64_t nk = t.linear_num_key_heads, r = t.linear_num_value_heads / nk;
  const int64_t kd = t.linear_key_head_dim, vd = t.linear_value_head_dim, C = t.conv_dim();
  const bool reorder = r > 1;

  Store store;
  std::vector<Item> text, mm;
  // The converter's type for a tensor (ModelBase.prepare_tensors): F32 for vectors, norms, the conv
  // kernel, the position table and anything not named .weight; the patch embedding F16 in an f16
  // file, else F32 (MmprojModel.tensor_force_quant); every other weight the --type's.
  auto type_of = [&](const std::string& name, size_t n_dims, bool mmproj) {
    if (name.find("v.patch_embd.weight") == 0) return mm_type == GgufOutType::kF16 ? GgmlType::kF16 : GgmlType::kF32;
    if (n_dims <= 1 || name.size() < 7 || name.compare(name.size() - 7, 7, ".weight") != 0 ||
        name.find("_norm.weight") != std::string::npos || name.find("ssm_conv1d") != std::string::npos ||
        name == "v.position_embd.weight")
      return GgmlType::kF32;
    return mmproj ? mwt : wt;
  };
  auto add = [&](std::vector<Item>& items, std::string name, const Matrix& m, std::vector<int64_t> ne,
                 std::vector<int64_t> row_from = {}) {
    const GgmlType ty = type_of(name, ne.size(), &items == &mm);
    items.push_back({std::move(name), &m, std::move(ne), ty, std::move(row_from)});
  };
  const std::string tp = "model.language_model.", vp = "model.visual.";
  for (const std::string& name : st.names_by_file()) {
    const Tensor x = st.get(name);
    const std::vector<int64_t>& shape = x.shape();
    const int64_t rows = shape.size() >= 2 ? shape[0] : 1, cols = shape.empty() ? 1 : shape.back();
    if (name.rfind("mtp.", 0) == 0) continue;  // the multi-token-prediction head (--no-mtp)
    if (name == "lm_head.weight") {
      add(text, "output.weight", store.view(x), {cols, rows});
      continue;
    }
    if (name.rfind(vp, 0) == 0) {
      const std::string n = name.substr(vp.size());
      std::string out;
      if (n == "patch_embed.proj.weight") {
        // [V, C, T, p, p] -> its frames [V, C, p, p] as .weight (t = 0) and .weight.1 (t = 1).
        const int64_t V = shape[0], Ci = shape[1], T = shape[2], P = shape[3];
        const Tensor src = x.to_f32();
        for (int64_t f = 0; f < T; ++f) {
          // Frame f: element (o, c, y, x) is the kernel's (o, c, f, y, x).
          Matrix& m = store.empty(V, Ci * P * P);
          float* d = static_cast<float*>(const_cast<void*>(m.data));
          for (int64_t o = 0; o < V; ++o)
            for (int64_t c = 0; c < Ci; ++c)
              std::memcpy(d + (o * Ci + c) * P * P, src.data<float>() + ((o * Ci + c) * T + f) * P * P,
                          static_cast<size_t>(P * P) * sizeof(float));
          // Written from the checkpoint's values: F32 as they are (to_f32 is exact), F16 rounded once.
          add(mm, f == 0 ? "v.patch_embd.weight" : "v.patch_embd.weight.1", m, {P, P, Ci, V});
        }
        continue;
      }
      static const std::vector<std::pair<std::string, std::string>> kMap = {
          {"attn.proj", "attn_out"}, {"attn.qkv", "attn_qkv"}, {"mlp.linear_fc1", "ffn_up"},
          {"mlp.linear_fc2", "ffn_down"}, {"norm1", "ln1"}, {"norm2", "ln2"}};
      if (n == "patch_embed.proj.bias") out = "v.patch_embd.bias";
      else if (n == "pos_embed.weight") out = "v.position_embd.weight";
      else if (n.rfind("merger.linear_fc1.", 0) == 0) out = "mm.0." + n.substr(18);
      else if (n.rfind("merger.linear_fc2.", 0) == 0) out = "mm.2." + n.substr(18);
      else if (n.rfind("merger.norm.", 0) == 0) out = "v.post_ln." + n.substr(12);
      else if (n.rfind("blocks.", 0) == 0) {
        const size_t dot = n.find('.', 7);
        const std::string blk = n.substr(7, dot - 7), rest = n.substr(dot + 1);
        for (const auto& [hf, gg] : kMap)
          if (rest.rfind(hf + ".", 0) == 0) out = "v.blk." + blk + "." + gg + rest.substr(hf.size());
      }
      if (out.empty()) fail(ErrorKind::kUnsupported, dir, ": tensor '", name, "' has no place in the mmproj");
      add(mm, out, store.view(x), shape.size() == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows});
      continue;
    }
    if (name.rfind(tp, 0) != 0) fail(ErrorKind::kUnsupported, dir, ": tensor '", name, "' is not a Qwen3.5 tensor");
    const std::string n = name.substr(tp.size());
    if (n == "embed_tokens.weight") {
      add(text, "token_embd.weight", store.view(x), {cols, rows});
      continue;
    }
    if (n == "norm.weight") {
      add(text, "output_norm.weight", store.map(x, 1, cols, [](float y, int64_t) { return y + 1.0f; }), {cols});
      continue;
    }
    if (n.rfind("layers.", 0) != 0) fail(ErrorKind::kUnsupported, dir, ": tensor '", name, "' is not a Qwen3.5 tensor");
    const size_t dot = n.find('.', 7);
    const std::string blk = n.substr(7, dot - 7), rest = n.substr(dot + 1), p = "blk." + blk + ".";
    const std::vector<int64_t> ne2 = {cols, rows};
    auto plus_one = [&](const std::string& out) {
      add(text, out, store.map(x, 1, cols, [](float y, int64_t) { return y + 1.0f; }), {cols});
    };
    if (rest == "input_layernorm.weight") plus_one(p + "attn_norm.weight");
    else if (rest == "post_attention_layernorm.weight") plus_one(p + "post_attention_norm.weight");
    else if (rest == "self_attn.q_norm.weight") plus_one(p + "attn_q_norm.weight");
    else if (rest == "self_attn.k_norm.weight") plus_one(p + "attn_k_norm.weight");
    else if (rest == "self_attn.q_proj.weight") add(text, p + "attn_q.weight", store.view(x), ne2);
    else if (rest == "self_attn.k_proj.weight") add(text, p + "attn_k.weight", store.view(x), ne2);
    else if (rest == "self_attn.v_proj.weight") add(text, p + "attn_v.weight", store.view(x), ne2);
    else if (rest == "self_attn.o_proj.weight") add(text, p + "attn_output.weight", store.view(x), ne2);
    else if (rest == "mlp.gate_proj.weight") add(text, p + "ffn_gate.weight", store.view(x), ne2);
    else if (rest == "mlp.up_proj.weight") add(text, p + "ffn_up.weight", store.view(x), ne2);
    else if (rest == "mlp.down_proj.weight") add(text, p + "ffn_down.weight", store.view(x), ne2);
    else if (rest == "linear_attn.norm.weight") add(text, p + "ssm_norm.weight", store.view(x), {cols});
    else if (rest == "linear_attn.A_log" || rest == "linear_attn.dt_bias") {
      const bool a = rest == "linear_attn.A_log";
      const std::vector<int64_t> from = reorder ? tiled_from(cols, 0, nk, r, 1) : std::vector<int64_t>{};
      const Tensor src = x.to_f32();
      const Matrix& m = store.map(x, 1, cols, [&](float, int64_t i) {
        const float y = src.data<float>()[from.empty() ? i : from[i]];
        return a ? -std::exp(y) : y;
      });
      add(text, a ? p + "ssm_a" : p + "ssm_dt.bias", m, {cols});
    } else if (rest == "linear_attn.conv1d.weight") {
      // [C, 1, K] squeezed to [C, K]; the value channels reordered.
      const int64_t K = shape.back();
      add(text, p + "ssm_conv1d.weight", store.map(x, C, K, [](float y, int64_t) { return y; }), {K, C},
          reorder ? tiled_from(C, 2 * nk * kd, nk, r, vd) : std::vector<int64_t>{});
    } else if (rest == "linear_attn.in_proj_qkv.weight") {
      add(text, p + "attn_qkv.weight", store.view(x), ne2,
          reorder ? tiled_from(rows, 2 * nk * kd, nk, r, vd) : std::vector<int64_t>{});
    } else if (rest == "linear_attn.in_proj_z.weight") {
      add(text, p + "attn_gate.weight", store.view(x), ne2,
          reorder ? tiled_from(rows, 0, nk, r, vd) : std::vector<int64_t>{});
    } else if (rest == "linear_attn.in_proj_b.weight" || rest == "linear_attn.in_proj_a.weight") {
      add(text, p + (rest == "linear_attn.in_proj_b.weight" ? "ssm_beta.weight" : "ssm_alpha.weight"), store.view(x),
          ne2, reorder ? tiled_from(rows, 0, nk, r, 1) : std::vector<int64_t>{});
    } else if (rest == "linear_attn.out_proj.weight") {
      add(text, p + "ssm_out.weight",
          reorder ? store.columns(x, rows, cols, tiled_from(cols, 0, nk, r, vd)) : store.view(x), ne2);
    } else {
      fail(ErrorKind::kUnsupported, dir, ": tensor '", name, "' is not a Qwen3.5 tensor locr knows how to write");
    }
  }

  // q4_k_m: llama-quantize's types for what it quantizes (the text model's 2-D weights the converter
  // would write in the file's type; not ssm_conv1d, norms, vectors) and its tensor order; the
  // fallbacks for rows that are not whole blocks (model/gguf_export_common.h).
  GgufExportResult res;
  if (k_mix) std::stable_sort(text.begin(), text.end(), llama_tensor_order);
  const bool tied = std::none_of(text.begin(), text.end(), [](const Item& it) { return it.name == "output.weight"; });
  settle_types(text, mm, k_mix, t.num_hidden_layers, tied, text_path, mmproj_path, &res);

  const std::string name = model_name(dir);
  {
    io::GgufWriter g;
    add_general(g, "qwen35", "model", dir, name, text);
    const std::string a = "qwen35.";
    g.add_u32(a + "block_count", static_cast<uint32_t>(t.num_hidden_layers));
    g.add_u32(a + "context_length", static_cast<uint32_t>(t.max_position_embeddings));
    g.add_u32(a + "embedding_length", static_cast<uint32_t>(t.hidden_size));
    g.add_u32(a + "feed_forward_length", static_cast<uint32_t>(t.intermediate_size));
    g.add_u32(a + "attention.head_count", static_cast<uint32_t>(t.num_attention_heads));
    g.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(t.num_key_value_heads));
    g.add_array(a + "rope.dimension_sections", io::GgufValueType::kI32,
                json::array({t.mrope_section[0], t.mrope_section[1], t.mrope_section[2], 0}));
    g.add_f32(a + "rope.freq_base", static_cast<float>(t.rope_theta));
    g.add_f32(a + "attention.layer_norm_rms_epsilon", t.rms_norm_eps);
    g.add_u32(a + "attention.key_length", static_cast<uint32_t>(t.head_dim));
    g.add_u32(a + "attention.value_length", static_cast<uint32_t>(t.head_dim));
    if (!k_mix) g.add_u32("general.file_type", file_type(type));
    g.add_u32(a + "ssm.conv_kernel", static_cast<uint32_t>(t.linear_conv_kernel_dim));
    g.add_u32(a + "ssm.state_size", static_cast<uint32_t>(kd));
    g.add_u32(a + "ssm.group_count", static_cast<uint32_t>(nk));
    g.add_u32(a + "ssm.time_step_rank", static_cast<uint32_t>(t.linear_num_value_heads));
    g.add_u32(a + "ssm.inner_size", static_cast<uint32_t>(t.linear_num_value_heads * vd));
    if (traw.contains("layer_types") && traw["layer_types"].is_array()) {
      json rec = json::array();
      for (bool full : t.full_attention) rec.push_back(!full);
      g.add_array(a + "attention.recurrent_layers", io::GgufValueType::kBool, rec);
    }
    g.add_u32(a + "full_attention_interval",
              static_cast<uint32_t>(traw.value("full_attention_interval", 4)));
    g.add_u32(a + "rope.dimension_count", static_cast<uint32_t>(t.rotary_dim()));
    if (!k_mix) g.add_u32("general.quantization_version", 2);
    add_gguf_vocab(g, dir, t.vocab_size, "qwen35");
    if (k_mix) {  // llama-quantize sets these two last (gguf_set_val_u32 removes, then appends, a key)
      g.add_u32("general.quantization_version", 2);
      g.add_u32("general.file_type", file_type(type));
    }
    add_tensors(g, text);
    res.text_tensors = static_cast<int>(g.tensor_count());
    res.text_bytes = g.write(text_path);
  }
  {
    io::GgufWriter g;
    add_general(g, "clip", "mmproj", dir, name, mm);
    add_clip_vision(g, {file_type(mm_type), static_cast<uint32_t>(v.out_hidden_size),
                        static_cast<uint32_t>(v.grid_side() * v.patch_size), static_cast<uint32_t>(v.patch_size),
                        static_cast<uint32_t>(v.hidden_size), static_cast<uint32_t>(v.intermediate_size),
                        static_cast<uint32_t>(v.depth), static_cast<uint32_t>(v.num_heads), pc.image_mean,
                        pc.image_std});
    g.add_string("clip.projector_type", "qwen3vl_merger");
    g.add_bool("clip.use_gelu", true);
    g.add_u32("clip.vision.spatial_merge_size", static_cast<uint32_t>(v.spatial_merge_size));
    // The converter writes the text model's rms_norm_eps here (the vision LayerNorms' 1e-6 in transformers).
    g.add_f32("clip.vision.attention.layer_norm_epsilon", t.rms_norm_eps);
    g.add_array("clip.vision.is_deepstack_layers", io::GgufValueType::kBool,
                json(std::vector<bool>(static_cast<size_t>(v.depth), false)));
    g.add_u32("general.quantization_version", 2);
    add_tensors(g, mm);
    res.mmproj_tensors = static_cast<int>(g.tensor_count());
    res.mmproj_bytes = g.write(mmproj_path);
  }
  return res;
}

}  // namespace locr::model::qwen35
