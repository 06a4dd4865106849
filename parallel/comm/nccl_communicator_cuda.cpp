#include "parallel/comm/nccl_communicator.h"

#include "core/common/error.h"
#include "kernels/cuda/cuda_backend.h"
#include "parallel/comm/nccl_reduce.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace gptrain::parallel {
namespace {

ncclDataType_t nccl_type(ElemType t) {
  switch (t) {
    case ElemType::F32: return ncclFloat32;
    case ElemType::F64: return ncclFloat64;
    case ElemType::I32: return ncclInt32;
    case ElemType::I64: return ncclInt64;
    case ElemType::Byte: return ncclUint8;
    case ElemType::BF16: return ncclBfloat16;
    case ElemType::F16: return ncclFloat16;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : ncclMax; }

// The stream collectives order with: the caller's, else the CUDA backend's (its kernels run on a
// non-blocking stream, which the legacy default stream would not wait for), else the default stream.
cudaStream_t compute_stream_of(const CommOptions& opts, void* stream) {
  if (stream != nullptr) return static_cast<cudaStream_t>(stream);
  if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(opts.staging)) return cuda->stream();
  return nullptr;
}

class NcclCommunicator;

// A collective enqueued on the communicator's communication stream; done once its end event has
// passed (polled, so a stuck peer ends in an Error after the timeout).
class NcclPendingCollective final : public PendingCollective {
 public:
  NcclPendingCollective(NcclCommunicator* comm, const char* op, cudaEvent_t end) : comm_(comm), op_(op), end_(end) {}
  ~NcclPendingCollective() override;
  bool test() override;
  void wait() override;

 private:
  NcclCommunicator* comm_;
  const char* op_;
  cudaEvent_t end_;
  bool done_ = false;
};

class NcclCommunicator final : public Communicator {
 public:
  friend class NcclPendingCollective;
  NcclCommunicator(Communicator& mpi_group, const CommOptions& opts, void* stream)
      : ranks_(mpi_group.world_ranks()),
        name_(mpi_group.name()),
        opts_(opts),
        stream_(compute_stream_of(opts, stream)) {
    rank_ = mpi_group.rank();
    size_ = mpi_group.size();
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    mpi_group.broadcast(&id, sizeof(id), ElemType::Byte, 0);
    nccl_check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
  }
  ~NcclCommunicator() override {
    if (comm_stream_ != nullptr) {
      cudaStreamSynchronize(comm_stream_);
      cudaStreamDestroy(comm_stream_);
    }
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (comm_ != nullptr) ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int>& world_ranks() const override { return ranks_; }
  std::string name() const override { return name_ + "/nccl"; }
  const char* transport() const override { return "nccl"; }
  const CommOptions& options() const override { return opts_; }

  void all_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) override {
    if (count == 0 || size_ == 1) return;
    check_reducible(t, "all_reduce");
    if (opts_.deterministic) {
      void* all = scratch(count * elem_size(t) * size_);
      nccl_check(ncclAllGather(buf, all, count, nccl_type(t), comm_, stream_), "all_reduce");
      device_reduce(buf, all, count, t, op);
    } else {
      nccl_check(ncclAllReduce(buf, buf, count, nccl_type(t), nccl_op(op), comm_, stream_), "all_reduce");
    }
    wait("all_reduce");
  }

