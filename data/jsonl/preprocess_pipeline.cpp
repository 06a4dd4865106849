// preprocess_jsonl: reader thread -> tokenizing workers -> in-order writer. See preprocess_pipeline.h.
#include "data/jsonl/preprocess_pipeline.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "data/indexed/indexed_dataset.h"
#include "data/jsonl/json_fields.h"
#include "data/jsonl/line_reader.h"
#include "data/jsonl/worker_budget.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <string_view>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace gptrain {

namespace {

using Clock = std::chrono::steady_clock;

// Bad-line messages kept per batch when skipping (the rest are only counted).
constexpr size_t kMaxBadMessages = 5;

struct LineRef {
  size_t offset, size;
  int32_t file;
  int64_t line_no;
};

// Tokens of one JSON key for every document of a batch.
struct KeyTokens {
  std::vector<int32_t> tokens;
  std::vector<int32_t> seq_lengths;  // every sequence, in order
  std::vector<int32_t> doc_seqs;     // per document: how many of seq_lengths it owns
};

struct Batch {
  int64_t seq = 0;
  std::string text;  // the lines, back to back
  std::vector<LineRef> lines;
  uint64_t file_bytes_done = 0;  // input-file bytes consumed when the batch was closed
  bool last = false;
  std::exception_ptr reader_error;  // raised after the lines above
  // Filled by a worker.
  std::vector<KeyTokens> keys;
  std::vector<uint32_t> doc_bytes;  // per document: its line's bytes + newline (for progress)
  int64_t documents = 0, blank_lines = 0, bad_lines = 0;
  std::vector<std::string> bad_messages;
  std::string error;  // first bad line when not skipping
};

bool is_blank(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  return true;
}

class Pipeline {
 public:
  explicit Pipeline(const PreprocessOptions& o) : opt_(o), tokenizer_(make_tokenizer(o.tokenizer)) {
    for (const std::string& path : o.inputs) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) fail("{}: input file not found", path);
      total_file_bytes_ += static_cast<uint64_t>(st.st_size);
    }
  }

  PreprocessSummary run();

 private:
  void read_all();
  void work(int index);  // the index-th tokenizing thread (from 0)
  void tokenize(Batch& b, Tokenizer& tok) const;
  void push_batch(std::unique_ptr<Batch> b);
  void progress(const PreprocessSummary& s, bool final_line);

  const PreprocessOptions& opt_;
  std::unique_ptr<Tokenizer> tokenizer_;
  uint64_t total_file_bytes_ = 0;
  uint64_t file_bytes_done_ = 0;
  Clock::time_point start_ = Clock::now();

  // A thread's failure outside a batch (out of memory): the first one, for the writer to raise.
  void thread_failed(const std::string& what);

  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_, cv_space_;
  std::deque<std::unique_ptr<Batch>> todo_;
  std::map<int64_t, std::unique_ptr<Batch>> done_;
  int64_t in_flight_ = 0;
  bool reader_done_ = false;
  bool stop_ = false;
  std::string thread_error_;
  double worker_cpu_seconds_ = 0;
};

void Pipeline::thread_failed(const std::string& what) {
  std::lock_guard lock(mu_);
  if (thread_error_.empty()) thread_error_ = what;
  stop_ = true;
  cv_done_.notify_all();
  cv_work_.notify_all();
  cv_space_.notify_all();
}

// Test hooks: GPTRAIN_FAULT_INJECT=worker-start:K makes starting the K-th tokenizing thread (1-based) fail
// as it does when the process is out of memory or threads; worker-oom:K makes that thread run out of
// memory on its first batch.
bool fault_injected(std::string_view what, int k) {
  const char* env = std::getenv("GPTRAIN_FAULT_INJECT");
  if (env == nullptr) return false;
  const std::string_view v = env;
  return v.size() > what.size() && v.substr(0, what.size()) == what && v[what.size()] == ':' &&
         std::atoi(env + what.size() + 1) == k;
}
void worker_start_fault_point(int k) {
  if (fault_injected("worker-start", k)) throw std::system_error(EAGAIN, std::generic_category(), "pthread_create");
}

