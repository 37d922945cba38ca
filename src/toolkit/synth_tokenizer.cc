#include "toolkit/synth_tokenizer.h"

#include <unordered_set>

#include "core/error.h"

namespace locr::toolkit {

namespace {

using ojson = nlohmann::ordered_json;

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

bool printable_byte(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

// Qwen2 pre-tokenizer regex (the Split step of every Qwen2-family tokenizer.json).
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5's (transformers tokenization_qwen3_5.PRETOKENIZE_REGEX): marks (\p{M}) join letter runs.
const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Common English and chat words, made whole tokens before the systematic merges.
const char* kWords[] = {
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on", "be", "at", "by",
    "this", "from", "or", "an", "are", "not", "have", "has", "but", "which", "you", "your", "they", "we",
    "their", "will", "can", "all", "one", "more", "about", "there", "been", "would", "also", "other",
    "system", "user", "assistant", "Hello", "hello", "how", "what", "future", "AI", "The", "Table", "Page",
    "page", "document", "text", "image", "Date", "Total", "Name", "Invoice", "number", "year", "first",
    "time", "new", "data", "model", "results", "figure", "section", "Chapter", "In", "It", "This", "We",
    "A", "I", "For", "and", "between", "through", "under", "after", "before", "while", "where", "when",
};

}  // namespace

const std::vector<AddedToken>& qwen_added_tokens() {
  static const std::vector<AddedToken> kTokens = {
      {"<|endoftext|>", true},    {"<|im_start|>", true},     {"<|im_end|>", true},     {"<|object_ref_start|>", true},
      {"<|object_ref_end|>", true}, {"<|box_start|>", true},  {"<|box_end|>", true},    {"<|quad_start|>", true},
      {"<|quad_end|>", true},     {"<|vision_start|>", true}, {"<|vision_end|>", true}, {"<|vision_pad|>", true},
      {"<|image_pad|>", true},    {"<|video_pad|>", true},    {"<tool_call>", false},   {"</tool_call>", false},
      {"<|fim_prefix|>", false},  {"<|fim_middle|>", false},  {"<|fim_suffix|>", false}, {"<|fim_pad|>", false},
      {"<|repo_name|>", false},   {"<|file_sep|>", false},    {"<tool_response>", false}, {"</tool_response>", false},
      {"<think>", false},         {"</think>", false},
  };
  return kTokens;
}

const std::vector<AddedToken>& qwen35_added_tokens() {
  static const std::vector<AddedToken> kTokens = [] {
    std::vector<AddedToken> t = qwen_added_tokens();
    for (const char* s : {"<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
                          "<tts_text_bos_single>", "<|audio_pad|>"})
      t.push_back({s, true});
    return t;
  }();
  return kTokens;
}

const char* qwen2_pretokenize_regex() { return kQwen2Regex; }
const char* qwen35_pretokenize_regex() { return kQwen35Regex; }

std::vector<std::string> byte_level_alphabet() {
  std::vector<std::string> out(256);
  int n = 0;
  for (int b = 0; b < 256; ++b) out[b] = printable_byte(b) ? utf8(b) : utf8(256 + n++);
  return out;
}

std::vector<std::string> byte_level_vocab_order() {
  const auto alpha = byte_level_alphabet();
  std::vector<std::string> order;
  for (int b = 0; b < 256; ++b)
    if (printable_byte(b)) order.push_back(alpha[b]);
  for (int b = 0; b < 256; ++b)
    if (!printable_byte(b)) order.push_back(alpha[b]);
  return order;
}

SynthBpe make_synthetic_bpe(int n_regular) {
  if (n_regular < 256) fail(ErrorKind::kInvalidArgument, "a byte-level vocabulary needs at least 256 tokens, got ", n_regular);
  SynthBpe out;
  out.vocab = byte_level_vocab_order();
  std::unordered_set<std::string> have(out.vocab.begin(), out.vocab.end());
  const size_t target = static_cast<size_t>(n_regular);
  auto full = [&] { return out.vocab.size() >= target; };
  auto add = [&](const std::string& a, const std::string& b) -> bool {
    if (full()) return false;
    std::string s = a + b;
    if (have.count(s)) return false;
    have.insert(s);
    out.vocab.push_back(s);
    out.merges.emplace_back(a, b);
    return true;
  };
  const std::string sp = "Ġ", nl = "Ċ", tab = "ĉ";
  // Whitespace runs.
  add(sp, sp);
  add(nl, nl);
  add(tab, tab);
  add(sp + sp, sp + sp);
  add(sp + sp + sp + sp, sp + sp + sp + sp);
  add(".", nl);
  add(",", sp);
  // Whole words, with and without the leading space, built left to right.
  for (const char* w : kWords) {
    for (int prefixed = 1; prefixed >= 0; --prefixed) {
      std::string cur = prefixed ? sp : std::string(1, w[0]);
      for (const char* p = prefixed ? w : w + 1; *p; ++p) {
        add(cur, std::string(1, *p));
        cur += *p;
      }
    }
  }
  // Systematic pieces: level 1 = letters and Ġ+letter, level k+1 = level k + lowercase letter.
  const std::string lower = "etaoinsrhldcumfpgwybvkxjqz";
  std::string upper = lower;
  for (auto& c : upper) c = static_cast<char>(c - 'a' + 'A');
  std::vector<std::string> level;
  for (char c : lower + upper) level.push_back(std::string(1, c));
  for (char c : lower + upper) {
    add(sp, std::string(1, c));
    level.push_back(sp + c);
  }
  while (!full()) {
    std::vector<std::string> next;
    for (const auto& p : level) {
      for (char c : lower) {
        add(p, std::string(1, c));
        if (full()) break;
        next.push_back(p + c);
      }
      if (full()) break;
    }
    level.swap(next);
  }
  return out;
}

std::string tokenizer_json(const SynthBpe& bpe) { return tokenizer_json(bpe, qwen_added_tokens(), kQwen2Regex); }

std::string tokenizer_json(const SynthBpe& bpe, const std::vector<AddedToken>& toks, const std::string& split_regex) {
  ojson j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  ojson added = ojson::array();
  const int base = static_cast<int>(bpe.vocab.size());
  for (size_t i = 0; i < toks.size(); ++i) {
    ojson t;
    t["id"] = base + static_cast<int>(i);
    t["content"] = toks[i].content;
    t["single_word"] = false;
    t["lstrip"] = false;
    t["rstrip"] = false;
    t["normalized"] = false;
    t["special"] = toks[i].special;
    added.push_back(t);
  }
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "NFC"}};
  ojson split = {{"type", "Split"}, {"pattern", {{"Regex", split_regex}}}, {"behavior", "Isolated"}, {"invert", false}};
  ojson bl = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", ojson::array({split, bl})}};
  j["post_processor"] = bl;
  j["decoder"] = bl;
  j["model"] = "@MODEL@";
  // The vocabulary and merges are written by hand: ordered_json objects insert in linear time.
  auto q = [](const std::string& s) { return nlohmann::json(s).dump(); };
  std::string m = "{\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
                  "    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n"
                  "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n"
                  "    \"vocab\": {";
  for (size_t i = 0; i < bpe.vocab.size(); ++i) m += (i ? ",\n      " : "\n      ") + q(bpe.vocab[i]) + ": " + std::to_string(i);
  m += "\n    },\n    \"merges\": [";
  for (size_t i = 0; i < bpe.merges.size(); ++i)
    m += (i ? ",\n      [" : "\n      [") + q(bpe.merges[i].first) + ", " + q(bpe.merges[i].second) + "]";
  m += "\n    ]\n  }";
  std::string s = j.dump(2);
  const size_t at = s.find("\"@MODEL@\"");
  return s.replace(at, 9, m) + "\n";
}