  void reduce_scatter(void* recv, const void* send, std::size_t count, ElemType t, ReduceOp op) override {
    check_reducible(t, "reduce_scatter");
    if (opts_.deterministic && size_ > 1) {
      // all_to_all: block i of `all` is rank i's contribution to my block.
      void* all = scratch(count * elem_size(t) * size_);
      post_all_to_all(all, send, count, t);
      device_reduce(recv, all, count, t, op);
    } else {
      nccl_check(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op), comm_, stream_), "reduce_scatter");
    }
    wait("reduce_scatter");
  }

  void all_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    nccl_check(ncclAllGather(send, recv, count, nccl_type(t), comm_, stream_), "all_gather");
    wait("all_gather");
  }

  void broadcast(void* buf, std::size_t count, ElemType t, int root) override {
    check(root >= 0 && root < size_, "broadcast on {}: root {} outside the group of {}", name_, root, size_);
    nccl_check(ncclBroadcast(buf, buf, count, nccl_type(t), root, comm_, stream_), "broadcast");
    wait("broadcast");
  }

  void send(const void* buf, std::size_t count, ElemType t, int peer, int) override {
    nccl_check(ncclSend(buf, count, nccl_type(t), peer, comm_, stream_), "send");
    wait("send", peer);
  }

  void recv(void* buf, std::size_t count, ElemType t, int peer, int) override {
    nccl_check(ncclRecv(buf, count, nccl_type(t), peer, comm_, stream_), "recv");
    wait("recv", peer);
  }

  void send_recv(const void* send_buf, std::size_t send_count, int dst, void* recv_buf, std::size_t recv_count, int src,
                 ElemType t) override {
    nccl_check(ncclGroupStart(), "send_recv");
    nccl_check(ncclSend(send_buf, send_count, nccl_type(t), dst, comm_, stream_), "send_recv");
    nccl_check(ncclRecv(recv_buf, recv_count, nccl_type(t), src, comm_, stream_), "send_recv");
    nccl_check(ncclGroupEnd(), "send_recv");
    wait("send_recv", src);
  }

  // One NCCL group: the sends and receives progress together, so peers exchanging in both directions
  // cannot block each other; NCCL matches a pair's transfers in issue order.
  void batch_send_recv(const std::vector<P2POp>& ops, ElemType t) override {
    if (ops.empty()) return;
    for (const P2POp& o : ops)
      check(o.peer >= 0 && o.peer < size_ && o.peer != rank_,
            "batch_send_recv on {}: peer {} invalid in a group of {} (I am {})", name_, o.peer, size_, rank_);
    nccl_check(ncclGroupStart(), "batch_send_recv");
    for (const P2POp& o : ops) {
      const ncclResult_t r = o.send ? ncclSend(o.buf, o.count, nccl_type(t), o.peer, comm_, stream_)
                                    : ncclRecv(o.buf, o.count, nccl_type(t), o.peer, comm_, stream_);
      if (r != ncclSuccess) {
        ncclGroupEnd();
        nccl_check(r, "batch_send_recv");
      }
    }
    nccl_check(ncclGroupEnd(), "batch_send_recv");
    wait("batch_send_recv", ops.size() == 1 ? ops[0].peer : -1);
  }

  void all_to_all(void* recv, const void* send, std::size_t count, ElemType t) override {
    post_all_to_all(recv, send, count, t);
    wait("all_to_all");
  }

  // One NCCL group of a send and a receive per peer (NCCL has no alltoallv). Not yet run on a GPU.
  void all_to_all_v(void* recv, const std::vector<std::size_t>& recv_counts, const void* send,
                    const std::vector<std::size_t>& send_counts, ElemType t) override {
    check_all_to_all_v_counts(*this, recv_counts, send_counts);
    const std::size_t es = elem_size(t);
    std::size_t send_off = 0, recv_off = 0;
    nccl_check(ncclGroupStart(), "all_to_all_v");
    for (int p = 0; p < size_; ++p) {
      if (send_counts[p] > 0)
        nccl_check(
            ncclSend(static_cast<const char*>(send) + send_off * es, send_counts[p], nccl_type(t), p, comm_, stream_),
            "all_to_all_v");
      if (recv_counts[p] > 0)
        nccl_check(ncclRecv(static_cast<char*>(recv) + recv_off * es, recv_counts[p], nccl_type(t), p, comm_, stream_),
                   "all_to_all_v");
      send_off += send_counts[p];
      recv_off += recv_counts[p];
    }
    nccl_check(ncclGroupEnd(), "all_to_all_v");
    wait("all_to_all_v");
  }

  void barrier() override {
    int32_t* one = static_cast<int32_t*>(scratch(sizeof(int32_t)));
    cuda_check(cudaMemsetAsync(one, 0, sizeof(int32_t), stream_), "barrier");
    nccl_check(ncclAllReduce(one, one, 1, ncclInt32, ncclSum, comm_, stream_), "barrier");
    wait("barrier");
  }

  // Non-blocking collectives run on a communication stream of their own, after an event recorded on
  // the compute stream at the call: the work issued so far (the gradients of a bucket) is in, and the
  // kernels issued later (backward of the earlier layers) overlap the transfer. Deterministic mode
  // gets its per-call scratch from the stream-ordered allocator, freed on the same stream.
  std::unique_ptr<PendingCollective> iall_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) override {
    check_reducible(t, "iall_reduce");
    cudaStream_t s = begin_async("iall_reduce");
    if (count > 0 && size_ > 1) {
      if (opts_.deterministic) {
        void* all = async_scratch(count * elem_size(t) * size_, s, "iall_reduce");
        nccl_check(ncclAllGather(buf, all, count, nccl_type(t), comm_, s), "iall_reduce");
        device_reduce(buf, all, count, t, op, s);
        cuda_check(cudaFreeAsync(all, s), "iall_reduce scratch");
      } else {
        nccl_check(ncclAllReduce(buf, buf, count, nccl_type(t), nccl_op(op), comm_, s), "iall_reduce");
      }
    }
    return end_async("iall_reduce");
  }

  std::unique_ptr<PendingCollective> ireduce_scatter(void* recv, const void* send, std::size_t count, ElemType t,
                                                     ReduceOp op) override {
    check_reducible(t, "ireduce_scatter");
    cudaStream_t s = begin_async("ireduce_scatter");
    if (opts_.deterministic && size_ > 1) {
      void* all = async_scratch(count * elem_size(t) * size_, s, "ireduce_scatter");
      post_all_to_all(all, send, count, t, s);
      device_reduce(recv, all, count, t, op, s);
      cuda_check(cudaFreeAsync(all, s), "ireduce_scatter scratch");
    } else {
      nccl_check(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op), comm_, s), "ireduce_scatter");
    }
    return end_async("ireduce_scatter");
  }

  std::unique_ptr<PendingCollective> iall_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    cudaStream_t s = begin_async("iall_gather");
    nccl_check(ncclAllGather(send, recv, count, nccl_type(t), comm_, s), "iall_gather");
    return end_async("iall_gather");
  }

 private:
  void post_all_to_all(void* recv, const void* send, std::size_t count, ElemType t) {
    post_all_to_all(recv, send, count, t, stream_);
  }
  void post_all_to_all(void* recv, const void* send, std::size_t count, ElemType t, cudaStream_t s) {
    const std::size_t bytes = count * elem_size(t);
    nccl_check(ncclGroupStart(), "all_to_all");
    for (int p = 0; p < size_; ++p) {
      nccl_check(ncclSend(static_cast<const char*>(send) + p * bytes, count, nccl_type(t), p, comm_, s), "all_to_all");
      nccl_check(ncclRecv(static_cast<char*>(recv) + p * bytes, count, nccl_type(t), p, comm_, s), "all_to_all");
    }
    nccl_check(ncclGroupEnd(), "all_to_all");
  }

  void device_reduce(void* out, const void* blocks, std::size_t count, ElemType t, ReduceOp op) {
    device_reduce(out, blocks, count, t, op, stream_);
  }
  void device_reduce(void* out, const void* blocks, std::size_t count, ElemType t, ReduceOp op, cudaStream_t s) {
    const char* err = reduce_blocks_in_order_device(out, blocks, size_, count, t, op, s);
    check(err == nullptr, "deterministic reduction on {}: {}", name_, err ? err : "");
  }

  // The communication stream, made to wait for everything issued on the compute stream so far.
  cudaStream_t begin_async(const char* op) {
    if (comm_stream_ == nullptr) cuda_check(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), op);
    cudaEvent_t ready = nullptr;
    cuda_check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), op);
    cuda_check(cudaEventRecord(ready, stream_), op);
    cuda_check(cudaStreamWaitEvent(comm_stream_, ready, 0), op);
    cuda_check(cudaEventDestroy(ready), op);  // released once the wait has passed
    return comm_stream_;
  }
  std::unique_ptr<PendingCollective> end_async(const char* op) {
    cudaEvent_t end = nullptr;
    cuda_check(cudaEventCreateWithFlags(&end, cudaEventDisableTiming), op);
    cuda_check(cudaEventRecord(end, comm_stream_), op);
    return std::make_unique<NcclPendingCollective>(this, op, end);
  }
  void* async_scratch(std::size_t bytes, cudaStream_t s, const char* op) {
    void* p = nullptr;
    cuda_check(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 1), s), op);
    return p;
  }

  void check_reducible(ElemType t, const char* op) const {
    check(t != ElemType::Byte, "{} on {}: reduction over untyped bytes", op, name_);
    check(!opts_.deterministic || t != ElemType::F16, "{} on {}: deterministic reductions of fp16 are not supported",
          op, name_);
  }

  void* scratch(std::size_t bytes) {
    if (bytes > scratch_bytes_) {
      // Earlier work on the stream may still read the old scratch.
      cuda_check(cudaStreamSynchronize(stream_), "scratch");
      if (scratch_ != nullptr) cudaFree(scratch_);
      scratch_ = nullptr;
      cuda_check(cudaMalloc(&scratch_, bytes), "scratch allocation");
      scratch_bytes_ = bytes;
    }
    return scratch_;
  }

  // Completion by polling: a peer that never joins ends in an Error after the timeout, not a hang.
  void wait(const char* op, int peer = -1) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(opts_.timeout_seconds);
    for (long polls = 0;; ++polls) {
      cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) fail("{} on {}: CUDA error {}", op, name_, cudaGetErrorString(e));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess) fail("{} on {}: NCCL error {}", op, name_, ncclGetErrorString(async));
      if (clock::now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        std::string who = peer >= 0 ? fmt::format("peer world rank {}", ranks_[peer]) : "the group's ranks";
        fail(
            "{} on group {} (world rank {}) timed out after {:.0f} s waiting for {}: a peer died or is stuck "
            "(--distributed-timeout-minutes)",
            op, name_, ranks_[rank_], opts_.timeout_seconds, who);
      }
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  void nccl_check(ncclResult_t r, const char* op) const {
    if (r != ncclSuccess) fail("NCCL {} on group {} failed: {}", op, name_, ncclGetErrorString(r));
  }
  void cuda_check(cudaError_t e, const char* op) const {
    if (e != cudaSuccess) fail("CUDA {} on group {} failed: {}", op, name_, cudaGetErrorString(e));
  }

  std::vector<int> ranks_;
  std::string name_;
  CommOptions opts_;
  cudaStream_t stream_;                 // compute stream: blocking calls run here
  cudaStream_t comm_stream_ = nullptr;  // non-blocking calls (made on first use)
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
};