// What a thread's exception says, naming --workers when memory ran out.
std::string thread_failure(const char* thread, int workers) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fmt::format(
        "out of memory in the {} with --workers {} (each worker holds batches of its own); use fewer "
        "--workers or give the process more memory",
        thread, workers);
  } catch (const std::exception& e) {
    return fmt::format("internal error in the {}: {}", thread, e.what());
  }
}

void Pipeline::push_batch(std::unique_ptr<Batch> b) {
  std::unique_lock lock(mu_);
  const int64_t limit = 2 * static_cast<int64_t>(opt_.workers) + 2;
  cv_space_.wait(lock, [&] { return stop_ || in_flight_ < limit; });
  if (stop_) return;
  ++in_flight_;
  todo_.push_back(std::move(b));
  cv_work_.notify_one();
}

void Pipeline::read_all() {
  auto batch = std::make_unique<Batch>();
  int64_t seq = 0;
  uint64_t files_done_bytes = 0;
  try {
    for (size_t f = 0; f < opt_.inputs.size(); ++f) {
      LineReader reader(opt_.inputs[f]);
      std::string_view line;
      while (reader.next(line)) {
        batch->lines.push_back({batch->text.size(), line.size(), static_cast<int32_t>(f), reader.line_number()});
        batch->text.append(line);
        if (batch->text.size() >= opt_.batch_bytes) {
          batch->seq = seq++;
          batch->file_bytes_done = files_done_bytes + reader.file_bytes_consumed();
          push_batch(std::move(batch));
          batch = std::make_unique<Batch>();
          {
            std::lock_guard lock(mu_);
            if (stop_) return;
          }
        }
      }
      files_done_bytes += reader.file_bytes_consumed();
    }
  } catch (...) {
    batch->reader_error = std::current_exception();
  }
  batch->seq = seq;
  batch->file_bytes_done = files_done_bytes;
  batch->last = true;
  push_batch(std::move(batch));
  std::lock_guard lock(mu_);
  reader_done_ = true;
  cv_work_.notify_all();
}

