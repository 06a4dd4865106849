// Megatron's "MMIDIDX" indexed dataset: a prefix P names P.bin (every sequence's tokens, concatenated,
// in one dtype, no header) and P.idx (header + sequence lengths + byte pointers + document index).
// Byte layout: docs/megatron-compat.md §1.2; the writer below produces files Megatron reads
// and the reader accepts files Megatron writes.
//
// Reader: the .bin is memory-mapped (tokens are read on demand, the OS pages them); the three index
// arrays are copied out of the .idx into aligned vectors at open time, because in the file they start
// at byte 34 and are not naturally aligned (a span over them would be undefined behaviour). That costs
// 20 bytes per sequence of RAM, which is small next to the tokens (a 1B-token corpus of 1M documents
// needs 20 MB).
//
// Writer: tokens stream to "P.bin.tmp.<pid>.<id>" as they come; finalize() writes the index to a temporary
// name and renames both files into place, so a crash or an error never leaves a half-written
// dataset under the final names. A writer destroyed without finalize() removes its temporaries.
// A new writer removes the temporaries of the same prefix left by a writer whose process no longer
// exists (killed by a signal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gptrain {

// Megatron's DType enum codes, as stored in byte 17 of the .idx. (Named IndexDType here because
// gptrain::DType is the compute dtype of kernels/backend.h.)
enum class IndexDType : uint8_t {
  uint8 = 1,
  int8 = 2,
  int16 = 3,
  int32 = 4,
  int64 = 5,
  float64 = 6,
  float32 = 7,
  uint16 = 8,
};

// True for the codes 1..8 above.
bool is_valid_index_dtype_code(uint8_t code);
// Bytes per element (1, 2, 4 or 8).
size_t index_dtype_size(IndexDType dtype);
// "uint16", "int32", ...
const char* index_dtype_name(IndexDType dtype);
// Megatron's IndexDType.optimal_dtype: uint16 when vocab_size < 65500, else int32.
IndexDType optimal_index_dtype(int64_t vocab_size);

// A read-only memory-mapped file (empty files are allowed and map to nothing).
class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

struct IndexedDatasetOptions {
  // Multimodal datasets carry one extra int8 "mode" per sequence after the document index; nothing in
  // the header says so, the reader has to be told (as in Megatron).
  bool multimodal = false;
};

class IndexedDataset {
 public:
  // Opens P.idx and P.bin and validates magic, version, dtype code, the header counts against the .idx
  // size, lengths >= 0, pointers == running sum of lengths * itemsize, the document index (starts at
  // 0, never decreases, ends at the number of sequences) and that the .bin size equals the total token
  // bytes. Any violation throws gptrain::Error naming the file and what was wrong.
  static IndexedDataset open(const std::string& prefix, IndexedDatasetOptions options = {});

  const std::string& prefix() const { return prefix_; }
  IndexDType dtype() const { return dtype_; }
  uint8_t dtype_code() const { return static_cast<uint8_t>(dtype_); }
  size_t itemsize() const { return index_dtype_size(dtype_); }

  int64_t num_sequences() const { return static_cast<int64_t>(lengths_.size()); }
  // Number of documents (the document index has one more entry).
  int64_t num_documents() const { return static_cast<int64_t>(doc_idx_.size()) - 1; }
  // Total tokens over all sequences.
  int64_t num_tokens() const { return num_tokens_; }

  std::span<const int32_t> sequence_lengths() const { return lengths_; }    // (S,) tokens
  std::span<const int64_t> sequence_pointers() const { return pointers_; }  // (S,) byte offsets in .bin
  std::span<const int64_t> document_indices() const { return doc_idx_; }    // (D+1,) first sequence of each doc
  std::span<const int8_t> sequence_modes() const { return modes_; }         // (S,) only when multimodal

  // Copies tokens [offset, offset + count) of sequence i into out[0..count), converting the file
  // dtype to int32 (an int64/uint32-range value that does not fit, or a float that is not an integer,
  // throws). Throws when i or the range is out of bounds.
  void read_tokens(int64_t i, int64_t offset, int64_t count, int32_t* out) const;
  // Whole sequence i as int32.
  std::vector<int32_t> sequence(int64_t i) const;

  // The raw .bin bytes (no alignment guarantee beyond the file's), for zero-copy users.
  std::span<const std::byte> bin_bytes() const { return {bin_.data(), bin_.size()}; }

 private:
  std::string prefix_;
  IndexDType dtype_ = IndexDType::uint16;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> pointers_;
  std::vector<int64_t> doc_idx_;
  std::vector<int8_t> modes_;
  int64_t num_tokens_ = 0;
  MappedFile bin_;
};

// Streams an indexed dataset to disk. Usage:
//   IndexedDatasetWriter w(prefix, IndexDType::uint16);
//   w.add_sequence(tokens); ...; w.end_document();   // or w.add_document(tokens, lengths)
//   w.finalize();                                    // only now do P.bin / P.idx appear
class IndexedDatasetWriter {
 public:
  IndexedDatasetWriter(std::string prefix, IndexDType dtype);
  ~IndexedDatasetWriter();
  IndexedDatasetWriter(const IndexedDatasetWriter&) = delete;
  IndexedDatasetWriter& operator=(const IndexedDatasetWriter&) = delete;

  // Appends one sequence (converted to the dataset dtype; a token that does not fit throws).
  void add_sequence(std::span<const int32_t> tokens);
  // Closes the current document (sequences added since the last end_document). A document with no
  // sequences is allowed and is recorded as a repeated document-index entry, as in Megatron.
  void end_document();
  // tokens split into consecutive sequences of the given lengths, then end_document().
  void add_document(std::span<const int32_t> tokens, std::span<const int32_t> lengths);
  // Appends a whole existing dataset (same dtype required): its sequences and documents follow the
  // ones written so far. This is tools/merge_datasets.py's operation. Any open document is closed
  // first.
  void add_dataset(const std::string& other_prefix);

  int64_t num_sequences() const { return static_cast<int64_t>(lengths_.size()); }
  int64_t num_documents() const { return static_cast<int64_t>(doc_idx_.size()) - 1; }
  int64_t num_tokens() const { return num_tokens_; }
  IndexDType dtype() const { return dtype_; }

  // Writes the .idx and renames both files into place. Sequences added after the last end_document()
  // are closed into a final document first (Megatron's builder would leave them out of the document
  // index, which makes an invalid file).
  void finalize();

 private:
  void write_bin(const void* data, size_t bytes);
  void abandon() noexcept;

  std::string prefix_;
  IndexDType dtype_;
  std::string bin_tmp_;
  std::string idx_tmp_;
  std::FILE* bin_ = nullptr;
  std::vector<int32_t> lengths_;
  std::vector<int64_t> doc_idx_;
  std::vector<std::byte> convert_buf_;
  int64_t num_tokens_ = 0;
  bool finalized_ = false;
};

// Writes P.idx for the given arrays (header + lengths + pointers recomputed from lengths + doc index)
// to `path`. Exposed for tests that check the byte layout.
void write_index_file(const std::string& path, IndexDType dtype, std::span<const int32_t> lengths,
                      std::span<const int64_t> doc_idx);

}  // namespace gptrain
