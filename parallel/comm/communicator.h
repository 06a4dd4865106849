// One interface for the collectives and point-to-point transfers that parallel training needs, over
// one group of ranks. Implementations: MpiCommunicator (host buffers; device buffers staged through
// host memory), NcclCommunicator (device buffers, CUDA builds only).
//
// Semantics (calls are blocking and collective over the group, except send/recv and the i* calls):
// - counts are elements of `type`; in-place all_reduce; reduce_scatter/all_gather use equal blocks
//   of `count` elements per rank, block i belonging to group rank i.
// - deterministic reductions: when the communicator is made deterministic, every reduction sums the
//   ranks' contributions in group-rank order (0 + 1 + 2 ...), the same on every rank and every run,
//   whatever the algorithm or topology underneath (exactness tests and bitwise reproducibility).
// - a peer that never arrives ends the call after the communicator's timeout with an Error that names
//   the operation and the rank(s) missing (--distributed-timeout-minutes), never a silent hang. Over MPI
//   the missing ranks of a collective are those that do not answer a roll call (mpi_roll_call.h); NCCL
//   names the group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {
class Backend;
}

namespace gptrain::parallel {

struct CommOptions {
  bool deterministic = false;      // reductions summed in group-rank order (see above)
  double timeout_seconds = 600.0;  // --distributed-timeout-minutes * 60
  Backend* staging = nullptr;      // buffers live in this backend's memory (null or "cpu": host)
};

// BF16/F16 move as 16-bit data everywhere. BF16 reduces everywhere (each step of a sum rounds to bf16,
// as NCCL's bf16 reductions do; MPI through a user-defined operation); F16 only with NCCL.
enum class ElemType : uint8_t { F32, F64, I32, I64, Byte, BF16, F16 };
enum class ReduceOp : uint8_t { Sum, Max };
std::size_t elem_size(ElemType t);
const char* elem_name(ElemType t);

// One transfer of a batched point-to-point call (Communicator::batch_send_recv).
struct P2POp {
  bool send = false;    // false: receive into buf
  void* buf = nullptr;  // a send only reads it
  std::size_t count = 0;
  int peer = 0;
  static P2POp send_to(const void* buf, std::size_t count, int peer) {
    return {true, const_cast<void*>(buf), count, peer};
  }
  static P2POp recv_from(void* buf, std::size_t count, int peer) { return {false, buf, count, peer}; }
};

// A collective in flight (iall_reduce, ireduce_scatter, iall_gather). Its buffers belong to it until
// it is done: the caller must neither read the result nor touch the inputs before. test() advances it
// without blocking and says whether it is done (host code that polls during backward is what makes
// MPI's non-blocking collectives progress on CPU); wait() blocks until done, with the communicator's
// timeout. On a device, "done" means the result is ordered before the backend's later work. The
// destructor waits.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual bool test() = 0;
  virtual void wait() = 0;
};

// A transfer that finished before it was returned (a blocking call behind the non-blocking interface).
class FinishedTransfer final : public PendingCollective {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class Communicator {
 public:
  static constexpr int kDefaultTag = 0;

  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // rank inside this group
  virtual int size() const = 0;
  // Global (world) ranks of the group, in group-rank order: for messages.
  virtual const std::vector<int>& world_ranks() const = 0;
  virtual std::string name() const = 0;       // "tp", "dp", ... given at creation
  virtual const char* transport() const = 0;  // "mpi" | "nccl" | "self"
  virtual const CommOptions& options() const = 0;

