// The model-free drafters (runtime/drafter.h, ngram_drafter.h, text_layer_drafter.h), their
// back-off, and the draft-sim simulation (runtime/draft_sim.h). The n-gram cases are vLLM's
// (tests/v1/spec_decode/test_ngram.py), each expectation worked out by hand in the comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "../common/fixtures.h"
#include "core/error.h"
#include "io/pdf.h"
#include "io/pdf_text.h"
#include "pdf_writer.h"
#include "runtime/draft_sim.h"
#include "runtime/drafter.h"
#include "runtime/ngram_drafter.h"
#include "runtime/suffix_match.h"
#include "runtime/text_layer_drafter.h"

namespace locr::runtime {
namespace {

using Ids = std::vector<int32_t>;

// ---------------------------------------------------------------------- n-gram (vLLM semantics)

TEST(NgramPropose, LongestSuffixFirstOccurrence) {
  // [5, 6] never occurs before the end: nothing.
  EXPECT_EQ(ngram_propose(Ids{1, 2, 3, 4, 1, 2, 3, 5, 6}, 2, 2, 2), Ids{});
  // [2, 3] first occurs at index 1; what follows it from index 3 is 4, 1, 2 (k = 3) or 4, 1 (k = 2).
  const Ids a{1, 2, 3, 4, 1, 2, 3};
  EXPECT_EQ(ngram_propose(a, 2, 2, 3), (Ids{4, 1, 2}));
  EXPECT_EQ(ngram_propose(a, 2, 2, 2), (Ids{4, 1}));
  // [3] first occurs at index 2: 4, 1, 2.
  EXPECT_EQ(ngram_propose(a, 1, 1, 3), (Ids{4, 1, 2}));
  // 4-gram [4, 1, 2, 3] does not recur; the 3-gram [1, 2, 3] does, at index 0: 4, 1.
  EXPECT_EQ(ngram_propose(a, 4, 4, 2), Ids{});
  EXPECT_EQ(ngram_propose(a, 3, 4, 2), (Ids{4, 1}));

  const Ids b{1, 3, 6, 2, 3, 4, 1, 2, 3};
  // [2, 3] at index 3, followed by 4, 1, 2.
  EXPECT_EQ(ngram_propose(b, 2, 2, 3), (Ids{4, 1, 2}));
  // [3] first at index 1 (not index 4): 6, 2 — the first occurrence wins, as in vLLM.
  EXPECT_EQ(ngram_propose(b, 1, 1, 2), (Ids{6, 2}));

  // The 4-gram [1, 2, 3, 4] (at index 4, followed by 1, 2) beats the 3-gram [2, 3, 4] (index 0,
  // followed by 5, 1).
  EXPECT_EQ(ngram_propose(Ids{2, 3, 4, 5, 1, 2, 3, 4, 1, 2, 3, 4}, 3, 4, 2), (Ids{1, 2}));
  // No 4-gram; the 3-gram [2, 3, 4] at index 3 (followed by 1, 2) beats the 2-gram [3, 4] at index 0.
  EXPECT_EQ(ngram_propose(Ids{3, 4, 5, 2, 3, 4, 1, 2, 3, 4}, 2, 4, 2), (Ids{1, 2}));
  // Three earlier [1, 2, 3]: the first, followed by 100, 1.
  EXPECT_EQ(ngram_propose(Ids{1, 2, 3, 100, 1, 2, 3, 200, 1, 2, 3, 300, 1, 2, 3}, 3, 3, 2), (Ids{100, 1}));
}

TEST(NgramPropose, ShortContinuationAndLimits) {
  // vLLM's docstring example: [4, 2, 3] has no earlier match, [2, 3] at index 1 is followed by only
  // three tokens (4, 2, 3), fewer than k = 4.
  EXPECT_EQ(ngram_propose(Ids{1, 2, 3, 4, 2, 3}, 2, 3, 4), (Ids{4, 2, 3}));
  // Overlapping repeats: [7, 7] first occurs at index 0, so the continuation starts at index 2,
  // and only that one token is left.
  EXPECT_EQ(ngram_propose(Ids{7, 7, 7}, 1, 2, 3), (Ids{7}));
  // Context shorter than min_n.
  EXPECT_EQ(ngram_propose(Ids{1}, 2, 3, 4), Ids{});
  EXPECT_EQ(ngram_propose(Ids{}, 1, 3, 4), Ids{});
  // max_model_len: 7 context tokens, limit 8 leaves room for one draft token, 7 for none.
  const Ids a{1, 2, 3, 4, 1, 2, 3};
  EXPECT_EQ(ngram_propose(a, 2, 2, 3, 8), (Ids{4}));
  EXPECT_EQ(ngram_propose(a, 2, 2, 3, 7), Ids{});
  EXPECT_THROW(ngram_propose(a, 0, 2, 3), Error);
  EXPECT_THROW(ngram_propose(a, 3, 2, 3), Error);
}

TEST(NgramDrafter, SearchesPromptThenOutput) {
  NgramOptions o;
  o.num_speculative_tokens = 4;
  o.prompt_lookup_min = 2;
  o.prompt_lookup_max = 2;
  o.backoff.enabled = false;
  NgramDrafter d(Ids{5, 6, 7, 8}, o);
  // Context [5, 6, 7, 8, 5, 6]: [5, 6] at index 0 is followed by 7, 8, 5, 6.
  EXPECT_EQ(d.propose(Ids{5, 6}), (Ids{7, 8, 5, 6}));
  // Context [5, 6, 7, 8, 9, 7]: [9, 7] is new.
  EXPECT_EQ(d.propose(Ids{9, 7}), Ids{});
  EXPECT_EQ(d.name(), "ngram");
}

// ---------------------------------------------------------------------- suffix matching

TEST(SuffixMatch, TieBreaks) {
  // [1, 2] ends at 2, 6 and 10 in the haystack (continuations at indices 2, 6, 10).
  const Ids hay{1, 2, 9, 9, 1, 2, 8, 8, 1, 2, 7, 7};
  const Ids seq{4, 1, 2};
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kEarliest).next, 2u);
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kLatest).next, 10u);
  // Nearest at or after the anchor, else nearest before it.
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kNearest, 5).next, 6u);
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kNearest, 6).next, 6u);
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kNearest, 11).next, 10u);
  EXPECT_EQ(find_suffix_match(hay, seq, 4, MatchPrefer::kNearest, 5).length, 2);
  // The occurrence must leave a token after it: [7] ends the haystack at index 12 too, but only the
  // one ending at 11 counts.
  const SuffixMatch m = find_suffix_match(hay, Ids{7}, 4, MatchPrefer::kLatest);
  EXPECT_EQ(m.length, 1);
  EXPECT_EQ(m.next, 11u);
  EXPECT_EQ(find_suffix_match(hay, Ids{}, 4).length, 0);
}

