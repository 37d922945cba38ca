#include "model/gguf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "model/gguf_binder.h"

namespace locr::model {

using nlohmann::json;


GgufCheckpoint open_gguf_checkpoint(const std::string& text_path, const std::string& mmproj_path) {
  GgufCheckpoint ck;
  ck.text = io::GgufFile::open(text_path);
  const std::string arch = gguf_meta_string(*ck.text, "general.architecture");
  if (arch == "clip")
    fail(ErrorKind::kInvalidArgument, text_path, " is an mmproj (general.architecture 'clip'): give the text GGUF "
         "(arch 'qwen3') as the model and this file with --mmproj");
  if (arch != "qwen3")
    fail(ErrorKind::kUnsupported, text_path, ": general.architecture is '", arch, "'; a LightOnOCR text GGUF is "
         "'qwen3' (LightOnOCR's decoder converted by llama.cpp's Qwen3 converter)");
  if (mmproj_path.empty()) return ck;
  ck.mmproj = open_mmproj(mmproj_path, "lightonocr", ErrorKind::kUnsupported,
                          "locr runs LightOnOCR, whose mmproj has projector type 'lightonocr'");
  return ck;
}

int gguf_token_id(const io::GgufFile& text, const std::string& token) {
  const json* toks = gguf_meta(text, "tokenizer.ggml.tokens");
  if (!toks || !toks->is_array()) return -1;
  for (size_t i = 0; i < toks->size(); ++i)
    if ((*toks)[i].is_string() && (*toks)[i].get_ref<const std::string&>() == token) return static_cast<int>(i);
  return -1;
}

std::string gguf_chat_template(const io::GgufFile& text) { return gguf_meta_string(text, "tokenizer.chat_template"); }

std::string gguf_dir_of(const std::string& path) {
  const std::filesystem::path p = std::filesystem::path(path).parent_path();
  return p.empty() ? std::string(".") : p.string();
}

std::unique_ptr<tokenizer::Tokenizer> gguf_tokenizer(const io::GgufFile& text, const std::string& path,
                                          const tokenizer::TokenizerOptions& options) {
  const std::string beside = io::join_path(gguf_dir_of(path), "tokenizer.json");
  if (io::file_exists(beside)) {
    LOCR_INFO("gguf: tokenizer from ", beside, " (next to the GGUF; its tokenizer.ggml.* metadata is not used)");
    return tokenizer::Tokenizer::from_file(beside, options);
  }
  return tokenizer::Tokenizer::from_gguf(text, options);
}

std::string gguf_template_source(const io::GgufFile& text, const std::string& path,
                                 const std::string& chat_template_file) {
  if (!chat_template_file.empty()) return io::read_file(chat_template_file);
  std::string t = gguf_chat_template(text);
  if (!t.empty()) return t;
  const std::string beside = io::join_path(gguf_dir_of(path), "chat_template.jinja");
  if (io::file_exists(beside)) return io::read_file(beside);
  fail(ErrorKind::kNotFound, path, ": no chat template (no tokenizer.chat_template metadata, no ", beside,
       "); give one with --chat-template FILE");
}

ModelConfig gguf_model_config(const GgufCheckpoint& ck) {
  const io::GgufFile& f = *ck.text;
  ModelConfig c;
  c.model_type = "gguf:qwen3";
  TextConfig& t = c.text;
  t.hidden_size = gguf_meta_i32(f, "qwen3.embedding_length", 0, true);
  t.intermediate_size = gguf_meta_i32(f, "qwen3.feed_forward_length", 0, true);
  t.num_hidden_layers = gguf_meta_i32(f, "qwen3.block_count", 0, true);
  t.num_attention_heads = gguf_meta_i32(f, "qwen3.attention.head_count", 0, true);
  t.num_key_value_heads =
      gguf_meta_i32(f, "qwen3.attention.head_count_kv", t.num_attention_heads);
  t.head_dim = gguf_meta_i32(f, "qwen3.attention.key_length", t.hidden_size / t.num_attention_heads);
  const int64_t vlen = gguf_meta_int(f, "qwen3.attention.value_length", t.head_dim);
  if (vlen != t.head_dim)
    fail(ErrorKind::kUnsupported, f.name(), ": qwen3.attention.value_length ", vlen, " differs from key_length ",
         t.head_dim, "; LightOnOCR's decoder has one head_dim");
  if (t.num_key_value_heads <= 0 || t.head_dim <= 0 || t.num_attention_heads % t.num_key_value_heads != 0)
    fail(ErrorKind::kInvalidArgument, f.name(), ": head counts ", t.num_attention_heads, "/", t.num_key_value_heads,
         " and head_dim ", t.head_dim, " do not describe a grouped-query attention");
  t.rms_norm_eps = static_cast<float>(gguf_meta_float(f, "qwen3.attention.layer_norm_rms_epsilon", 1e-6));
  t.rope_theta = gguf_meta_float(f, "qwen3.rope.freq_base", 1e6);
  t.max_position_embeddings = gguf_meta_i32(f, "qwen3.context_length", 16384);
  for (const char* k : {"qwen3.rope.scaling.type", "qwen3.rope.dimension_count", "qwen3.expert_count",
                        "qwen3.attention.sliding_window"}) {
    if (!f.has(k)) continue;
    const json& v = f.metadata()[k];
    const bool inert = (std::strcmp(k, "qwen3.rope.scaling.type") == 0 && v.is_string() && v == "none") ||
                       (std::strcmp(k, "qwen3.rope.dimension_count") == 0 && v.is_number_integer() &&
                        v.get<int64_t>() == t.head_dim);
    if (!inert)
      fail(ErrorKind::kUnsupported, f.name(), ": metadata ", k, " = ", v.dump(), " is not supported (LightOnOCR's "
           "decoder has plain full RoPE over head_dim, full attention and no experts)");
  }
  const io::GgufTensor* emb = f.find("token_embd.weight");
  if (!emb) fail(ErrorKind::kNotFound, f.name(), ": text GGUF is missing tensor 'token_embd.weight'");
  if (emb->ne.size() != 2) fail(ErrorKind::kInvalidArgument, f.name(), ": 'token_embd.weight' is not 2-D");
  if (emb->ne[1] > (1 << 30)) fail(ErrorKind::kInvalidArgument, f.name(), ": 'token_embd.weight' has too many rows");
  t.vocab_size = static_cast<int>(emb->ne[1]);
  t.tie_word_embeddings = f.find("output.weight") == nullptr;

  // Not in GGUF: the image token. LightOnOCR's is <|image_pad|> (151655 in the real vocabulary).
  c.image_token_id = gguf_token_id(f, "<|image_pad|>");
  if (c.image_token_id < 0) {
    c.image_token_id = 151655;
    LOCR_INFO("gguf: ", f.name(), ": no <|image_pad|> in tokenizer.ggml.tokens; image token id ", c.image_token_id,
              " (LightOnOCR's default)");
  }
  // HF's projector RMSNorm uses text_config.rms_norm_eps (llama.cpp uses the clip eps, 1e-5).
  c.projector_norm_eps = t.rms_norm_eps;
  c.projector_hidden_act = "gelu";  // exact erf GELU, as HF (llama.cpp: tanh approximation)
  c.multimodal_projector_bias = false;
  if (!ck.mmproj) return c;

  const io::GgufFile& m = *ck.mmproj;
  VisionConfig& v = c.vision;
  v.hidden_size = gguf_meta_i32(m, "clip.vision.embedding_length", 0, true);
  v.intermediate_size =
      gguf_meta_i32(m, "clip.vision.feed_forward_length", 0, true);
  v.num_hidden_layers = gguf_meta_i32(m, "clip.vision.block_count", 0, true);
  v.num_attention_heads =
      gguf_meta_i32(m, "clip.vision.attention.head_count", 0, true);
  if (v.hidden_size % v.num_attention_heads != 0)
    fail(ErrorKind::kInvalidArgument, m.name(), ": clip.vision.embedding_length ", v.hidden_size,
         " is not a multiple of the head count ", v.num_attention_heads);
  v.head_dim = v.hidden_size / v.num_attention_heads;  // Pixtral: hidden / heads
  v.patch_size = gguf_meta_i32(m, "clip.vision.patch_size", 0, true);
  v.image_size = gguf_meta_i32(m, "clip.vision.image_size", 1540);
  v.norm_eps = static_cast<float>(gguf_meta_float(m, "clip.vision.attention.layer_norm_epsilon", 1e-5));
  v.rope_theta = 10000.0;  // not in the mmproj; Pixtral's (llama.cpp hard-codes it too)
  c.spatial_merge_size = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
  const int64_t proj_dim = gguf_meta_int(m, "clip.vision.projection_dim", t.hidden_size);
  if (proj_dim != t.hidden_size)
    fail(ErrorKind::kInvalidArgument, m.name(), ": clip.vision.projection_dim ", proj_dim,
         " differs from the text model's embedding_length ", t.hidden_size, " (", f.name(),
         "): the mmproj belongs to another model");
  if (gguf_meta_bool(m, "clip.use_gelu", false) || !gguf_meta_bool(m, "clip.use_silu", true))
    fail(ErrorKind::kUnsupported, m.name(), ": the vision MLP activation is not SiLU (clip.use_silu / "
         "clip.use_gelu); LightOnOCR's Pixtral encoder uses SiLU");
  return c;
}

ProcessorConfig gguf_processor_config(const GgufCheckpoint& ck, int align) {
  ProcessorConfig pc;
  if (align != 14 && align != 28) fail(ErrorKind::kInvalidArgument, "--image-align must be 14 or 28, got ", align);
  pc.align = align;
  if (!ck.mmproj) return pc;
  const io::GgufFile& m = *ck.mmproj;
  pc.longest_edge = gguf_meta_i32(m, "clip.vision.image_size", 1540);
  pc.patch_size = gguf_meta_i32(m, "clip.vision.patch_size", 14);
  pc.spatial_merge_size = gguf_meta_i32(m, "clip.vision.spatial_merge_size", 2);
  gguf_mean_std(m, &pc.image_mean, &pc.image_std);
  return pc;
}

GenerationConfig gguf_generation_config(const io::GgufFile& text) {
  GenerationConfig g;
  // LightOnOCR-2's generation_config.json (model-spec: do_sample, temperature 0.2, top_p 0.9,
  // top_k 0, eos [<|im_end|>, <|endoftext|>], bos = pad = <|endoftext|>); GGUF carries none of it.
  g.do_sample = true;
  g.temperature = 0.2f;
  g.top_p = 0.9f;
  g.top_k = 0;
  // The converter copies generation_config's sampling into general.sampling.* when it has them.
  g.temperature = static_cast<float>(gguf_meta_float(text, "general.sampling.temp", g.temperature));
  g.top_p = static_cast<float>(gguf_meta_float(text, "general.sampling.top_p", g.top_p));
  g.top_k = static_cast<int>(gguf_meta_int(text, "general.sampling.top_k", g.top_k));
  g.do_sample = g.temperature > 0;
  const int64_t eos = gguf_meta_int(text, "tokenizer.ggml.eos_token_id", -1);
  if (eos >= 0) g.eos_token_ids.push_back(static_cast<int>(eos));
  const int eot = gguf_token_id(text, "<|endoftext|>");
  if (eot >= 0 && eot != eos) g.eos_token_ids.push_back(eot);
  const int64_t pad = gguf_meta_int(text, "tokenizer.ggml.padding_token_id", eot);
  g.pad_token_id = static_cast<int>(pad);
  g.bos_token_id = static_cast<int>(gguf_meta_int(text, "tokenizer.ggml.bos_token_id", pad));
  return g;
}

DType native_quantized_dtype(uint32_t type, int64_t cols) {
  if (type == static_cast<uint32_t>(io::GgmlType::kQ8_0) && cols % 32 == 0) return DType::kQ8_0;
  if (type == static_cast<uint32_t>(io::GgmlType::kQ4_K) && cols % 256 == 0) return DType::kQ4_K;
  if (type == static_cast<uint32_t>(io::GgmlType::kQ6_K) && cols % 256 == 0) return DType::kQ6_K;
  return DType::kF32;
}

std::vector<int64_t> unpermute_rows(int64_t n_heads, int64_t head_dim) {
  std::vector<int64_t> row_of(static_cast<size_t>(n_heads * head_dim));
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t j = 0; j < half; ++j) row_of[h * head_dim + s * half + j] = h * head_dim + 2 * j + s;
  return row_of;
}