  virtual void all_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) = 0;
  // send: size() blocks of `count`; recv: this rank's reduced block (count).
  virtual void reduce_scatter(void* recv, const void* send, std::size_t count, ElemType t, ReduceOp op) = 0;
  // send: count elements; recv: size() blocks of `count`, block i from group rank i. send may alias
  // recv's own block (recv + rank()*count).
  virtual void all_gather(void* recv, const void* send, std::size_t count, ElemType t) = 0;
  virtual void broadcast(void* buf, std::size_t count, ElemType t, int root) = 0;
  // Point-to-point. Tags (0 .. 32767) let several streams share a pair of ranks; NCCL has no tags,
  // there sends and receives must pair up in order.
  virtual void send(const void* buf, std::size_t count, ElemType t, int peer, int tag = kDefaultTag) = 0;
  virtual void recv(void* buf, std::size_t count, ElemType t, int peer, int tag = kDefaultTag) = 0;
  // Simultaneous send to one peer and receive from another (pipeline shifts; avoids send/send deadlock).
  virtual void send_recv(const void* send_buf, std::size_t send_count, int dst, void* recv_buf, std::size_t recv_count,
                         int src, ElemType t) = 0;
  // Posts every transfer of `ops` at once and returns when all are done (Megatron's
  // batch_isend_irecv: MPI Isend/Irecv + wait, one NCCL group), so two ranks that exchange in both
  // directions never block each other. No tags: between two ranks the k-th batched send meets the k-th
  // batched receive (a stream of its own, apart from send/recv), so both sides must issue matching
  // transfers in the same order, and every batch's transfers must be able to meet peers' batches
  // without a cycle (pipeline_p2p.h derives such batches from a schedule). Buffers may be device
  // memory; send buffers must not change until the call returns.
  virtual void batch_send_recv(const std::vector<P2POp>& ops, ElemType t) = 0;
  // batch_send_recv started, not finished: the transfers are posted and the call returns; the buffers
  // belong to the pending transfer until its wait() (context parallelism computes a block meanwhile).
  // Default: the blocking call, returning an already finished transfer (NCCL for now); MPI overrides it
  // for host buffers.
  // Inline, like every other member: Communicator has no key function, so the CUDA plugin libraries that
  // derive from it need no typeinfo from the host program.
  virtual std::unique_ptr<PendingCollective> ibatch_send_recv(const std::vector<P2POp>& ops, ElemType t) {
    batch_send_recv(ops, t);
    return std::make_unique<FinishedTransfer>();
  }
  // send: size() blocks of count (block i goes to rank i); recv: size() blocks (block i from rank i).
  virtual void all_to_all(void* recv, const void* send, std::size_t count, ElemType t) = 0;
  // Blocks of different sizes (MPI_Alltoallv; NCCL: one group of sends and receives). send holds
  // send_counts[i] elements for rank i, back to back in rank order; recv receives recv_counts[i] elements
  // from rank i, back to back. Rank j's send_counts[i] must equal rank i's recv_counts[j] (the caller
  // exchanges the counts first, e.g. with all_to_all). Both vectors have size() entries.
  virtual void all_to_all_v(void* recv, const std::vector<std::size_t>& recv_counts, const void* send,
                            const std::vector<std::size_t>& send_counts, ElemType t) = 0;
  virtual void barrier() = 0;

  // Non-blocking twins of all_reduce / reduce_scatter / all_gather (same arguments and results,
  // deterministic mode included). Every rank must start a group's collectives in the same order;
  // several may be in flight at once. Data-parallel gradient buckets overlap backward this way: on
  // NCCL they run on a communication stream that waits for the compute stream's work issued so far.
  virtual std::unique_ptr<PendingCollective> iall_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) = 0;
  virtual std::unique_ptr<PendingCollective> ireduce_scatter(void* recv, const void* send, std::size_t count,
                                                             ElemType t, ReduceOp op) = 0;
  virtual std::unique_ptr<PendingCollective> iall_gather(void* recv, const void* send, std::size_t count,
                                                         ElemType t) = 0;
};

// "mpi, rank-ordered reductions, timeout 600 s": the transport and the options a communicator runs with.
std::string describe(const Communicator& c);

// Collective over c's group, so that every rank takes the same branch after a step that can fail on some of
// them (a file write, a checksum): nullopt on every rank when no rank passes an error, else on every rank
// the error of the lowest group rank that has one ("rank R: <message>" when the group has several ranks).
std::optional<std::string> agree_on_error(Communicator& c, const std::optional<std::string>& mine);

// all_to_all_v's argument check: one send and one receive count per rank of c (an Error naming the group).
void check_all_to_all_v_counts(const Communicator& c, const std::vector<std::size_t>& recv_counts,
                               const std::vector<std::size_t>& send_counts);

// Sum `n` blocks of `count` fp32/fp64/int/bf16 values laid out back to back into out, in block order
// (the deterministic reduction used by the host implementations; out may alias block 0). bf16 rounds
// after every block: ((b0 + b1) + b2) ... each sum rounded to bf16.
void reduce_blocks_in_order(void* out, const void* blocks, int n, std::size_t count, ElemType t, ReduceOp op);

}  // namespace gptrain::parallel
