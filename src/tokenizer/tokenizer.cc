// Byte-level BPE tokenizer loaded from tokenizer.json; see tokenizer.h. This file reads and
// validates the configuration into TokenizerParts (parts.h; from_gguf.cc fills the
// same from GGUF metadata) and runs the pipeline of `tokenizers`' TokenizerImpl::encode with
// add_special_tokens=false: split on raw added tokens -> normalise each remaining piece (NFC) ->
// split on normalised added tokens -> pre-tokenize (regex splits, byte-level mapping) -> BPE.
// Decoding is the ByteLevel decoder. The pieces live in unicode, added,
// pretokenizer and bpe. Not supported (rejected with an error naming the
// component): other models, normalizers, pre-tokenizers and decoders. Truncation, padding and
// the post-processor are ignored: callers get the bare ids. TokenizerOptions can replace the
// normalizer, pre-tokenizer, decoder and BPE options as transformers does (tokenizer.h).
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "io/file.h"
#include "tokenizer/parts.h"
#include "tokenizer/unicode.h"

namespace locr::tokenizer {

namespace {

using nlohmann::json;

// What the tokenizer needs to know about each id.
struct IdInfo {
  bool known = false;
  bool special = false;       // an added token with special=true
  bool skip_special = false;  // decode(skip_special) drops it: its string is a special token's
  std::string bytes;          // what the ByteLevel decoder makes of its string
};

// ---- JSON access with messages that say where the problem is ----

const json* member(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& where) {
  const json* v = member(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) fail(ErrorKind::kInvalidArgument, where, ".", key, " must be true or false, got ", v->dump());
  return v->get<bool>();
}

std::string get_string(const json& obj, const char* key, const std::string& where) {
  const json* v = member(obj, key);
  if (v == nullptr) fail(ErrorKind::kInvalidArgument, where, " has no \"", key, "\"");
  if (!v->is_string()) fail(ErrorKind::kInvalidArgument, where, ".", key, " must be a string, got ", v->dump());
  return v->get<std::string>();
}

std::string type_of(const json& obj, const std::string& where) {
  if (!obj.is_object()) fail(ErrorKind::kInvalidArgument, where, " must be an object, got ", obj.dump());
  return get_string(obj, "type", where);
}

// Ids beyond this are rejected rather than sizing tables by them.
constexpr int64_t kMaxId = int64_t{1} << 24;

// ---- components ----

// Normalizer: null, NFC, or a Sequence of those. Returns whether NFC is applied.
bool parse_normalizer(const json& n, const std::string& where) {
  if (n.is_null()) return false;
  const std::string type = type_of(n, where);
  if (type == "NFC") return true;
  if (type == "Sequence") {
    const json* list = member(n, "normalizers");
    if (list == nullptr || !list->is_array())
      fail(ErrorKind::kInvalidArgument, where, " (Sequence) needs a \"normalizers\" array");
    bool nfc = false;
    for (size_t i = 0; i < list->size(); ++i) nfc = parse_normalizer((*list)[i], str(where, ".normalizers[", i, "]")) || nfc;
    return nfc;
  }
  fail(ErrorKind::kUnsupported, where, ": normalizer type \"", type,
       "\" is not supported (supported: NFC, a Sequence of NFC, or null)");
}

void parse_pre_tokenizer(const json& p, const std::string& where, std::vector<PreTokenizerStep>* steps) {
  const std::string type = type_of(p, where);
  if (type == "Sequence") {
    const json* list = member(p, "pretokenizers");
    if (list == nullptr || !list->is_array())
      fail(ErrorKind::kInvalidArgument, where, " (Sequence) needs a \"pretokenizers\" array");
    for (size_t i = 0; i < list->size(); ++i) parse_pre_tokenizer((*list)[i], str(where, ".pretokenizers[", i, "]"), steps);
    return;
  }
  PreTokenizerStep step;
  if (type == "Split") {
    const json* pattern = member(p, "pattern");
    if (pattern == nullptr || !pattern->is_object())
      fail(ErrorKind::kInvalidArgument, where, " (Split) needs a \"pattern\" object");
    if (!pattern->contains("Regex"))
      fail(ErrorKind::kUnsupported, where, " (Split): only {\"Regex\": ...} patterns are supported, got ", pattern->dump());
    const std::string regex = get_string(*pattern, "Regex", where + ".pattern");
    auto known = split_regex_from_pattern(regex);
    if (!known)
      fail(ErrorKind::kUnsupported, where, " (Split): regex ", json(regex).dump(),
           " is not supported; supported are the Qwen2 regex ", json(split_regex_pattern(SplitRegex::kQwen2)).dump(),
           ", its \\p{N}{1,3} variant, the Qwen3.5 regex (the same with [\\p{L}\\p{M}]+ letter runs) and the GPT-2 regex");
    const std::string behavior = member(p, "behavior") ? get_string(p, "behavior", where) : "Isolated";
    if (behavior != "Isolated")
      fail(ErrorKind::kUnsupported, where, " (Split): behavior \"", behavior, "\" is not supported (only Isolated)");
    if (get_bool(p, "invert", false, where))
      fail(ErrorKind::kUnsupported, where, " (Split): invert=true is not supported");
    step.regex = *known;
  } else if (type == "ByteLevel") {
    step.byte_level = true;
    step.add_prefix_space = get_bool(p, "add_prefix_space", true, where);
    step.use_regex = get_bool(p, "use_regex", true, where);
  } else {
    fail(ErrorKind::kUnsupported, where, ": pre_tokenizer type \"", type,
         "\" is not supported (supported: Split with a known regex, ByteLevel, Sequence of those)");
  }
  steps->push_back(step);
}

void parse_decoder(const json& d, const std::string& where) {
  if (d.is_null())
    fail(ErrorKind::kUnsupported, where, " is null; only the ByteLevel decoder is supported");
  const std::string type = type_of(d, where);
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json* list = member(d, "decoders");
    if (list != nullptr && list->is_array() && list->size() == 1) return parse_decoder((*list)[0], where + ".decoders[0]");
  }
  fail(ErrorKind::kUnsupported, where, ": decoder ", d.dump().substr(0, 200),
       " is not supported (only ByteLevel)");
}

std::vector<std::pair<std::string, std::string>> parse_merges(const json& merges, const std::string& where) {
  if (!merges.is_array()) fail(ErrorKind::kInvalidArgument, where, " must be an array");
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const json& m = merges[i];
    if (m.is_string()) {
      // Legacy "a b" form, as in merges.txt (whose "#version" lines do not count).
      const std::string& s = m.get_ref<const std::string&>();
      if (s.rfind("#version", 0) == 0) continue;
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        fail(ErrorKind::kInvalidArgument, where, "[", i, "] ", m.dump(), " is not of the form \"left right\"");
      out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      fail(ErrorKind::kInvalidArgument, where, "[", i, "] ", m.dump().substr(0, 200),
           " is neither \"left right\" nor [\"left\", \"right\"]");
    }
  }
  return out;
}