namespace {

// tokenizer_config.json's added_tokens_decoder: each added token at n_regular + its index.
ojson added_tokens_decoder_json(const std::vector<AddedToken>& toks, int n_regular) {
  ojson dec = ojson::object();
  for (size_t i = 0; i < toks.size(); ++i) {
    ojson t;
    t["content"] = toks[i].content;
    t["lstrip"] = false;
    t["normalized"] = false;
    t["rstrip"] = false;
    t["single_word"] = false;
    t["special"] = toks[i].special;
    dec[std::to_string(n_regular + static_cast<int>(i))] = t;
  }
  return dec;
}

}  // namespace

ojson tokenizer_config_json(int n_regular) {
  ojson j;
  j["add_bos_token"] = false;
  j["add_prefix_space"] = false;
  const auto& toks = qwen_added_tokens();
  j["added_tokens_decoder"] = added_tokens_decoder_json(toks, n_regular);
  ojson extra = ojson::array();
  for (size_t i = 1; i < 14; ++i) extra.push_back(toks[i].content);  // <|im_start|> .. <|video_pad|>
  j["additional_special_tokens"] = extra;
  j["bos_token"] = nullptr;
  j["clean_up_tokenization_spaces"] = false;
  j["eos_token"] = "<|im_end|>";
  j["errors"] = "replace";
  j["extra_special_tokens"] = ojson::object();
  j["model_max_length"] = 131072;
  j["pad_token"] = "<|endoftext|>";
  j["processor_class"] = "LightOnOCRProcessor";
  j["split_special_tokens"] = false;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["unk_token"] = nullptr;
  j["image_token"] = "<|image_pad|>";
  j["image_break_token"] = "<|vision_pad|>";
  j["image_end_token"] = "<|vision_end|>";
  return j;
}

ojson qwen35_tokenizer_config_json(int n_regular) {
  ojson j;
  j["add_prefix_space"] = false;
  j["added_tokens_decoder"] = added_tokens_decoder_json(qwen35_added_tokens(), n_regular);
  j["bos_token"] = nullptr;
  j["clean_up_tokenization_spaces"] = false;
  j["eos_token"] = "<|im_end|>";
  j["errors"] = "replace";
  j["model_max_length"] = 262144;
  j["pad_token"] = "<|endoftext|>";
  j["split_special_tokens"] = false;
  j["tokenizer_class"] = "Qwen2Tokenizer";
  j["unk_token"] = nullptr;
  return j;
}

}  // namespace locr::toolkit