bool NcclPendingCollective::test() {
  if (done_) return true;
  const cudaError_t e = cudaEventQuery(end_);
  if (e == cudaSuccess) {
    done_ = true;
    return true;
  }
  if (e != cudaErrorNotReady) fail("{} on {}: CUDA error {}", op_, comm_->name_, cudaGetErrorString(e));
  ncclResult_t async = ncclSuccess;
  if (comm_->comm_ != nullptr) ncclCommGetAsyncError(comm_->comm_, &async);
  if (async != ncclSuccess) fail("{} on {}: NCCL error {}", op_, comm_->name_, ncclGetErrorString(async));
  return false;
}

void NcclPendingCollective::wait() {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(comm_->opts_.timeout_seconds);
  for (long polls = 0; !test(); ++polls) {
    if (clock::now() > deadline) {
      if (comm_->comm_ != nullptr) ncclCommAbort(comm_->comm_);
      comm_->comm_ = nullptr;
      fail(
          "{} on group {} (world rank {}) timed out after {:.0f} s waiting for the group's ranks: a peer died or "
          "is stuck (--distributed-timeout-minutes)",
          op_, comm_->name_, comm_->ranks_[comm_->rank_], comm_->opts_.timeout_seconds);
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

NcclPendingCollective::~NcclPendingCollective() {
  try {
    wait();
  } catch (const std::exception&) {
    // Already failing (timeout or NCCL error): never throw from a destructor.
  }
  cudaEventDestroy(end_);
}

}  // namespace

}  // namespace gptrain::parallel

gptrain::parallel::Communicator* gptrain_nccl_make_group(gptrain::parallel::Communicator* mpi_group,
                                                         const gptrain::parallel::CommOptions* opts, void* stream) {
  return new gptrain::parallel::NcclCommunicator(*mpi_group, *opts, stream);
}