// `read_options`: whether the file's BPE options (unk token, ignore_merges, byte fallback...) are
// read and checked; a pipeline override builds the model with the defaults instead.
std::unique_ptr<BpeModel> parse_model(const json& root, const std::string& src, bool read_options) {
  const json* model = member(root, "model");
  if (model == nullptr || !model->is_object()) fail(ErrorKind::kInvalidArgument, src, ": missing \"model\" object");
  const std::string where = src + ": model";
  if (const json* type = member(*model, "type")) {
    if (!type->is_string() || type->get<std::string>() != "BPE")
      fail(ErrorKind::kUnsupported, where, ": model type ", type->dump(), " is not supported (only BPE)");
  } else if (!model->contains("merges")) {
    fail(ErrorKind::kUnsupported, where, " has no \"type\" and no merges; only BPE models are supported");
  }
  const json* vocab = member(*model, "vocab");
  if (vocab == nullptr || !vocab->is_object())
    fail(ErrorKind::kInvalidArgument, where, ".vocab is missing or not an object of token -> id");
  const json* merges = member(*model, "merges");
  if (merges == nullptr) fail(ErrorKind::kInvalidArgument, where, ".merges is missing");

  if (read_options) {
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (const json* v = member(*model, key); v != nullptr && !(v->is_string() && v->get<std::string>().empty()))
        fail(ErrorKind::kUnsupported, where, ".", key, " = ", v->dump(), " is not supported (byte-level BPE uses none)");
    }
    if (get_bool(*model, "byte_fallback", false, where))
      fail(ErrorKind::kUnsupported, where, ".byte_fallback = true is not supported (byte-level BPE never needs it)");
    if (const json* d = member(*model, "dropout"); d != nullptr && !(d->is_number() && d->get<double>() == 0.0))
      fail(ErrorKind::kUnsupported, where, ".dropout = ", d->dump(), " is not supported (inference is deterministic)");
  }

  TokenMap tokens;
  tokens.reserve(vocab->size());
  std::vector<bool> seen;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() >= kMaxId)
      fail(ErrorKind::kInvalidArgument, where, ".vocab[", json(it.key()).dump(), "] must be a non-negative id, got ",
           it.value().dump());
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    if (static_cast<size_t>(id) >= seen.size()) seen.resize(static_cast<size_t>(id) + 1);
    if (seen[id]) fail(ErrorKind::kInvalidArgument, where, ".vocab: id ", id, " is used by more than one token");
    seen[id] = true;
    tokens.emplace(it.key(), id);
  }
  BpeOptions options;
  if (read_options) {
    options.ignore_merges = get_bool(*model, "ignore_merges", false, where);
    options.fuse_unk = get_bool(*model, "fuse_unk", false, where);
    if (member(*model, "unk_token")) options.unk_token = get_string(*model, "unk_token", where);
  }
  return std::make_unique<BpeModel>(std::move(tokens), parse_merges(*merges, where + ".merges"), std::move(options),
                                    where);
}