Matrix bind_gguf_matrix(const std::shared_ptr<io::GgufFile>& file, const io::GgufTensor& t, int64_t rows,
                        int64_t cols, DType dequantize_to, const std::vector<int64_t>* row_of, bool keep_quantized) {
  LOCR_CHECK(rows * cols == t.elements, "bind_gguf_matrix: ", t.name, " shape");
  const std::string_view bytes = file->data(t);
  const DType kept = keep_quantized ? native_quantized_dtype(t.type, cols) : DType::kF32;
  if (kept != DType::kF32) {
    // Q8_0 / Q4_K / Q6_K rows are independent runs of blocks: used in place, or rows copied for a permutation.
    Matrix m;
    m.dtype = kept;
    m.rows = rows;
    m.cols = cols;
    const int64_t row_bytes = dtype_row_bytes(kept, cols);
    LOCR_CHECK(static_cast<int64_t>(bytes.size()) == rows * row_bytes, "bind_gguf_matrix: ", t.name, " ",
               dtype_name(kept), " size");
    if (!row_of) {
      m.data = bytes.data();
      m.holder = file;
      return m;
    }
    auto buf = std::make_shared<std::vector<char>>(bytes.size());
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(buf->data() + r * row_bytes, bytes.data() + (*row_of)[r] * row_bytes, static_cast<size_t>(row_bytes));
    io::release_pages(bytes.data(), bytes.size());
    m.data = buf->data();
    m.holder = std::shared_ptr<void>(buf, buf.get());
    return m;
  }
  DType native;
  const bool plain = t.type == static_cast<uint32_t>(io::GgmlType::kF32) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kF16) ||
                     t.type == static_cast<uint32_t>(io::GgmlType::kBF16);
  native = t.type == static_cast<uint32_t>(io::GgmlType::kF32)   ? DType::kF32
           : t.type == static_cast<uint32_t>(io::GgmlType::kF16) ? DType::kF16
                                                                  : DType::kBF16;
  const std::vector<int64_t> shape = rows == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{rows, cols};
  if (plain && !row_of) {
    // Zero-copy: the file's map is the storage.
    return Matrix::from_tensor(Tensor(native, shape, const_cast<char*>(bytes.data()), file));
  }
  const DType out_type = plain ? native : dequantize_to;
  Tensor out = Tensor::empty(out_type, shape);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(rows);
  const size_t out_row = static_cast<size_t>(cols) * dtype_size(out_type);
  std::vector<float> tmp(plain ? 0 : static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t src = row_of ? (*row_of)[r] : r;
    const char* in = bytes.data() + static_cast<size_t>(src) * row_bytes;
    char* dst = static_cast<char*>(out.raw()) + static_cast<size_t>(r) * out_row;
    if (plain) {
      std::memcpy(dst, in, row_bytes);
      continue;
    }
    io::dequantize_row(t.type, in, tmp.data(), cols);
    if (out_type == DType::kF32) {
      std::memcpy(dst, tmp.data(), out_row);
    } else {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst);
      for (int64_t c = 0; c < cols; ++c) d[c] = f32_to_bf16(tmp[c]);
    }
  }
  // The file's pages of this tensor are not read again: hand them back (advisory).
  io::release_pages(bytes.data(), bytes.size());
  return Matrix::from_tensor(out);
}


