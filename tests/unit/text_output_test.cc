// Output processing (runtime/text_output.h): stop strings held back across pieces (StopMatcher),
// and TextOutput over the tiny fixture tokenizer — the text of EOS and stop token ids left out
// unless asked, stop strings across tokens, the end flushing what is held, ids past the tokenizer.
#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "runtime/stop_matcher.h"
#include "runtime/text_output.h"

namespace locr::runtime {
namespace {

// Feeds `pieces` and returns everything released, including the final flush unless matched.
std::string feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    out += m.push(p);
    if (m.matched()) return out;
  }
  return out + m.flush();
}

TEST(StopMatcher, NoStopsPassesThrough) {
  StopMatcher m({}, false);
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, HoldsBackAPossiblePrefixThenReleasesIt) {
  StopMatcher m({"STOP"}, false);
  EXPECT_EQ(m.push("hello ST"), "hello ");
  EXPECT_EQ(m.push("A"), "STA");  // "STA" can no longer become "STOP"
  EXPECT_FALSE(m.matched());
}

TEST(StopMatcher, StopSplitAcrossPiecesNeverLeaks) {
  StopMatcher m({"STOP"}, false);
  std::string out;
  for (const char* p : {"ab", "S", "T", "O", "P", "tail"}) {
    out += m.push(p);
    if (m.matched()) break;
  }
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(out, "ab");
  EXPECT_EQ(m.stop(), "STOP");
  EXPECT_EQ(m.push("more"), "");  // nothing after a match
}

TEST(StopMatcher, IncludeStopString) {
  StopMatcher m({"</s>"}, true);
  EXPECT_EQ(feed(m, {"x</", "s>y"}), "x</s>");
}

TEST(StopMatcher, EarliestStopWinsThenLongest) {
  StopMatcher a({"cd", "bcd"}, false);
  EXPECT_EQ(feed(a, {"abcdef"}), "a");
  EXPECT_EQ(a.stop(), "bcd");
  StopMatcher b({"ab", "abc"}, true);
  EXPECT_EQ(feed(b, {"xabcz"}), "xabc");
}

TEST(StopMatcher, FlushReleasesHeldText) {
  StopMatcher m({"END"}, false);
  EXPECT_EQ(m.push("the E"), "the ");
  EXPECT_EQ(m.flush(), "E");
}

TEST(StopMatcher, Utf8StopStrings) {
  StopMatcher m({"。"}, false);  // 3 bytes
  EXPECT_EQ(feed(m, {"你好", "\xe3\x80", "\x82", "后"}), "你好");
}


const tokenizer::Tokenizer& tiny_tokenizer() {
  static const auto tok = tokenizer::Tokenizer::from_file(std::string(LOCR_FIXTURES_DIR) + "/models/tiny_a/tokenizer.json");
  return *tok;
}

constexpr int32_t kImEnd = 702, kEndOfText = 700;  // tiny_a's EOS ids (special tokens)

DecodeParams eos_params() {
  DecodeParams d;
  d.eos_ids = {kImEnd, kEndOfText};
  return d;
}

std::string run(TextOutput& out, const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size() && !out.stopped(); ++i) s += out.push(ids[i], i + 1 == ids.size());
  return s;
}

TEST(TextOutput, TextOfTheTokensThatEndTheRequestIsLeftOut) {
  const tokenizer::Tokenizer& tok = tiny_tokenizer();
  std::vector<int32_t> ids = tok.encode("ab");
  ids.push_back(kImEnd);
  TextOptions keep_special;
  keep_special.skip_special = false;  // so that the EOS text would show if it were decoded
  TextOutput plain(tok, eos_params(), keep_special);
  EXPECT_EQ(run(plain, ids), "ab");
  // include_stop_str keeps it, as vLLM's include_stop_str_in_output does.
  TextOptions include = keep_special;
  include.include_stop_str = true;
  TextOutput kept(tok, eos_params(), include);
  EXPECT_EQ(run(kept, ids), "ab<|im_end|>");
  // With ignore_eos the EOS does not end the request: its text is output.
  DecodeParams ignore = eos_params();
  ignore.ignore_eos = true;
  TextOutput ignored(tok, ignore, keep_special);
  EXPECT_EQ(run(ignored, ids), "ab<|im_end|>");
  // A stop token id ends it (always honoured): left out as EOS is.
  DecodeParams stop_id = ignore;
  stop_id.stop_token_ids = {ids[1]};
  TextOutput stopped(tok, stop_id, keep_special);
  EXPECT_EQ(run(stopped, {ids[0], ids[1]}), tok.decode({ids[0]}, false));
}

TEST(TextOutput, StopStringAcrossTokensEndsTheOutputAndNothingFollows) {
  const tokenizer::Tokenizer& tok = tiny_tokenizer();
  const std::vector<int32_t> ids = tok.encode("hello world, goodbye world");
  TextOptions o;
  o.stop = {"bye w"};
  TextOutput out(tok, eos_params(), o);
  std::string text;
  size_t used = 0;
  for (; used < ids.size() && !out.stopped(); ++used) {
    const std::string piece = out.push(ids[used]);
    EXPECT_EQ(piece.find("by"), std::string::npos) << "a stop string never leaks, not even partly";
    text += piece;
  }
  ASSERT_TRUE(out.stopped());
  EXPECT_EQ(text, "hello world, good");
  EXPECT_EQ(out.stop_reason(), StopReason::string("bye w"));
  EXPECT_LT(used, ids.size());  // it ended before the last token
  EXPECT_EQ(out.push(ids.back(), true), "");
}

TEST(TextOutput, TheEndFlushesHeldTextAndIncompleteCharacters) {
  const tokenizer::Tokenizer& tok = tiny_tokenizer();
  std::vector<int32_t> ids = tok.encode("ab");
  TextOptions o;
  o.stop = {"b!"};  // "b" may still become "b!": held back until the end
  TextOutput out(tok, eos_params(), o);
  std::string text;
  for (int32_t id : ids) text += out.push(id);
  EXPECT_EQ(text, "a");
  EXPECT_EQ(out.push(-1, /*last=*/true), "b");  // the request ended for another reason
  EXPECT_FALSE(out.stopped());
  // Half a character at the end becomes U+FFFD, as the full decode would give.
  const std::vector<int32_t> han = tok.encode("😀");  // byte-level pieces: tiny_a has no token for it
  ASSERT_GE(han.size(), 2u);
  TextOutput cut(tok, eos_params(), {});
  std::string s = cut.push(han[0]);
  EXPECT_EQ(s, "");
  s += cut.push(-1, true);
  EXPECT_EQ(s, "\xEF\xBF\xBD");
}

TEST(TextOutput, IdsPastTheTokenizerDecodeToNothing) {
  const tokenizer::Tokenizer& tok = tiny_tokenizer();
  TextOutput out(tok, eos_params(), {});
  const std::vector<int32_t> ids = tok.encode("ok");
  std::string s = out.push(ids[0]);
  s += out.push(tok.vocab_size() + 3);  // an embedding row without a token
  for (size_t i = 1; i < ids.size(); ++i) s += out.push(ids[i]);
  EXPECT_EQ(s + out.push(-1, true), "ok");
}

}  // namespace
}  // namespace locr::runtime