// Registers added tokens the way `tokenizers` does on load (AddedVocabulary::add_tokens): the
// ids written in the file are not trusted; a token already in the vocabulary keeps that id,
// others are numbered from the vocabulary size on. A repeated content takes the later properties.
std::vector<AddedToken> parse_added_tokens(const json& root, const BpeModel& bpe, const std::string& src) {
  std::unordered_map<int32_t, AddedToken> added;  // by id
  std::vector<int32_t> order;
  std::unordered_map<std::string, int32_t> by_content;
  int32_t next_id = static_cast<int32_t>(bpe.vocab().size());
  const json* list = member(root, "added_tokens");
  if (list != nullptr && !list->is_array()) fail(ErrorKind::kInvalidArgument, src, ": added_tokens must be an array");
  for (size_t i = 0; list != nullptr && i < list->size(); ++i) {
    const json& t = (*list)[i];
    const std::string where = str(src, ": added_tokens[", i, "]");
    if (!t.is_object()) fail(ErrorKind::kInvalidArgument, where, " must be an object");
    AddedToken tok;
    tok.content = get_string(t, "content", where);
    tok.special = get_bool(t, "special", false, where);
    tok.single_word = get_bool(t, "single_word", false, where);
    tok.lstrip = get_bool(t, "lstrip", false, where);
    tok.rstrip = get_bool(t, "rstrip", false, where);
    tok.normalized = get_bool(t, "normalized", !tok.special, where);
    if (tok.content.empty()) continue;
    if (const size_t bad = unicode::find_invalid_utf8(tok.content); bad != std::string::npos)
      fail(ErrorKind::kInvalidArgument, where, ".content is not valid UTF-8");
    if (auto it = by_content.find(tok.content); it != by_content.end()) {
      tok.id = it->second;
    } else if (auto v = bpe.vocab().find(tok.content); v != bpe.vocab().end()) {
      tok.id = v->second;
    } else {
      tok.id = next_id++;
    }
    if (const json* id = member(t, "id"); id != nullptr && (!id->is_number_integer() || id->get<int64_t>() != tok.id))
      LOCR_WARN(where, ": \"", tok.content, "\" declares id ", id->dump(), " but gets id ", tok.id,
                " (as the tokenizers library assigns it)");
    by_content[tok.content] = tok.id;
    if (!added.count(tok.id)) order.push_back(tok.id);
    added[tok.id] = tok;
  }
  std::vector<AddedToken> out;
  out.reserve(order.size());
  for (int32_t id : order) out.push_back(added[id]);
  return out;
}

