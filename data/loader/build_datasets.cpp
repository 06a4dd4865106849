// build_gpt_datasets: Megatron's BlendedMegatronDatasetBuilder (docs/megatron-compat.md §2.2, §2.5, §2.7).
#include <chrono>
#include <filesystem>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "core/common/error.h"
#include "core/common/log.h"
#include "data/blend/blend.h"
#include "data/blend/blended_dataset.h"
#include "data/gpt_dataset/gpt_dataset.h"
#include "data/gpt_dataset/index_cache.h"
#include "data/gpt_dataset/index_memory.h"
#include "data/gpt_dataset/indexed_token_source.h"
#include "data/gpt_dataset/npy_file.h"
#include "data/loader/gpt_data.h"

namespace gptrain {

namespace {

using ordered_json = nlohmann::ordered_json;
constexpr const char* kFormat = "gptrain-index-1";

template <typename T>
ArrayView<T> view_of(const NpyArray& a) {
  ArrayView<T> v;
  v.keep = a.file;
  v.ptr = static_cast<const T*>(a.data);
  v.n = a.num_elements();
  return v;
}

// What --dry-run gets instead of a dataset: the size the index would have, without building it.
class PlannedDataset : public SampleDataset {
 public:
  PlannedDataset(int64_t size, int64_t seq_length, std::string name)
      : size_(size), seq_length_(seq_length), name_(std::move(name)) {}
  int64_t size() const override { return size_; }
  int64_t seq_length() const override { return seq_length_; }
  void read_sample(int64_t, std::span<int32_t>) const override {
    fail("{}: a planned dataset has no samples (its index was not built)", name_);
  }
  std::string describe() const override { return name_; }

 private:
  int64_t size_, seq_length_;
  std::string name_;
};

// build: indices built (or mapped from the cache) and, with write_cache, saved; plan: sources opened and
// checked, blends and splits resolved, sample counts planned, no index built or written.
enum class BuildMode { build, write_cache, plan };

// Builds an index whose memory passed check_index_memory; an allocation that fails all the same (memory taken
// meanwhile, a limit not seen) is an Error naming the index and the flags, not a bare bad_alloc.
template <class Build>
std::invoke_result_t<Build> building_index(const std::string& what, uint64_t bytes, int k, Build&& build) {
  try {
    return build();
  } catch (const std::bad_alloc&) {
    fail(
        "{}: out of host memory building its sample index of {}; ask for fewer samples ({}) or give the split "
        "more data",
        what, describe_bytes(bytes), index_shrink_flags(k));
  }
}

class Builder {
 public:
  Builder(const DataArgs& a, int64_t seq_length, uint32_t seed, BuildMode mode)
      : a_(a),
        seq_length_(seq_length),
        seed_(seed),
        write_cache_(mode == BuildMode::write_cache),
        plan_only_(mode == BuildMode::plan) {}

  std::shared_ptr<const TokenSource> source(const std::string& prefix) {
    auto it = sources_.find(prefix);
    if (it != sources_.end()) return it->second;
    auto s = open_token_source(prefix);
    sources_[prefix] = s;
    return s;
  }

  std::string cache_dir(const std::string& prefix) const {
    if (a_.data_cache_path) return *a_.data_cache_path;
    return (std::filesystem::path(prefix) / "cache" / "GPTDataset_indices").string();
  }