// ---------------------------------------------------------------------- back-off

TEST(DraftBackoff, StartsShortAndDoublesOnHits) {
  DraftBackoff b(8);  // defaults: first draft 2 tokens
  EXPECT_EQ(b.allow(), 2);
  b.report(2, 1);
  EXPECT_EQ(b.allow(), 4);
  b.report(4, 4);
  EXPECT_EQ(b.allow(), 8);
  b.report(8, 3);
  EXPECT_EQ(b.allow(), 8);  // capped at K
  EXPECT_EQ(DraftBackoff(1).allow(), 1);  // never more than K
  EXPECT_EQ(DraftBackoff(8, BackoffOptions{.start = 0}).allow(), 1);
  EXPECT_EQ(DraftBackoff(8, BackoffOptions{.enabled = false}).allow(), 8);
}

TEST(DraftBackoff, HalvesSkipsAndRecovers) {
  DraftBackoff b(8, BackoffOptions{.max_skip = 16, .start = 8});
  EXPECT_EQ(b.allow(), 8);
  b.report(8, 0);  // miss 1: length 4, no step skipped
  EXPECT_EQ(b.allow(), 4);
  b.report(4, 0);  // miss 2: length 2, 1 step skipped
  EXPECT_EQ(b.allow(), 0);
  EXPECT_EQ(b.allow(), 2);
  b.report(2, 0);  // miss 3: length 1, 3 steps skipped
  for (int i = 0; i < 3; ++i) EXPECT_EQ(b.allow(), 0);
  EXPECT_EQ(b.allow(), 1);
  b.report(1, 1);  // a hit: the streak ends, length doubles
  EXPECT_EQ(b.misses(), 0);
  EXPECT_EQ(b.allow(), 2);
  b.report(2, 1);
  EXPECT_EQ(b.allow(), 4);
  b.report(4, 4);
  EXPECT_EQ(b.allow(), 8);
  b.report(8, 8);
  EXPECT_EQ(b.allow(), 8);  // capped at K
  b.report(0, 0);           // nothing drafted: no change
  EXPECT_EQ(b.allow(), 8);

  DraftBackoff off(8, BackoffOptions{.enabled = false});
  off.report(8, 0);
  off.report(8, 0);
  EXPECT_EQ(off.allow(), 8);
  EXPECT_THROW(DraftBackoff(0), Error);
}