void Pipeline::tokenize(Batch& b, Tokenizer& tok) const {
  const size_t K = opt_.json_keys.size();
  b.keys.assign(K, KeyTokens{});
  std::vector<std::vector<std::string_view>> sentences(K);
  std::vector<JsonField> fields;
  std::string top_type;
  std::vector<std::array<size_t, 3>> doc_start(K);  // per key: tokens, seq_lengths, doc_seqs sizes
  for (const LineRef& ref : b.lines) {
    const std::string_view line(b.text.data() + ref.offset, ref.size);
    if (is_blank(line)) {
      ++b.blank_lines;
      continue;
    }
    auto bad = [&](const std::string& what) {
      const std::string msg = fmt::format("{}:{}: {}", opt_.inputs[ref.file], ref.line_no, what);
      if (!opt_.skip_bad_lines) {
        b.error = msg;
        return;
      }
      ++b.bad_lines;
      if (b.bad_messages.size() < kMaxBadMessages) b.bad_messages.push_back(msg);
    };
    const std::string err = extract_json_fields(line, opt_.json_keys, fields, top_type);
    if (!err.empty()) {
      if (top_type.empty() || err.rfind("not an object", 0) != 0)
        bad(fmt::format("malformed JSON ({}); expected one JSON object per line", err));
      else
        bad(fmt::format("expected a JSON object, got a JSON {}", top_type));
      if (!b.error.empty()) return;
      continue;
    }
    bool ok = true;
    for (size_t k = 0; k < K && ok; ++k) {
      sentences[k].clear();
      const JsonField& f = fields[k];
      switch (f.kind) {
        case JsonField::kMissing:
          bad(fmt::format("missing key \"{}\" (--json-keys)", opt_.json_keys[k]));
          ok = false;
          break;
        case JsonField::kOther:
          bad(fmt::format("key \"{}\" holds a JSON {}; expected a string or an array of strings", opt_.json_keys[k],
                          f.other_type));
          ok = false;
          break;
        case JsonField::kString:
        case JsonField::kStringArray:
          for (const std::string& str : f.strings) sentences[k].push_back(str);
          break;
      }
    }
    if (!ok) {
      if (!b.error.empty()) return;
      continue;
    }
    // Megatron's Encoder.encode: each sentence with at least one token is a sequence; the EOD id goes
    // at the end of the last one, only when the document has tokens.
    // Text a tokenizer refuses (NullTokenizer's ids) is a bad line: nothing of the document is kept.
    size_t k = 0;
    for (size_t j = 0; j < K; ++j)
      doc_start[j] = {b.keys[j].tokens.size(), b.keys[j].seq_lengths.size(), b.keys[j].doc_seqs.size()};
    try {
      for (; k < K; ++k) {
        KeyTokens& kt = b.keys[k];
        int32_t nseq = 0;
        for (std::string_view s : sentences[k]) {
          const size_t before = kt.tokens.size();
          tok.encode(s, kt.tokens);
          if (kt.tokens.size() > before) {
            kt.seq_lengths.push_back(static_cast<int32_t>(kt.tokens.size() - before));
            ++nseq;
          }
        }
        if (nseq > 0 && opt_.append_eod) {
          kt.tokens.push_back(tok.eod_id());
          ++kt.seq_lengths.back();
        }
        kt.doc_seqs.push_back(nseq);
      }
    } catch (const Error& e) {
      bad(fmt::format("key \"{}\": {}", opt_.json_keys[k], e.what()));
      if (!b.error.empty()) return;
      for (size_t j = 0; j < K; ++j) {
        b.keys[j].tokens.resize(doc_start[j][0]);
        b.keys[j].seq_lengths.resize(doc_start[j][1]);
        b.keys[j].doc_seqs.resize(doc_start[j][2]);
      }
      continue;
    }
    b.doc_bytes.push_back(static_cast<uint32_t>(std::min<size_t>(ref.size + 1, UINT32_MAX)));
    ++b.documents;
  }
}

void Pipeline::work(int index) {
  const std::unique_ptr<Tokenizer> own = tokenizer_->clone();  // shares the tables, own cache
  Tokenizer& tok = *own;
  if (fault_injected("worker-oom", index + 1)) throw std::bad_alloc();
  while (true) {
    std::unique_ptr<Batch> b;
    {
      std::unique_lock lock(mu_);
      cv_work_.wait(lock, [&] { return stop_ || !todo_.empty() || reader_done_; });
      if (stop_ || (todo_.empty() && reader_done_)) return;
      b = std::move(todo_.front());
      todo_.pop_front();
    }
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    try {
      tokenize(*b, tok);
    } catch (const std::bad_alloc&) {
      throw;  // the thread's failure, not the batch's
    } catch (const std::exception& e) {
      b->error = fmt::format("while tokenizing batch {}: {}", b->seq, e.what());
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    std::lock_guard lock(mu_);
    worker_cpu_seconds_ +=
        static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
    const int64_t seq = b->seq;
    done_[seq] = std::move(b);
    cv_done_.notify_all();
  }
}

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::fmod(s / 60, 60));
}

}  // namespace

