// gptrain checkpoints (format v1, docs/checkpoint-format.md; Megatron's directory layout):
//
//   <save>/latest_checkpointed_iteration.txt   "N" or "release", written last (temp + rename)
//   <save>/iter_%07d/ (or release/)            written as <save>/.iter_%07d.tmp/, renamed when complete
//       metadata.json                          iteration, consumed samples, model shape, layout, args, ...
//       model_tp{TT}_pp{PPP}.safetensors       fp32 model tensors of one TP x PP rank, global names
//       optim_tp{TT}_pp{PPP}_dp{DDD}.safetensors   "exp_avg.<name>", "exp_avg_sq.<name>", "master.<name>"
//
// The checkpoint code knows nothing about the model: callers hand it NamedTensors (name, local
// shape, fp32 host pointer, and for a TP shard the Slice saying which part of the global tensor it
// is). A slice is saved as safetensors metadata {name: {"global_shape": [...], "blocks": [[dim,
// offset, length], ...]}}; loading reassembles the global tensor from every file that holds a piece
// and cuts out whatever slice the loading rank asks for, so --load works across TP/PP layouts.
//
// Saving (parallel/train/distributed_checkpoint.cpp, core/hf/convert.cpp): rank 0 calls begin_save, every
// rank that holds pieces calls write_tensor_file into the returned directory, then (after a barrier) rank 0
// writes metadata and calls commit_save.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gptrain::checkpoint {

// Rows/columns [offset, offset + length) of global dimension `dim`.
struct Block {
  int dim = 0;
  int64_t offset = 0;
  int64_t length = 0;
};

// Which part of a global tensor a local tensor holds: along each dimension that has blocks, the
// concatenation of the global ranges they name, in order (a dimension's blocks are consecutive in the
// list); every other dimension is whole. E.g. a TP rank's qkv rows: blocks Q_r, K_r, V_r along dim 0;
// an expert fc1 under EP x ETP: its experts along dim 0, its gate and up rows along dim 1.
struct Slice {
  std::vector<int64_t> global_shape;
  std::vector<Block> blocks;
};

struct NamedTensor {
  std::string name;            // global name (global layer index)
  std::vector<int64_t> shape;  // local shape
  float* data = nullptr;       // numel(shape) fp32 values; read when saving, filled when loading
  std::optional<Slice> slice;  // absent: the tensor is whole (or replicated)
};

int64_t numel(std::span<const int64_t> shape);

// A checkpoint's step: iteration N (directory iter_%07d) or "release" (directory release/).
struct Step {
  bool release = false;
  int64_t iteration = 0;
  static Step at(int64_t iteration) { return {false, iteration}; }
  static Step release_step() { return {true, 0}; }
  std::string dir_name() const;      // "iter_0000100" | "release"
  std::string tracker_text() const;  // "100" | "release"
};

struct Layout {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;  // expert parallelism: EP ranks wrote the routed experts' slices (written when > 1)
  bool distributed_optimizer = false;
};

struct Metadata {
  int64_t iteration = 0;
  int64_t consumed_train_samples = 0;
  int64_t consumed_valid_samples = 0;
  int64_t skipped_train_samples = 0;                // --iterations-to-skip's (written when > 0)
  nlohmann::json model = nlohmann::json::object();  // family, num_layers, hidden_size, ... (see the format doc)
  Layout layout;
  nlohmann::json args = nlohmann::json::object();
  nlohmann::json scheduler = nlohmann::json::object();
  nlohmann::json rng = nlohmann::json::object();
  nlohmann::json loss_scale = nlohmann::json::object();
  // State of the MoE routers that is not a parameter: "expert_bias" {global layer: [E floats]}
  // (--moe-router-enable-expert-bias). Empty (and not written) without it.
  nlohmann::json moe_router = nlohmann::json::object();
  // --fp8-recipe delayed: the FP8 scaling state (fp8_state_json.h). Empty (and not written) without it.
  nlohmann::json fp8 = nlohmann::json::object();
  // Whether the save wrote optimizer files ("optimizer_state"; for a checkpoint written before the field, the
  // saving run's --no-save-optim in args; nullopt when neither says, e.g. convert_from_hf's). A missing
  // optimizer file of a checkpoint that wrote them is damage, not a --no-save-optim save.
  std::optional<bool> optimizer_state;
  // The save's id, as its tensor files record it ("" in checkpoints without one; see FileStamp).
  std::string save_id;
  // The model FLOPs of every iteration trained so far (Megatron's num_floating_point_operations_so_far:
  // --log-progress's throughputs continue from it after a resume; 0 in checkpoints without it).
  double num_floating_point_operations_so_far = 0.0;
};