  std::shared_ptr<const SampleDataset> gpt(const std::string& prefix, int k, SeqRange range, std::optional<int64_t> n,
                                           const std::string& split_desc) {
    auto src = source(prefix);
    const auto lengths = src->sequence_lengths();
    GPTIndexParams p;
    p.seq_length = seq_length_;
    p.num_samples = n;
    p.seed = seed_;
    GPTEpochPlan plan;
    try {
      plan = plan_gpt_epochs(lengths, range, p);
    } catch (const Error& e) {
      fail("{} ({} split): {}", prefix, split_name(k), e.what());
    }
    const std::string what = fmt::format("GPTDataset {} {}", prefix, split_name(k));
    const uint64_t bytes = gpt_index_bytes(plan, range);
    if (plan_only_) {
      log::info("GPTDataset {} {}: sequences [{}, {}), {} tokens/epoch, {} epochs, {} samples, index {} (planned)",
                prefix, split_name(k), range.begin, range.end, plan.tokens_per_epoch, plan.num_epochs, plan.num_samples,
                describe_bytes(bytes));
      planned_bytes_ = add_saturating(planned_bytes_, bytes);
      warn_index_memory(planned_bytes_);
      return std::make_shared<PlannedDataset>(plan.num_samples, seq_length_,
                                              fmt::format("GPTDataset {} {}", prefix, split_name(k)));
    }

    ordered_json d;
    d["class"] = "GPTDataset";
    d["format"] = kFormat;
    d["dataset_path"] = prefix;
    d["num_samples"] = n ? ordered_json(*n) : ordered_json(nullptr);
    d["index_split"] = split_name(k);
    d["random_seed"] = seed_;
    d["sequence_length"] = seq_length_;
    d["add_extra_token"] = p.add_extra_token;
    d["split"] = split_desc;
    d["sequence_range"] = {range.begin, range.end};
    d["num_sequences"] = lengths.size();
    d["sequence_lengths_checksum"] = fmt::format("{:016x}", checksum64(lengths.data(), lengths.size_bytes()));
    const std::string desc = d.dump(4);
    IndexCache cache(cache_dir(prefix), desc, "GPTDataset", split_name(k));

    if (auto hit = cache.load({"document_index", "sample_index", "shuffle_index"})) {
      try {
        GPTIndex idx = index_from_cache(*hit, plan, range, lengths.size());
        idx.from_cache = true;
        log::info("GPTDataset {} {}: {} samples, index mapped from {}", prefix, split_name(k), plan.num_samples,
                  cache.path("*"));
        return std::make_shared<GPTDataset>(src, static_cast<SplitKind>(k), range, p, std::move(idx));
      } catch (const Error& e) {
        log::warn("index cache {} is inconsistent ({}); rebuilding", cache.path("*"), e.what());
      }
    }
    // The indices built before this one already hold their memory, so this one is checked alone.
    check_index_memory(what, bytes, available_memory(), index_shrink_flags(k));
    const auto t0 = std::chrono::steady_clock::now();
    GPTIndex idx = building_index(what, bytes, k, [&] { return build_gpt_index(lengths, range, p); });
    log::info("GPTDataset {} {}: sequences [{}, {}), {} tokens/epoch, {} epochs{}, {} samples; index built in {:.3f} s",
              prefix, split_name(k), range.begin, range.end, plan.tokens_per_epoch, plan.num_epochs,
              plan.separate_final_epoch ? " (last one shuffled separately)" : "", plan.num_samples,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (write_cache_) {
      const int64_t nn = idx.plan.num_samples;
      cache.save({{"document_index", "<i4", {idx.document_index.size()}, idx.document_index.ptr, 4},
                  {"sample_index", "<i8", {nn + 1, 2}, idx.sample_index.ptr, 8},
                  {"shuffle_index", "<i8", {nn}, idx.shuffle_index.ptr, 8}});
    }
    return std::make_shared<GPTDataset>(src, static_cast<SplitKind>(k), range, p, std::move(idx));
  }

  // weights: normalized blend weights with a size, or nullopt to weigh by dataset lengths.
  std::shared_ptr<const SampleDataset> blended(const std::vector<std::shared_ptr<const SampleDataset>>& mids,
                                               std::optional<std::vector<double>> weights, std::optional<int64_t> size,
                                               int k) {
    ordered_json d;
    d["class"] = "BlendedDataset";
    d["format"] = kFormat;
    ordered_json ds = ordered_json::array();
    for (const auto& m : mids) ds.push_back(m->describe());
    d["datasets"] = ds;
    d["split"] = split_name(k);
    if (!weights) {
      std::vector<double> lens;
      for (const auto& m : mids) lens.push_back(static_cast<double>(m->size()));
      d["weights"] = lens;
      if (size) {
        int64_t total = 0;
        for (const auto& m : mids) total += m->size();
        size = std::min(*size, total);
        weights = normalize_weights(lens);
      }
    } else {
      weights = normalize_weights(*weights);  // BlendedDataset normalizes once more, as Megatron does
      d["weights"] = *weights;
    }
    d["size"] = size ? ordered_json(*size) : ordered_json(nullptr);
    const std::string desc = d.dump(4);
    const std::string name = fmt::format("{} blend of {} datasets", split_name(k), mids.size());
    int64_t total = 0;
    for (const auto& m : mids) total += m->size();
    const uint64_t bytes = blend_index_bytes(size.value_or(total));
    if (plan_only_) {
      log::info("{}: {} samples, index {} (planned)", name, size.value_or(total), describe_bytes(bytes));
      planned_bytes_ = add_saturating(planned_bytes_, bytes);
      warn_index_memory(planned_bytes_);
      return std::make_shared<PlannedDataset>(size.value_or(total), seq_length_, name);
    }

    std::optional<IndexCache> cache;
    if (a_.data_cache_path) cache.emplace(*a_.data_cache_path, desc, "BlendedDataset", split_name(k));
    if (cache) {
      if (auto hit = cache->load({"dataset_index", "dataset_sample_index"})) {
        const NpyArray& di = hit->at("dataset_index");
        const NpyArray& si = hit->at("dataset_sample_index");
        if (di.descr == "<i2" && si.descr == "<i8" && di.shape.size() == 1 && si.shape == di.shape &&
            (!size || di.shape[0] == *size)) {
          return std::make_shared<BlendedDataset>(mids, view_of<int16_t>(di), view_of<int64_t>(si), name);
        }
        log::warn("blend cache {} has unexpected arrays; rebuilding", cache->path("*"));
      }
    }
    check_index_memory(name, bytes, available_memory(), index_shrink_flags(k));
    BlendingIndex b = building_index(name, bytes, k, [&] {
      if (size) return build_blending_index(*weights, *size);
      std::vector<int64_t> sizes;
      for (const auto& m : mids) sizes.push_back(m->size());
      return build_exhaustive_blending_index(sizes);
    });
    if (cache && write_cache_) {
      const int64_t n = static_cast<int64_t>(b.dataset_index.size());
      cache->save({{"dataset_index", "<i2", {n}, b.dataset_index.data(), 2},
                   {"dataset_sample_index", "<i8", {n}, b.dataset_sample_index.data(), 8}});
    }
    return std::make_shared<BlendedDataset>(mids, ArrayView<int16_t>::owning(std::move(b.dataset_index)),
                                            ArrayView<int64_t>::owning(std::move(b.dataset_sample_index)), name);
  }

  // One split of one blend (Megatron's cases 2, 3a, 3c, 3d). ranges(prefix) gives the split's range.
  std::shared_ptr<const SampleDataset> blend_split(const BlendSpec& spec, int k, std::optional<int64_t> size,
                                                   const std::function<SeqRange(const std::string&)>& range_of,
                                                   const std::string& split_desc, const std::string& flag) {
    if (spec.prefixes.size() == 1 && !spec.weights) {
      const SeqRange r = range_of(spec.prefixes[0]);
      if (size && *size == 0 && r.size() == 0) {
        // Nothing asked of an empty split (e.g. --eval-iters 0 on a small file): no dataset, not an error.
        log::warn("{} split of {} is empty (no sequences); nothing was asked of it, so it is left out", split_name(k),
                  spec.prefixes[0]);
        return nullptr;
      }
      return gpt(spec.prefixes[0], k, r, size, split_desc);
    }
    std::vector<std::shared_ptr<const SampleDataset>> mids;
    if (spec.weights) {
      check(size.has_value(),
            "{} with weights needs a sample count for the {} split (Megatron: \"Using "
            "client-specified weights requires client-specified size\")",
            flag, split_name(k));
      const auto w = normalize_weights(*spec.weights);
      const auto target = samples_per_dataset(w, *size, 0.0);
      const auto buffer = samples_per_dataset(w, *size, a_.mid_level_dataset_surplus);
      int64_t total = 0;
      for (size_t d = 0; d < spec.prefixes.size(); ++d) {
        mids.push_back(gpt(spec.prefixes[d], k, range_of(spec.prefixes[d]), buffer[d], split_desc));
        total += target[d];
      }
      return blended(mids, w, total, k);
    }
    for (const auto& p : spec.prefixes) mids.push_back(gpt(p, k, range_of(p), std::nullopt, split_desc));
    return blended(mids, std::nullopt, size, k);
  }

 private:
  GPTIndex index_from_cache(const std::map<std::string, NpyArray>& m, const GPTEpochPlan& plan, SeqRange range,
                            size_t num_sequences) {
    const NpyArray& doc = m.at("document_index");
    const NpyArray& smp = m.at("sample_index");
    const NpyArray& shf = m.at("shuffle_index");
    const int64_t n = plan.num_samples;
    check(doc.descr == "<i4" && doc.shape == std::vector<int64_t>{plan.num_epochs * range.size()},
          "document_index has the wrong type or shape");
    check(smp.descr == "<i8" && smp.shape == std::vector<int64_t>{n + 1, 2},
          "sample_index has the wrong type or shape");
    check(shf.descr == "<i8" && shf.shape == std::vector<int64_t>{n}, "shuffle_index has the wrong type or shape");
    GPTIndex idx;
    idx.plan = plan;
    idx.document_index = view_of<int32_t>(doc);
    idx.sample_index = view_of<int64_t>(smp);
    idx.shuffle_index = view_of<int64_t>(shf);
    for (int32_t d : idx.document_index)
      check(d >= range.begin && d < range.end && static_cast<size_t>(d) < num_sequences,
            "document_index holds sequence {} outside [{}, {})", d, range.begin, range.end);
    for (int64_t s : idx.shuffle_index) check(s >= 0 && s < n, "shuffle_index holds {} outside [0, {})", s, n);
    for (int64_t r = 0; r <= n; ++r)
      check(idx.sample_index[2 * r] >= 0 && idx.sample_index[2 * r] < idx.document_index.size(),
            "sample_index row {} points outside the document index", r);
    return idx;
  }

  const DataArgs& a_;
  int64_t seq_length_;
  uint32_t seed_;
  bool write_cache_, plan_only_;
  uint64_t planned_bytes_ = 0;  // --dry-run: every planned index, as a run holds them all at once
  bool warned_ = false;

  // A dry run plans for the machines of the run, not this one (a login node, a CPU build planning a GPU
  // job): over this machine's memory it warns once; the run itself refuses.
  void warn_index_memory(uint64_t total) {
    const auto avail = available_memory();
    if (warned_ || !avail || total <= avail->bytes) return;
    warned_ = true;
    log::warn(
        "the sample indices planned so far need {}, more than the {} {} on this machine: a run here would stop "
        "before building them",
        describe_bytes(total), describe_bytes(avail->bytes), avail->limit);
  }

  std::map<std::string, std::shared_ptr<const TokenSource>> sources_;
};

GPTDatasets build_all(const DataArgs& a, int64_t seq_length, uint32_t seed, const SplitSampleCounts& counts,
                      BuildMode mode) {
  check(seq_length > 0, "--seq-length must be positive, got {}", seq_length);
  Builder b(a, seq_length, seed, mode);
  std::array<std::shared_ptr<const SampleDataset>, 3> out;
  std::vector<std::shared_ptr<const SampleDataset>> valid_sets;
  const bool per_split = !a.train_data_path.empty() || !a.valid_data_path.empty() || !a.test_data_path.empty();
  if (!a.data_path.empty()) {
    check(!per_split, "--data-path cannot be combined with --train-data-path/--valid-data-path/--test-data-path");
    const BlendSpec spec = parse_blend(a.data_path, "--data-path");
    std::string split = a.split.value_or("969, 30, 1");
    if (!a.split) log::warn("--split not given with --data-path: using Megatron's default \"969, 30, 1\"");
    const auto weights = parse_split(split);
    for (int k = 0; k < 3; ++k) {
      if (!split_ranges(weights, 0)[k]) continue;  // an empty book-end interval: no such split
      auto range_of = [&](const std::string& prefix) {
        return *split_ranges(weights, b.source(prefix)->num_sequences())[k];
      };
      out[k] = b.blend_split(spec, k, counts[k], range_of, split, "--data-path");
    }
  } else {
    check(per_split, "no data: give --data-path or --train-data-path/--valid-data-path/--test-data-path");
    check(!a.split, "--split applies to --data-path only; per-split data paths use each file whole");
    const std::vector<std::string>* lists[3] = {&a.train_data_path, &a.valid_data_path, &a.test_data_path};
    const char* flags[3] = {"--train-data-path", "--valid-data-path", "--test-data-path"};
    for (int k = 0; k < 3; ++k) {
      if (lists[k]->empty()) continue;
      BlendSpec spec = parse_blend(*lists[k], flags[k]);
      if (spec.prefixes.size() == 1) spec.weights.reset();  // a single file is used as is
      auto range_of = [&](const std::string& prefix) { return SeqRange{0, b.source(prefix)->num_sequences()}; };
      if (k == 1 && a.multiple_validation_sets && spec.prefixes.size() > 1) {
        // As Megatron: each prefix is a validation set of its own; the weights are not used.
        for (const std::string& prefix : spec.prefixes)
          valid_sets.push_back(b.blend_split(BlendSpec{{prefix}, std::nullopt}, k, counts[k], range_of, "", flags[k]));
        out[k] = valid_sets.front();
        continue;
      }
      out[k] = b.blend_split(spec, k, counts[k], range_of, "", flags[k]);
    }
  }
  return {out[0], out[1], out[2], std::move(valid_sets)};
}

}  // namespace

GPTDatasets build_gpt_datasets(const DataArgs& a, int64_t seq_length, uint32_t seed, const SplitSampleCounts& counts,
                               const BuildSync& sync) {
  if (sync.builds_cache) {
    GPTDatasets ds;
    try {
      ds = build_all(a, seq_length, seed, counts, BuildMode::write_cache);
    } catch (...) {
      sync.barrier();  // release the waiting ranks before failing, so nobody hangs
      throw;
    }
    sync.barrier();
    return ds;
  }
  sync.barrier();
  // Map what the builder wrote; anything missing (unwritable cache dir) is rebuilt here in memory.
  return build_all(a, seq_length, seed, counts, BuildMode::build);
}

GPTDatasets plan_gpt_datasets(const DataArgs& a, int64_t seq_length, uint32_t seed, const SplitSampleCounts& counts) {
  return build_all(a, seq_length, seed, counts, BuildMode::plan);
}

}  // namespace gptrain