// Proposes K ids that never match (negative) every time it is allowed to.
class AlwaysWrong final : public Drafter {
 public:
  using Drafter::Drafter;
  std::string_view name() const override { return "always-wrong"; }

 protected:
  Ids lookup(std::span<const int32_t>, int max_tokens) override { return Ids(static_cast<size_t>(max_tokens), -1); }
};

TEST(DraftBackoff, CostOfADrafterThatNeverHits) {
  // 1000 target tokens, every draft wrong, K = 8, the defaults: drafts of 2, 1, 1, 1, 1, 1, 1 at
  // steps 1, 2, 4, 8, 16, 32, 64 (skips of 0, 1, 3, 7, 15, 31 steps between), then one 1-token draft
  // every 33 steps (32 skipped): steps 97, 130, ..., 64 + 33 * 28 = 988. So 7 + 28 = 35 drafting
  // steps, 36 draft tokens: 0.036 verified tokens per step, under 3% extra work while a verified
  // token costs less than 0.83 of a step (measured: 0.2 at batch 1, ~0.45 at batch 8).
  Ids target(1000);
  for (size_t i = 0; i < target.size(); ++i) target[i] = static_cast<int32_t>(i);
  AlwaysWrong d(8);
  const DraftSimStats s = simulate_drafting(d, target);
  EXPECT_EQ(s.steps, 1000);
  EXPECT_EQ(s.draft_steps, 35);
  EXPECT_EQ(s.zero_accept_steps, 35);
  EXPECT_EQ(s.drafted, 36);
  EXPECT_EQ(s.accepted, 0);
  EXPECT_LT(s.drafted * 0.83 / s.steps, 0.03);

  // The older defaults (first draft K, at most 16 steps sat out): drafts of 8, 4, 2, 1, 1, 1 at
  // steps 1, 2, 4, 8, 16, 32, then one every 17 steps to 984: 62 drafting steps, 73 tokens.
  AlwaysWrong old(8, BackoffOptions{.max_skip = 16, .start = 8});
  const DraftSimStats o = simulate_drafting(old, target);
  EXPECT_EQ(o.draft_steps, 62);
  EXPECT_EQ(o.drafted, 73);

  AlwaysWrong no_backoff(8, BackoffOptions{.enabled = false});
  const DraftSimStats n = simulate_drafting(no_backoff, target);
  // 8 per step while 8 or more tokens are left (positions 0..992), then 7, 6, ..., 1.
  EXPECT_EQ(n.drafted, 8 * 993 + 7 + 6 + 5 + 4 + 3 + 2 + 1);
}

// ---------------------------------------------------------------------- draft-sim

// Returns scripted drafts in order (no back-off), recording what it was told.
class Scripted final : public Drafter {
 public:
  explicit Scripted(std::deque<Ids> drafts) : Drafter(8, BackoffOptions{.enabled = false}), drafts_(std::move(drafts)) {}
  std::string_view name() const override { return "scripted"; }
  std::vector<size_t> seen_lengths;
  std::vector<std::pair<int, int>> told;

 protected:
  Ids lookup(std::span<const int32_t> output, int) override {
    seen_lengths.push_back(output.size());
    Ids d = drafts_.front();
    drafts_.pop_front();
    return d;
  }
  void on_accepted(int drafted, int accepted) override { told.emplace_back(drafted, accepted); }

 private:
  std::deque<Ids> drafts_;
};