TokenizerParts parse_tokenizer_json(const std::string& text, const std::string& src, const TokenizerOptions& options) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(ErrorKind::kInvalidArgument, src, " is not valid JSON: ", e.what());
  }
  if (!root.is_object()) fail(ErrorKind::kInvalidArgument, src, " must hold a JSON object");

  TokenizerParts parts;
  const bool overridden = overrides_pipeline(options);
  parts.bpe = parse_model(root, src, /*read_options=*/!overridden);
  if (overridden) {
    // As transformers' tokenizer classes that rebuild the pipeline in code: the file's
    // normalizer, pre_tokenizer and decoder are not looked at.
    apply_pipeline_override(options, &parts);
  } else {
    parts.nfc = parse_normalizer(root.value("normalizer", json()), src + ": normalizer");
    const json pre = root.value("pre_tokenizer", json());
    if (pre.is_null())
      fail(ErrorKind::kUnsupported, src, ": pre_tokenizer is null; a ByteLevel pre-tokenizer is required");
    parse_pre_tokenizer(pre, src + ": pre_tokenizer", &parts.steps);
    const auto n_byte_level =
        std::count_if(parts.steps.begin(), parts.steps.end(), [](const auto& s) { return s.byte_level; });
    if (n_byte_level != 1 || !parts.steps.back().byte_level)
      fail(ErrorKind::kUnsupported, src, ": pre_tokenizer must end with exactly one ByteLevel (got ", pre.dump().substr(0, 300), ")");
    parse_decoder(root.value("decoder", json()), src + ": decoder");
  }
  parts.added = parse_added_tokens(root, *parts.bpe, src);
  return parts;
}

// ---- the tokenizer ----

class BpeTokenizer final : public Tokenizer {
 public:
  explicit BpeTokenizer(TokenizerParts parts)
      : bpe_(std::move(parts.bpe)), nfc_(parts.nfc), steps_(std::move(parts.steps)) {
    build_ids(parts.added);
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    if (const size_t bad = unicode::find_invalid_utf8(text); bad != std::string_view::npos)
      fail(ErrorKind::kInvalidArgument, "text to tokenize is not valid UTF-8 (bad byte 0x", std::hex,
           static_cast<int>(static_cast<unsigned char>(text[bad])), std::dec, " at offset ", bad, ")");
    std::vector<int32_t> ids;
    std::vector<TextSegment> raw_segments, segments;
    raw_tokens_.split(text, &raw_segments);
    for (const TextSegment& raw : raw_segments) {
      if (raw.id >= 0) {
        ids.push_back(raw.id);
        continue;
      }
      const std::string_view piece = text.substr(raw.begin, raw.end - raw.begin);
      if (piece.empty()) continue;
      const std::string normalized = nfc_ ? unicode::nfc(piece) : std::string(piece);
      segments.clear();
      normalized_tokens_.split(normalized, &segments);
      for (const TextSegment& seg : segments) {
        if (seg.id >= 0) ids.push_back(seg.id);
        else encode_piece(std::string_view(normalized).substr(seg.begin, seg.end - seg.begin), &ids);
      }
    }
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override {
    std::string bytes;
    for (int32_t id : ids) {
      if (!has_id(id)) continue;  // no token: an empty piece, as in `tokenizers`
      const IdInfo& info = ids_[id];
      if (skip_special && info.skip_special) continue;
      bytes += info.bytes;
    }
    return unicode::utf8_lossy(bytes);
  }

  std::string token_bytes(int32_t id) const override { return has_id(id) ? ids_[id].bytes : std::string(); }

  bool has_id(int32_t id) const override { return id >= 0 && id < vocab_size() && ids_[id].known; }

  bool is_special(int32_t id) const override {
    return id >= 0 && id < vocab_size() && ids_[id].special;
  }

  int32_t token_to_id(std::string_view token) const override {
    if (auto it = added_by_content_.find(token); it != added_by_content_.end()) return it->second;
    if (auto it = bpe_->vocab().find(token); it != bpe_->vocab().end()) return it->second;
    return -1;
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(ids_.size()); }

 private:
  // Pre-tokenizes one normalised piece and BPE-encodes its words.
  void encode_piece(std::string_view piece, std::vector<int32_t>* ids) const {
    if (piece.empty()) return;
    std::vector<std::string_view> words{piece}, next;
    std::deque<std::string> prefixed;  // words given a leading space (stable addresses)
    std::vector<size_t> ends;
    for (const PreTokenizerStep& step : steps_) {
      next.clear();
      for (std::string_view w : words) {
        if (step.byte_level && step.add_prefix_space && w.front() != ' ') {
          prefixed.push_back(" " + std::string(w));
          w = prefixed.back();
        }
        if (step.byte_level && !step.use_regex) {
          next.push_back(w);
          continue;
        }
        ends.clear();
        split_with_regex(step.regex, w, &ends);
        size_t begin = 0;
        for (size_t end : ends) {
          next.push_back(w.substr(begin, end - begin));
          begin = end;
        }
      }
      words.swap(next);
    }
    for (std::string_view w : words) bpe_->encode_word(w, ids);
  }

  // Fills the per-id table and the added-token splitters.
  void build_ids(const std::vector<AddedToken>& added) {
    int32_t size = 0;
    for (const auto& [token, id] : bpe_->vocab()) size = std::max(size, id + 1);
    for (const AddedToken& tok : added) size = std::max(size, tok.id + 1);
    ids_.assign(static_cast<size_t>(size), IdInfo{});

    std::unordered_map<std::string, bool> special_contents;
    for (const AddedToken& tok : added)
      if (tok.special) special_contents[tok.content] = true;
    auto set_info = [&](int32_t id, const std::string& token_string) {
      IdInfo& info = ids_[id];
      info.known = true;
      info.bytes = byte_level_decode(token_string);
      info.skip_special = special_contents.count(token_string) > 0;
    };
    for (const auto& [token, id] : bpe_->vocab()) set_info(id, token);
    for (const AddedToken& tok : added) {
      // A normalised token is matched, and decoded, in its normalised form.
      std::string form = tok.normalized && nfc_ ? unicode::nfc(tok.content) : tok.content;
      set_info(tok.id, form);
      ids_[tok.id].special = tok.special;
      (tok.normalized ? normalized_tokens_ : raw_tokens_).add(tok, form);
      added_by_content_[tok.content] = tok.id;
    }
  }

  std::unique_ptr<BpeModel> bpe_;
  bool nfc_ = false;
  std::vector<PreTokenizerStep> steps_;
  AddedTokenSplitter raw_tokens_;         // added tokens with normalized=false
  AddedTokenSplitter normalized_tokens_;  // added tokens with normalized=true
  TokenMap added_by_content_;
  std::vector<IdInfo> ids_;
};

}  // namespace