ModelWeights load_gguf_weights(const GgufCheckpoint& ck, const ModelConfig& cfg, DType dequantize_to,
                               kernels::Ops* pack, bool keep_quantized) {
  if (dequantize_to != DType::kF32 && dequantize_to != DType::kBF16)
    fail(ErrorKind::kInvalidArgument, "quantized GGUF tensors dequantize to F32 or BF16, not ", dtype_name(dequantize_to));
  ModelWeights w;
  const TextConfig& t = cfg.text;
  const int64_t H = t.hidden_size, hd = t.head_dim;
  GgufBinder b(ck.text, "LightOnOCR", dequantize_to, pack, keep_quantized);
  w.text.embed_tokens = b.get("token_embd.weight", {t.vocab_size, H});
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    TextLayerWeights L;
    L.input_layernorm = b.vec(p + "attn_norm.weight", H);
    L.q_proj = b.get(p + "attn_q.weight", {t.num_attention_heads * hd, H});
    L.k_proj = b.get(p + "attn_k.weight", {t.num_key_value_heads * hd, H});
    L.v_proj = b.get(p + "attn_v.weight", {t.num_key_value_heads * hd, H});
    L.o_proj = b.get(p + "attn_output.weight", {H, t.num_attention_heads * hd});
    L.q_norm = b.vec(p + "attn_q_norm.weight", hd);
    L.k_norm = b.vec(p + "attn_k_norm.weight", hd);
    L.post_attention_layernorm = b.vec(p + "ffn_norm.weight", H);
    L.gate_proj = b.get(p + "ffn_gate.weight", {t.intermediate_size, H});
    L.up_proj = b.get(p + "ffn_up.weight", {t.intermediate_size, H});
    L.down_proj = b.get(p + "ffn_down.weight", {H, t.intermediate_size});
    w.text.layers.push_back(std::move(L));
  }
  w.text.norm = b.vec("output_norm.weight", H);
  w.text.lm_head = b.has("output.weight") ? b.get("output.weight", {t.vocab_size, H}) : w.text.embed_tokens;
  b.finish();

  w.has_vision = ck.mmproj != nullptr;
  if (!w.has_vision) return w;
  GgufBinder vb(ck.mmproj, "LightOnOCR", dequantize_to, pack, keep_quantized);
  const VisionConfig& v = cfg.vision;
  const int64_t V = v.hidden_size, p = v.patch_size;
  const int64_t A = static_cast<int64_t>(v.num_attention_heads) * v.head_dim;
  // The converter permuted q/k rows for ggml's interleaved 2-D RoPE; locr rotates halves as HF.
  const std::vector<int64_t> qk_rows = unpermute_rows(v.num_attention_heads, v.head_dim);
  w.vision.patch_conv = vb.get("v.patch_embd.weight", {V, 3 * p * p});
  w.vision.ln_pre = vb.vec("v.pre_ln.weight", V);
  for (int i = 0; i < v.num_hidden_layers; ++i) {
    const std::string lp = "v.blk." + std::to_string(i) + ".";
    VisionLayerWeights L;
    L.attention_norm = vb.vec(lp + "ln1.weight", V);
    L.q_proj = vb.get(lp + "attn_q.weight", {A, V}, &qk_rows);
    L.k_proj = vb.get(lp + "attn_k.weight", {A, V}, &qk_rows);
    L.v_proj = vb.get(lp + "attn_v.weight", {A, V});
    L.o_proj = vb.get(lp + "attn_out.weight", {V, A});
    L.ffn_norm = vb.vec(lp + "ln2.weight", V);
    L.gate_proj = vb.get(lp + "ffn_gate.weight", {v.intermediate_size, V});
    L.up_proj = vb.get(lp + "ffn_up.weight", {v.intermediate_size, V});
    L.down_proj = vb.get(lp + "ffn_down.weight", {V, v.intermediate_size});
    w.vision.layers.push_back(std::move(L));
  }
  const int64_t m2 = static_cast<int64_t>(cfg.spatial_merge_size) * cfg.spatial_merge_size;
  w.projector.norm = vb.vec("mm.input_norm.weight", V);
  w.projector.merging_layer = vb.get("mm.patch_merger.weight", {V, V * m2});
  w.projector.linear_1 = vb.get("mm.1.weight", {H, V});
  w.projector.linear_2 = vb.get("mm.2.weight", {H, H});
  vb.finish();
  return w;
}

}  // namespace locr::model