TEST(DraftSim, CountsByHand) {
  const Ids target{10, 11, 12, 13, 14, 15, 16, 17};
  // Step 1 at 0: [10, 11, 99] -> 2 accepted, 3 emitted (10, 11 + bonus 12).
  // Step 2 at 3: no draft -> 1 emitted.
  // Step 3 at 4: [50] -> 0 accepted, 1 emitted.
  // Step 4 at 5: [15, 16, 17, 18] cut to the 3 tokens left -> 3 accepted, 3 emitted; done.
  Scripted d({{10, 11, 99}, {}, {50}, {15, 16, 17, 18}});
  const DraftSimStats s = simulate_drafting(d, target);
  EXPECT_EQ(s.steps, 4);
  EXPECT_EQ(s.target_tokens, 8);
  EXPECT_EQ(s.drafted, 3 + 1 + 3);
  EXPECT_EQ(s.accepted, 2 + 0 + 3);
  EXPECT_EQ(s.draft_steps, 3);
  EXPECT_EQ(s.zero_accept_steps, 1);
  EXPECT_DOUBLE_EQ(s.tokens_per_step(), 2.0);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), 5.0 / 7.0);
  // Cost model: 4 steps + 0.5 * 7 verified tokens = 7.5 step-costs for 8 tokens.
  EXPECT_DOUBLE_EQ(s.speedup(0.5), 8.0 / 7.5);
  EXPECT_EQ(d.seen_lengths, (std::vector<size_t>{0, 3, 4, 5}));
  EXPECT_EQ(d.told, (std::vector<std::pair<int, int>>{{3, 2}, {1, 0}, {3, 3}}));

  DraftSimStats sum = s;
  sum.add(s);
  EXPECT_EQ(sum.steps, 8);
  EXPECT_EQ(sum.accepted, 10);
  EXPECT_EQ(simulate_drafting(d, Ids{}).steps, 0);
}

// ---------------------------------------------------------------------- text-layer drafter

TextLayerOptions tl_options(int k, int max_n, int min_n) {
  TextLayerOptions o;
  o.num_speculative_tokens = k;
  o.max_n = max_n;
  o.min_n = min_n;
  o.backoff.enabled = false;
  return o;
}

TEST(TextLayerDrafter, CorpusEqualToTarget) {
  // Distinct ids, corpus = target, K = 4, min_n = 1. Step 1: empty output, no draft, emits 1.
  // Step 2: [1] matches, drafts 2..5, all accepted, emits 5 (pos 6). Step 3: drafts 7..10 (the 4
  // left), all accepted, emits 4. 3 steps, 8 drafted, 8 accepted.
  const Ids t{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  TextLayerDrafter d(t, tl_options(4, 8, 1));
  const DraftSimStats s = simulate_drafting(d, t);
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.drafted, 8);
  EXPECT_EQ(s.accepted, 8);
  EXPECT_EQ(s.zero_accept_steps, 0);
}

TEST(TextLayerDrafter, FollowsTheCorpusPosition) {
  // [1, 2, 3] occurs twice in the corpus (continuations at 3 and 8).
  const Ids corpus{1, 2, 3, 9, 5, 1, 2, 3, 8, 6};
  TextLayerDrafter d(corpus, tl_options(4, 3, 2));
  // Nothing read yet: the first occurrence.
  EXPECT_EQ(d.propose(Ids{1, 2, 3}), (Ids{9, 5, 1, 2}));
  d.accepted(4, 2);  // 9, 5 accepted: the output has reached corpus index 5
  EXPECT_EQ(d.corpus_position(), 5u);
  // [1, 2, 3] again (max_n 3): the occurrence after index 5 wins; the same 3-gram in the output
  // (at its start) ties, and a tie goes to the corpus.
  EXPECT_EQ(d.propose(Ids{1, 2, 3, 9, 5, 1, 2, 3}), (Ids{8, 6}));
}