nlohmann::json metadata_to_json(const Metadata& m);
// `where` names the source in error messages.
Metadata metadata_from_json(const nlohmann::json& j, const std::string& where);
Metadata read_metadata(const std::string& checkpoint_dir);                  // <dir>/metadata.json
void write_metadata(const std::string& checkpoint_dir, const Metadata& m);  // temp + rename

// ep_rank > 0 (expert parallelism: the files of the other EP ranks, routed experts only) appends
// "_ep001" ... before the extension.
std::string model_file_name(int tp_rank, int pp_rank, int ep_rank = 0);               // model_tp00_pp000.safetensors
std::string optim_file_name(int tp_rank, int pp_rank, int dp_rank, int ep_rank = 0);  // optim_tp00_pp000_dp000...

// ---- integrity ----
// Every tensor file's __metadata__ holds, under this key, a JSON object {tensor name: CRC-32C of its bytes as
// 8 lowercase hex digits}; metadata.json holds "crc32c" of its own content (§3.5 of the format doc). Loading
// verifies what it reads; files written before checksums existed have none and are read unverified.
inline constexpr const char* kChecksumKey = "gptrain.crc32c";
std::string crc32c_hex(uint32_t crc);

// ---- which checkpoint a tensor file belongs to ----
// A training save stamps every tensor file's __metadata__ with the iteration of its checkpoint and the save's
// id (metadata.json's "iteration" and "save_id"). Loading refuses a file whose stamp differs from its
// directory's metadata.json: a file copied in from another checkpoint, whose own checksums hold. The save id
// is derived from the save's content (save_id_of: the checksums of every tensor of every file), not drawn at
// random, so that two runs that train the same bits write the same bytes (an async save equals a synchronous
// one), while a file of another run's checkpoint of the same iteration, whose weights differ, is refused.
// Files without a stamp (saves before it existed, convert_from_hf) are not checked.
inline constexpr const char* kIterationKey = "gptrain.iteration";
inline constexpr const char* kSaveIdKey = "gptrain.save_id";
struct FileStamp {
  int64_t iteration = 0;
  std::string save_id;
};
// A rank's share of a save's content: CRC-32C over the file name and each tensor's name and CRC-32C, for each
// (file name, tensors) it writes, in order.
uint32_t files_digest(std::span<const std::pair<std::string, std::span<const NamedTensor>>> files);
// The save id of the ranks' digests (in rank order): 8 hex digits.
std::string save_id_of(std::span<const uint32_t> rank_digests);

// ---- saving ----
// Creates an empty <save>/.<dir_name>.tmp/ (removing a stale one) and returns its path.
std::string begin_save(const std::string& save_dir, Step step);
// One safetensors file of fp32 tensors; slices (and the stamp, when given) recorded in its metadata.
void write_tensor_file(const std::string& path, std::span<const NamedTensor> tensors,
                       const std::optional<FileStamp>& stamp = std::nullopt);
// Renames the temp directory to its final name (replacing an older save of the same step), then
// writes the tracker (temp + rename). Called after every rank has written its files.
void commit_save(const std::string& save_dir, Step step);