PreprocessSummary Pipeline::run() {
  const size_t K = opt_.json_keys.size();
  const int P = opt_.keep_sequential_samples ? 1 : std::max(1, opt_.partitions);
  PreprocessSummary sum;
  sum.tokens.assign(K, 0);
  const IndexDType dtype = optimal_index_dtype(tokenizer_->vocab_size());
  // writers[p][k]; with round-robin partitions, partition p first goes to a temporary dataset.
  std::vector<std::string> part_prefixes;  // finalized partition datasets to merge and delete
  std::vector<std::vector<std::unique_ptr<IndexedDatasetWriter>>> writers(P);
  for (size_t k = 0; k < K; ++k)
    sum.output_prefixes.push_back(fmt::format("{}_{}_document", opt_.output_prefix, opt_.json_keys[k]));
  for (int p = 0; p < P; ++p)
    for (size_t k = 0; k < K; ++k) {
      const std::string prefix =
          P == 1 ? sum.output_prefixes[k] : fmt::format("{}.partition{}.tmp{}", sum.output_prefixes[k], p, ::getpid());
      writers[p].push_back(std::make_unique<IndexedDatasetWriter>(prefix, dtype));
    }
  struct Cleanup {  // partition datasets never outlive the run
    std::vector<std::string>& prefixes;
    ~Cleanup() {
      for (const auto& p : prefixes) {
        std::remove((p + ".bin").c_str());
        std::remove((p + ".idx").c_str());
      }
    }
  } cleanup{part_prefixes};

  std::thread reader;
  std::vector<std::thread> workers;
  auto shutdown = [&] {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_work_.notify_all();
    cv_space_.notify_all();
    if (reader.joinable()) reader.join();
    for (auto& t : workers) t.join();
  };
  // Every thread reports its own failure (out of memory) to the writer below instead of ending the process.
  try {
    workers.reserve(static_cast<size_t>(opt_.workers));
    reader = std::thread([this] {
      try {
        read_all();
      } catch (...) {
        thread_failed(thread_failure("input reader thread", opt_.workers));
      }
    });
    for (int w = 0; w < opt_.workers; ++w) {
      worker_start_fault_point(w + 1);
      workers.emplace_back([this, w] {
        try {
          work(w);
        } catch (...) {
          thread_failed(thread_failure("tokenizing threads", opt_.workers));
        }
      });
    }
  } catch (const std::exception& e) {
    const size_t started = workers.size();
    shutdown();
    fail(
        "--workers {}: tokenizing thread {} could not start ({}): the process is short of memory or threads; use "
        "fewer --workers",
        opt_.workers, started + 1, e.what());
  }

  try {
    int64_t next_log = opt_.log_interval > 0 ? opt_.log_interval : INT64_MAX;
    for (int64_t seq = 0;; ++seq) {
      std::unique_ptr<Batch> b;
      {
        std::unique_lock lock(mu_);
        cv_done_.wait(lock, [&] { return done_.count(seq) > 0 || !thread_error_.empty(); });
        if (!thread_error_.empty()) throw Error(thread_error_);
        b = std::move(done_[seq]);
        done_.erase(seq);
        --in_flight_;
        cv_space_.notify_one();
      }
      if (!b->error.empty()) throw Error(b->error);
      for (const std::string& m : b->bad_messages) log::warn("preprocess_data: skipping bad line: {}", m);
      if (b->bad_lines > static_cast<int64_t>(b->bad_messages.size()))
        log::warn("preprocess_data: skipping {} more bad lines",
                  b->bad_lines - static_cast<int64_t>(b->bad_messages.size()));
      // Documents in order; per key, each document's sequences follow the previous ones.
      std::vector<size_t> tok_at(K, 0), seq_at(K, 0);
      const uint64_t file0 = file_bytes_done_, file1 = b->file_bytes_done;
      const uint64_t batch_total = std::max<uint64_t>(1, b->text.size() + b->lines.size());
      uint64_t batch_done = 0;
      for (int64_t d = 0; d < b->documents; ++d) {
        const int p = P == 1 ? 0 : static_cast<int>(sum.documents % P);
        for (size_t k = 0; k < K; ++k) {
          const KeyTokens& kt = b->keys[k];
          IndexedDatasetWriter& w = *writers[p][k];
          for (int32_t s = 0; s < kt.doc_seqs[d]; ++s) {
            const int32_t len = kt.seq_lengths[seq_at[k]++];
            w.add_sequence(std::span<const int32_t>(kt.tokens.data() + tok_at[k], static_cast<size_t>(len)));
            tok_at[k] += static_cast<size_t>(len);
            sum.tokens[k] += len;
          }
          w.end_document();
        }
        ++sum.documents;
        sum.input_bytes += b->doc_bytes[d];
        batch_done += b->doc_bytes[d];
        file_bytes_done_ = file0 + static_cast<uint64_t>(static_cast<double>(file1 - file0) * batch_done / batch_total);
        if (sum.documents == next_log) {
          progress(sum, false);
          next_log += opt_.log_interval;
        }
      }
      sum.blank_lines += b->blank_lines;
      sum.bad_lines += b->bad_lines;
      uint64_t batch_bytes = b->text.size() + b->lines.size();  // + the newlines
      for (uint32_t n : b->doc_bytes) batch_bytes -= n;
      sum.input_bytes += batch_bytes;  // blank and bad lines
      file_bytes_done_ = b->file_bytes_done;
      if (b->reader_error) std::rethrow_exception(b->reader_error);
      if (b->last) break;
    }
  } catch (...) {
    shutdown();
    throw;  // the writers' destructors remove their temporaries
  }
  shutdown();

  if (P == 1) {
    for (auto& w : writers[0]) w->finalize();
  } else {
    for (int p = 0; p < P; ++p)
      for (size_t k = 0; k < K; ++k) {
        writers[p][k]->finalize();
        part_prefixes.push_back(fmt::format("{}.partition{}.tmp{}", sum.output_prefixes[k], p, ::getpid()));
      }
    for (size_t k = 0; k < K; ++k) {
      IndexedDatasetWriter merged(sum.output_prefixes[k], dtype);
      for (int p = 0; p < P; ++p)
        merged.add_dataset(fmt::format("{}.partition{}.tmp{}", sum.output_prefixes[k], p, ::getpid()));
      merged.finalize();
    }
  }
  sum.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  sum.worker_cpu_seconds = worker_cpu_seconds_;
  progress(sum, true);
  return sum;
}