TEST(TextLayerDrafter, LooksUpTheOutputToo) {
  // Markup that is not in the corpus: [7, 8] repeats in the output, followed by 9, 7, 8.
  const Ids corpus{100, 101, 102};
  TextLayerDrafter d(corpus, tl_options(4, 8, 2));
  EXPECT_EQ(d.propose(Ids{7, 8, 9, 7, 8}), (Ids{9, 7, 8}));
  TextLayerOptions no_out = tl_options(4, 8, 2);
  no_out.lookup_output = false;
  TextLayerDrafter corpus_only(corpus, no_out);
  EXPECT_EQ(corpus_only.propose(Ids{7, 8, 9, 7, 8}), Ids{});
  // A longer match in the output beats a shorter one in the corpus: the corpus has [8] (then 42),
  // the output has [5, 7, 8] (then 1, 5, 7, 8).
  TextLayerDrafter e(Ids{8, 42}, tl_options(4, 8, 1));
  EXPECT_EQ(e.propose(Ids{5, 7, 8, 1, 5, 7, 8}), (Ids{1, 5, 7, 8}));
  // Below min_n: nothing.
  TextLayerDrafter f(Ids{8, 42}, tl_options(4, 8, 2));
  EXPECT_EQ(f.propose(Ids{3, 8}), Ids{});
  EXPECT_THROW(TextLayerDrafter(corpus, tl_options(4, 1, 2)), Error);
}

TEST(TextLayerDrafter, CorpusLeavesOutSpecialTokens) {
  const tokenizer::Tokenizer& tok = test::qwen_tokenizer();
  const Ids ids = text_layer_corpus(tok, "a<|im_end|>b");
  for (int32_t id : ids) EXPECT_FALSE(tok.is_special(id));
  EXPECT_EQ(tok.decode(ids), "ab");
}

#ifdef LOCR_HAVE_POPPLER

TEST(TextLayerDrafter, DraftsFromAPdfTextLayer) {
  // One line of Helvetica text; the real Qwen tokenizer.
  const std::string res = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>";
  const std::string text = "The quick brown fox jumps over the lazy dog while the cat sleeps.";
  const io::PdfDocument doc =
      io::PdfDocument::open(test::make_pdf({{612, 792, 0, "BT /F1 12 Tf 72 720 Td (" + text + ") Tj ET\n", res}}));
  ASSERT_EQ(io::pdf_page_draft_text(doc, 0), text);
  const tokenizer::Tokenizer& tok = test::qwen_tokenizer();
  const Ids corpus = text_layer_corpus(tok, io::pdf_page_draft_text(doc, 0));
  // Qwen's pre-tokenizer splits before " fox": the corpus is the two halves' tokens end to end.
  const Ids head = tok.encode("The quick brown");
  const Ids tail = tok.encode(" fox jumps over the lazy dog while the cat sleeps.");
  Ids joined = head;
  joined.insert(joined.end(), tail.begin(), tail.end());
  ASSERT_EQ(corpus, joined);
  ASSERT_GE(tail.size(), 8u);

  TextLayerOptions o;  // defaults: K 8, max_n 8, min_n 2, back-off on (first draft 2 tokens)
  EXPECT_EQ(TextLayerDrafter(corpus, o).propose(head), Ids(tail.begin(), tail.begin() + 2));
  TextLayerOptions full = o;
  full.backoff.start = 8;
  EXPECT_EQ(TextLayerDrafter(corpus, full).propose(head), Ids(tail.begin(), tail.begin() + 8));

  // The page's Markdown equal to its text: step 1 (empty output) and step 2 (one token, below
  // min_n 2) draft nothing; from step 3 on each step drafts the next corpus tokens, 2, 4, then K = 8
  // (the back-off's start, doubled by each hit), all accepted, and emits them and one more (the
  // last step what is left).
  TextLayerDrafter sim(corpus, o);
  const DraftSimStats s = simulate_drafting(sim, corpus);
  const int64_t t = static_cast<int64_t>(corpus.size());
  int64_t steps = 2, emitted = 2, accepted = 0;
  for (int64_t len = 2; emitted < t; len = std::min<int64_t>(8, 2 * len), ++steps) {
    const int64_t d = std::min(len, t - emitted);
    accepted += d;
    emitted += std::min(d + 1, t - emitted);
  }
  EXPECT_EQ(s.steps, steps);
  EXPECT_EQ(s.accepted, accepted);
  EXPECT_EQ(s.accepted, s.drafted);
  EXPECT_EQ(s.zero_accept_steps, 0);
}

#endif

}  // namespace
}  // namespace locr::runtime
