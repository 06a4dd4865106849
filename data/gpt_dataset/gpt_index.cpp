#include "data/gpt_dataset/gpt_index.h"

#include <climits>
#include <numeric>

#include "core/common/error.h"
#include "data/gpt_dataset/numpy_random_state.h"

namespace gptrain {

GPTEpochPlan plan_gpt_epochs(std::span<const int32_t> lengths, SeqRange range, const GPTIndexParams& p) {
  check(p.seq_length > 0, "--seq-length must be positive, got {}", p.seq_length);
  check(range.begin >= 0 && range.begin <= range.end && range.end <= static_cast<int64_t>(lengths.size()),
        "sequence range [{}, {}) is outside the dataset's {} sequences", range.begin, range.end, lengths.size());
  check(range.end <= INT32_MAX, "{} sequences: the document index holds int32 sequence ids (as Megatron's)", range.end);
  GPTEpochPlan plan;
  for (int64_t d = range.begin; d < range.end; ++d) plan.tokens_per_epoch += lengths[d];
  const int64_t T = plan.tokens_per_epoch, S = p.seq_length, X = p.add_extra_token;
  if (!p.num_samples) {
    plan.num_epochs = 1;
  } else {
    int64_t requested = 0;
    check(*p.num_samples >= 0 && !__builtin_mul_overflow(*p.num_samples, S, &requested) &&
              !__builtin_add_overflow(requested, X, &requested),
          "{} samples of {} tokens: more tokens than a 64-bit count holds", *p.num_samples, S);
    // Megatron loops forever here when the split holds no tokens; say what is wrong instead.
    check(T > 0, "a split with {} sequences and 0 tokens was asked for {} samples: give it data (check --split)",
          range.size(), *p.num_samples);
    plan.num_epochs = std::max<int64_t>(1, (requested + T - 1) / T);
  }
  const int64_t E = plan.num_epochs;
  if (E > 1) {
    plan.samples_sans_final_epoch = ((E - 1) * T - X) / S;
    const int64_t from_final = *p.num_samples - plan.samples_sans_final_epoch;
    const int64_t per_epoch = (T - X) / S;
    // Python: int(0.80 * n) on float64.
    plan.separate_final_epoch = from_final < static_cast<int64_t>(0.80 * static_cast<double>(per_epoch));
  }
  check(E * T >= X, "a split of {} tokens is too short for even one sample of {} tokens", T, S + X);
  plan.num_samples = (E * T - X) / S;
  return plan;
}

namespace {

// Split's sequence ids repeated `epochs` times, epoch-major, then shuffled once.
void append_shuffled_epochs(std::vector<int32_t>& out, SeqRange range, int64_t epochs, NumpyRandomState& rng) {
  const size_t start = out.size();
  for (int64_t e = 0; e < epochs; ++e)
    for (int64_t d = range.begin; d < range.end; ++d) out.push_back(static_cast<int32_t>(d));
  rng.shuffle(out.data() + start, static_cast<int64_t>(out.size() - start));
}

std::vector<int64_t> build_sample_index(std::span<const int32_t> lengths, const std::vector<int32_t>& doc_index,
                                        int64_t n, int64_t S, int64_t X) {
  std::vector<int64_t> out(static_cast<size_t>(2 * (n + 1)));
  out[0] = 0;
  out[1] = 0;
  int64_t d = 0, off = 0;
  const int64_t last = static_cast<int64_t>(doc_index.size()) - 1;
  for (int64_t k = 1; k <= n; ++k) {
    int64_t need = S + X;
    while (need != 0) {
      const int64_t len = lengths[doc_index[d]] - off;
      need -= len;
      if (need <= 0) {
        off += need + len - X;  // the window ends inside this sequence; the next starts on its last token
        need = 0;
      } else if (d == last) {
        off = lengths[doc_index[d]] - X;  // only reachable when the last window is padded
        break;
      } else {
        ++d;
        off = 0;
      }
    }
    out[2 * k] = d;
    out[2 * k + 1] = off;
  }
  return out;
}

}  // namespace

GPTIndex build_gpt_index(std::span<const int32_t> lengths, SeqRange range, const GPTIndexParams& p) {
  GPTIndex idx;
  idx.plan = plan_gpt_epochs(lengths, range, p);
  const GPTEpochPlan& plan = idx.plan;
  NumpyRandomState rng(p.seed);

  std::vector<int32_t> doc_index;
  doc_index.reserve(static_cast<size_t>(plan.num_epochs * range.size()));
  if (!plan.separate_final_epoch) {
    append_shuffled_epochs(doc_index, range, plan.num_epochs, rng);
  } else {
    append_shuffled_epochs(doc_index, range, plan.num_epochs - 1, rng);
    append_shuffled_epochs(doc_index, range, 1, rng);
  }

  std::vector<int64_t> sample_index =
      build_sample_index(lengths, doc_index, plan.num_samples, p.seq_length, p.add_extra_token);

  const int64_t n = plan.num_samples;
  std::vector<int64_t> shuffle(static_cast<size_t>(n));
  std::iota(shuffle.begin(), shuffle.end(), int64_t{0});
  const int64_t first = plan.separate_final_epoch ? plan.samples_sans_final_epoch : n;
  rng.shuffle(shuffle.data(), first);
  if (first < n) rng.shuffle(shuffle.data() + first, n - first);

  idx.document_index = ArrayView<int32_t>::owning(std::move(doc_index));
  idx.sample_index = ArrayView<int64_t>::owning(std::move(sample_index));
  idx.shuffle_index = ArrayView<int64_t>::owning(std::move(shuffle));
  return idx;
}

}  // namespace gptrain