namespace {

std::vector<PreTokenizerStep> split_then_byte_level(SplitRegex regex) {
  PreTokenizerStep split;
  split.regex = regex;
  PreTokenizerStep byte_level;
  byte_level.byte_level = true;  // add_prefix_space=false, use_regex=false
  return {split, byte_level};
}

}  // namespace

std::vector<PreTokenizerStep> qwen2_pre_tokenizer() { return split_then_byte_level(SplitRegex::kQwen2); }

std::vector<PreTokenizerStep> qwen35_pre_tokenizer() { return split_then_byte_level(SplitRegex::kQwen35); }

bool overrides_pipeline(const TokenizerOptions& options) {
  return options.pre_tokenizer != PreTokenizerOverride::kNone;
}

void apply_pipeline_override(const TokenizerOptions& options, TokenizerParts* parts) {
  switch (options.pre_tokenizer) {
    case PreTokenizerOverride::kNone:
      return;
    case PreTokenizerOverride::kQwen35:
      parts->nfc = true;
      parts->steps = qwen35_pre_tokenizer();
      return;
  }
}

TokenizerOptions TokenizerOptions::for_model_type(std::string_view model_type) {
  TokenizerOptions options;
  if (model_type == "qwen3_5" || model_type == "qwen3_5_moe" || model_type == "qwen3_5_moe_text")
    options.pre_tokenizer = PreTokenizerOverride::kQwen35;
  return options;
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(TokenizerParts parts) {
  return std::make_unique<BpeTokenizer>(std::move(parts));
}

std::unique_ptr<Tokenizer> Tokenizer::from_json(const std::string& tokenizer_json, const TokenizerOptions& options) {
  return make_bpe_tokenizer(parse_tokenizer_json(tokenizer_json, "tokenizer.json", options));
}

std::unique_ptr<Tokenizer> Tokenizer::from_file(const std::string& path, const TokenizerOptions& options) {
  return make_bpe_tokenizer(parse_tokenizer_json(io::read_file(path), path, options));
}

}  // namespace locr::tokenizer