// ---- recovery (after a save that was killed or failed) ----
// A re-save of `step` killed between its renames leaves <save>/.<dir>.old without <save>/<dir>: moves the
// old copy back under its name. True when it did. Called by begin_save and Checkpoint::open.
bool restore_interrupted_save(const std::string& save_dir, Step step);
// Directories under `dir` holding a metadata.json: iter_*/release and the .tmp/.old copies of a save.
std::vector<std::string> intact_checkpoints(const std::string& dir);
// Removes gptrain's own leftovers in `save_dir`: .<dir>.tmp directories, .<dir>.old directories whose
// step is in place, .iter_N.deleting directories (retention killed part-way), and tracker temp files of
// processes that no longer exist. Called by begin_save.
void remove_stale_temporaries(const std::string& save_dir);

// What of a training checkpoint `dir` holds: "the tracker (naming 10), iter_0000010, release", or "" for
// none (no tracker, no iter_*/release directory).
std::string training_checkpoint_contents(const std::string& dir);
// The converters' refusal to write over something that is not theirs to replace: "<flag> <dir>: <holds>;
// refusing to replace it<hint>".
[[noreturn]] void refuse_to_replace(const std::string& flag, const std::string& dir, const std::string& holds,
                                    const std::string& hint = "");

// ---- loading ----
// The tracker's step; nullopt when <load>/latest_checkpointed_iteration.txt does not exist.
std::optional<Step> read_tracker(const std::string& load_dir);

class Checkpoint {
 public:
  enum class Kind { model, optim };

  // Opens <load_dir>/<step dir>; without a step, the one the tracker names (error if none).
  static Checkpoint open(const std::string& load_dir, std::optional<Step> step = std::nullopt);
  // Opens one checkpoint directory (iter_%07d/ or release/) directly.
  explicit Checkpoint(const std::string& checkpoint_dir);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  const std::string& dir() const { return dir_; }
  const Metadata& metadata() const { return meta_; }
  bool has_optim() const;
  // When the metadata records that the save wrote optimizer state: "<dir>/optim_tp00_pp000_dp000.safetensors
  // is missing ..." for the first optimizer file of the layout that is not there; nullopt when all are (or
  // none was saved).
  std::optional<std::string> missing_optimizer_files() const;

  // Global tensor names of one kind, sorted.
  std::vector<std::string> names(Kind kind) const;
  bool has(Kind kind, const std::string& name) const;
  std::vector<int64_t> global_shape(Kind kind, const std::string& name) const;
  // The whole global tensor, reassembled from every file holding a piece (error if a part is missing).
  void read_global(Kind kind, const std::string& name, float* dst, std::size_t n) const;
  std::vector<float> read_global(Kind kind, const std::string& name) const;
  // Fill t.data: the whole tensor, or the part t.slice names (resharding to the caller's layout).
  // t.shape must match (global shape, or the slice's local shape); mismatches name both shapes.
  // valid_rows >= 0 marks a vocabulary-padded tensor (word embeddings, output layer): only its first
  // valid_rows rows are real, so a checkpoint padded for another TP size (more or fewer dim-0 rows,
  // both >= valid_rows) is accepted: real rows are copied, padding rows of the caller's shape are 0.
  void read_into(Kind kind, const NamedTensor& t, int64_t valid_rows = -1) const;
  // read_into for every tensor. Errors list every requested tensor the checkpoint lacks; with
  // strict, also tensors the checkpoint holds that were not requested.
  void load(Kind kind, std::span<const NamedTensor> tensors, bool strict) const;

  // Checks the checksum of every tensor in the files numbered part, part + parts, ... (files in name
  // order; parts ranks verify a checkpoint together, each reading 1/parts of it). Returns a description of
  // the first damaged tensor ("<file>: tensor \"<name>\" ..."), or nullopt when all match. Reads also verify
  // each piece the first time it is read, so a caller that skips this still never loads damaged bytes.
  std::optional<std::string> verify(int part = 0, int parts = 1) const;

 private:
  struct Impl;
  std::string dir_;
  Metadata meta_;
  Impl* impl_ = nullptr;
};

// Copy between a global tensor and a local slice of it (used by loaders and tests).
void extract_slice(const float* global, const Slice& slice, float* local);  // global -> local
void insert_slice(float* global, const Slice& slice, const float* local);   // local -> global
std::vector<int64_t> slice_local_shape(const Slice& slice);

}  // namespace gptrain::checkpoint