void Pipeline::progress(const PreprocessSummary& s, bool final_line) {
  const double secs = std::max(1e-9, std::chrono::duration<double>(Clock::now() - start_).count());
  int64_t tokens = 0;
  for (int64_t t : s.tokens) tokens += t;
  const double mb = static_cast<double>(s.input_bytes) / 1e6;
  std::string eta;
  if (!final_line && total_file_bytes_ > 0 && file_bytes_done_ > 0 && s.documents > 0) {
    const double frac = static_cast<double>(file_bytes_done_) / static_cast<double>(total_file_bytes_);
    eta = fmt::format(", {:.1f}% of input, ETA {}", 100 * frac, format_duration(secs * (1 - frac) / frac));
  }
  std::fprintf(stderr, "%s %lld documents (%.1f docs/s), %.2f MB (%.2f MB/s), %lld tokens (%.0f tokens/s)%s\n",
               final_line ? "Done:" : "Processed", static_cast<long long>(s.documents), s.documents / secs, mb,
               mb / secs, static_cast<long long>(tokens), tokens / secs, eta.c_str());
  std::fflush(stderr);
}

PreprocessSummary preprocess_jsonl(const PreprocessOptions& options) {
  check(!options.inputs.empty(), "no input files");
  check(!options.json_keys.empty(), "--json-keys: at least one key is needed");
  for (size_t k = 0; k < options.json_keys.size(); ++k)
    for (size_t j = 0; j < k; ++j)
      check(options.json_keys[j] != options.json_keys[k], "--json-keys: \"{}\" is given twice (one output per key)",
            options.json_keys[k]);
  check(options.workers >= 1, "--workers {}: expected at least 1", options.workers);
  check(options.partitions >= 1, "--partitions {}: expected at least 1", options.partitions);
  if (const std::string e = worker_budget_error(options.workers, options.batch_bytes, current_worker_memory_context());
      !e.empty())
    fail("{}", e);
  Pipeline p(options);
  return p.run();
}

}  // namespace gptrain
