#include "parallel/comm/mpi_communicator.h"

#include "parallel/comm/mpi_roll_call.h"

#include "core/common/error.h"
#include "kernels/backend.h"
#include "kernels/common/dtype_math.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <functional>
#include <thread>

namespace gptrain::parallel {
namespace {

MPI_Datatype mpi_type(ElemType t) {
  switch (t) {
    case ElemType::F32: return MPI_FLOAT;
    case ElemType::F64: return MPI_DOUBLE;
    case ElemType::I32: return MPI_INT32_T;
    case ElemType::I64: return MPI_INT64_T;
    case ElemType::Byte: return MPI_BYTE;
    case ElemType::BF16: return MPI_UINT16_T;
    case ElemType::F16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// MPI has no bf16: user-defined operations over the 16-bit patterns (MPI_UINT16_T), each step rounded
// to bf16 as NCCL's bf16 reductions.
void bf16_sum_fn(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = bf16_add(a[i], b[i]);
}
void bf16_max_fn(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = bf16_max(a[i], b[i]);
}

MPI_Op bf16_op(ReduceOp op) {
  // Created on first use (after MPI_Init, as every communicator is); MPI_Finalize releases them.
  static const MPI_Op sum = [] {
    MPI_Op o;
    check(MPI_Op_create(&bf16_sum_fn, 1, &o) == MPI_SUCCESS, "MPI_Op_create (bf16 sum) failed");
    return o;
  }();
  static const MPI_Op max = [] {
    MPI_Op o;
    check(MPI_Op_create(&bf16_max_fn, 1, &o) == MPI_SUCCESS, "MPI_Op_create (bf16 max) failed");
    return o;
  }();
  return op == ReduceOp::Sum ? sum : max;
}

MPI_Op mpi_op(ReduceOp op, ElemType t) {
  if (t == ElemType::BF16) return bf16_op(op);
  return op == ReduceOp::Sum ? MPI_SUM : MPI_MAX;
}

void check_reducible(ElemType t, const char* op, const std::string& group) {
  check(t != ElemType::Byte && t != ElemType::F16,
        "{} on {}: MPI cannot reduce {} values (use f32/f64/i32/i64/bf16, or NCCL for fp16)", op, group, elem_name(t));
}

std::string ranks_str(const std::vector<int>& r) {
  std::string s = "[";
  for (std::size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + std::to_string(r[i]);
  return s + "]";
}

int as_int(std::size_t n, const char* what) {
  check(n <= static_cast<std::size_t>(INT_MAX), "{}: {} elements exceed MPI's int count; use smaller buckets", what, n);
  return static_cast<int>(n);
}

// Host scratch that grows on demand (one per role, reused across calls).
struct Scratch {
  std::vector<unsigned char> bytes;
  void* get(std::size_t n) {
    if (bytes.size() < n) bytes.resize(n);
    return bytes.data();
  }
};

class MpiCommunicator;
struct MpiPendingCollective;

// A non-blocking collective as a list of steps: each runs once the requests of the previous one are
// complete and may post new requests (a deterministic all-reduce is alltoallv -> ordered sum ->
// point-to-point exchange of the sums) or do host work (sums, copies back to device memory). Owns its host buffers and
// MPI count arrays until done.
struct MpiPendingCollective final : PendingCollective {
  using Step = std::function<void(std::vector<MPI_Request>&)>;
  MpiPendingCollective(MpiCommunicator* c, const char* op) : comm(c), op(op) {}
  ~MpiPendingCollective() override;
  bool test() override;
  void wait() override;
  MpiCommunicator* comm;
  const char* op;
  std::vector<Step> steps;
  std::size_t next = 0;
  std::vector<MPI_Request> reqs;
  bool done = false;
  std::vector<unsigned char> host, scratch;  // staged data; deterministic-mode contributions
  std::vector<int> counts, displs, rcounts, rdispls;
};

class MpiCommunicator final : public Communicator {
 public:
  friend struct MpiPendingCollective;
  MpiCommunicator(MPI_Comm comm, std::vector<int> world_ranks, std::string name, CommOptions opts)
      : comm_(comm), ranks_(std::move(world_ranks)), name_(std::move(name)), opts_(opts) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    // Batched transfers match in order without tags: a communicator of their own keeps them apart
    // from tagged send/recv.
    check(MPI_Comm_dup(comm_, &batch_comm_) == MPI_SUCCESS, "MPI_Comm_dup for group {} failed", name_);
    MPI_Comm_set_errhandler(batch_comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_dup(comm_, &nb_comm_) == MPI_SUCCESS, "MPI_Comm_dup for group {} failed", name_);
    MPI_Comm_set_errhandler(nb_comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    roll_call_ = std::make_unique<MpiRollCall>(comm_);
    device_ = opts_.staging != nullptr && std::string(opts_.staging->name()) != "cpu";
  }
  ~MpiCommunicator() override {
    roll_call_.reset();
    MPI_Comm_free(&batch_comm_);
    MPI_Comm_free(&nb_comm_);
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int>& world_ranks() const override { return ranks_; }
  std::string name() const override { return name_; }
  const char* transport() const override { return "mpi"; }
  const CommOptions& options() const override { return opts_; }

  void all_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) override {
    check_reducible(t, "all_reduce", name_);
    if (count == 0 || size_ == 1) return;
    const std::size_t es = elem_size(t);
    void* h = stage_in(in_, buf, count * es);
    // Chunks keep counts within int and bound the deterministic gather's scratch (size x chunk).
    const std::size_t chunk =
        opts_.deterministic ? std::max<std::size_t>(1, (64u << 20) / (es * size_)) : static_cast<std::size_t>(1) << 30;
    for (std::size_t off = 0; off < count; off += chunk) {
      const std::size_t n = std::min(chunk, count - off);
      char* p = static_cast<char*>(h) + off * es;
      if (opts_.deterministic) {
        void* all = gather_.get(n * es * size_);
        post_wait("all_reduce", [&](MPI_Request* r) {
          return MPI_Iallgather(p, static_cast<int>(n), mpi_type(t), all, static_cast<int>(n), mpi_type(t), comm_, r);
        });
        reduce_blocks_in_order(p, all, size_, n, t, op);
      } else {
        post_wait("all_reduce", [&](MPI_Request* r) {
          return MPI_Iallreduce(MPI_IN_PLACE, p, static_cast<int>(n), mpi_type(t), mpi_op(op, t), comm_, r);
        });
      }
    }
    stage_out(buf, h, count * es);
  }

  void reduce_scatter(void* recv, const void* send, std::size_t count, ElemType t, ReduceOp op) override {
    check_reducible(t, "reduce_scatter", name_);
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "reduce_scatter");
    const void* hs = stage_in(in_, send, count * es * size_);
    void* hr = out_.get(count * es);
    if (size_ == 1) {
      std::memcpy(hr, hs, count * es);
    } else if (opts_.deterministic) {
      void* all = gather_.get(count * es * size_);  // block i: rank i's contribution to my block
      post_wait("reduce_scatter",
                [&](MPI_Request* r) { return MPI_Ialltoall(hs, n, mpi_type(t), all, n, mpi_type(t), comm_, r); });
      reduce_blocks_in_order(hr, all, size_, count, t, op);
    } else {
      post_wait("reduce_scatter", [&](MPI_Request* r) {
        return MPI_Ireduce_scatter_block(hs, hr, n, mpi_type(t), mpi_op(op, t), comm_, r);
      });
    }
    stage_out(recv, hr, count * es);
  }

  void all_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "all_gather");
    const void* hs = stage_in(in_, send, count * es);
    void* hr = out_.get(count * es * size_);
    // Copy our block first: send may alias it, and MPI_IN_PLACE then needs no special case.
    std::memmove(static_cast<char*>(hr) + rank_ * count * es, hs, count * es);
    post_wait("all_gather", [&](MPI_Request* r) {
      return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hr, n, mpi_type(t), comm_, r);
    });
    stage_out(recv, hr, count * es * size_);
  }

  void broadcast(void* buf, std::size_t count, ElemType t, int root) override {
    check(root >= 0 && root < size_, "broadcast on {}: root {} outside the group of {}", name_, root, size_);
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "broadcast");
    void* h = stage_in(in_, buf, count * es);
    post_wait("broadcast", [&](MPI_Request* r) { return MPI_Ibcast(h, n, mpi_type(t), root, comm_, r); });
    stage_out(buf, h, count * es);
  }

  void send(const void* buf, std::size_t count, ElemType t, int peer, int tag) override {
    check_peer(peer, "send");
    const void* h = stage_in(in_, buf, count * elem_size(t));
    post_wait(
        "send", [&](MPI_Request* r) { return MPI_Isend(h, as_int(count, "send"), mpi_type(t), peer, tag, comm_, r); },
        peer);
  }

  void recv(void* buf, std::size_t count, ElemType t, int peer, int tag) override {
    check_peer(peer, "recv");
    void* h = device_ ? out_.get(count * elem_size(t)) : buf;
    post_wait(
        "recv", [&](MPI_Request* r) { return MPI_Irecv(h, as_int(count, "recv"), mpi_type(t), peer, tag, comm_, r); },
        peer);
    stage_out(buf, h, count * elem_size(t));
  }

  void send_recv(const void* send_buf, std::size_t send_count, int dst, void* recv_buf, std::size_t recv_count, int src,
                 ElemType t) override {
    check_peer(dst, "send_recv");
    check_peer(src, "send_recv");
    const std::size_t es = elem_size(t);
    const void* hs = stage_in(in_, send_buf, send_count * es);
    void* hr = device_ ? out_.get(recv_count * es) : recv_buf;
    MPI_Request reqs[2];
    int rc = MPI_Irecv(hr, as_int(recv_count, "send_recv"), mpi_type(t), src, kTag, comm_, &reqs[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(hs, as_int(send_count, "send_recv"), mpi_type(t), dst, kTag, comm_, &reqs[1]);
    check_rc(rc, "send_recv");
    wait_all(reqs, 2, "send_recv", src);
    stage_out(recv_buf, hr, recv_count * es);
  }

  void batch_send_recv(const std::vector<P2POp>& ops, ElemType t) override {
    if (ops.empty()) return;
    const std::size_t es = elem_size(t);
    // Device buffers: each transfer gets its own slice of host scratch.
    std::vector<std::size_t> off(ops.size(), 0);
    std::size_t total = 0;
    std::vector<int> peers;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      check_peer(ops[i].peer, "batch_send_recv");
      peers.push_back(ops[i].peer);
      off[i] = total;
      if (device_) total += ops[i].count * es;
    }
    char* scratch = device_ ? static_cast<char*>(batch_.get(total)) : nullptr;
    auto host = [&](std::size_t i) { return device_ ? static_cast<void*>(scratch + off[i]) : ops[i].buf; };
    std::vector<MPI_Request> reqs(ops.size(), MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const P2POp& o = ops[i];
      const int n = as_int(o.count, "batch_send_recv");
      int rc;
      if (o.send) {
        if (device_ && o.count > 0) opts_.staging->copy_to_host(host(i), o.buf, o.count * es);
        rc = MPI_Isend(host(i), n, mpi_type(t), o.peer, kTag, batch_comm_, &reqs[i]);
      } else {
        rc = MPI_Irecv(host(i), n, mpi_type(t), o.peer, kTag, batch_comm_, &reqs[i]);
      }
      if (rc != MPI_SUCCESS) {
        for (std::size_t j = 0; j < i; ++j) MPI_Cancel(&reqs[j]);
        check_rc(rc, "batch_send_recv");
      }
    }
    wait_all(reqs.data(), static_cast<int>(reqs.size()), "batch_send_recv", -1, &peers);
    if (!device_) return;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (!ops[i].send && ops[i].count > 0) opts_.staging->copy_to_device(ops[i].buf, host(i), ops[i].count * es);
  }

  std::unique_ptr<PendingCollective> ibatch_send_recv(const std::vector<P2POp>& ops, ElemType t) override {
    // Device buffers go through host scratch that one blocking call owns: no overlap there.
    if (device_ || ops.empty()) return Communicator::ibatch_send_recv(ops, t);
    for (const P2POp& o : ops) check_peer(o.peer, "ibatch_send_recv");
    auto p = std::make_unique<MpiPendingCollective>(this, "ibatch_send_recv");
    // The same communicator and tag as batch_send_recv: batched transfers of both kinds meet in issue order.
    p->steps.push_back([ops, t, this](std::vector<MPI_Request>& reqs) {
      for (const P2POp& o : ops) {
        const int n = as_int(o.count, "ibatch_send_recv");
        reqs.emplace_back();
        check_rc(o.send ? MPI_Isend(o.buf, n, mpi_type(t), o.peer, kTag, batch_comm_, &reqs.back())
                        : MPI_Irecv(o.buf, n, mpi_type(t), o.peer, kTag, batch_comm_, &reqs.back()),
                 "ibatch_send_recv");
      }
    });
    p->test();  // posts the transfers
    return p;
  }

  void all_to_all(void* recv, const void* send, std::size_t count, ElemType t) override {
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "all_to_all");
    const void* hs = stage_in(in_, send, count * es * size_);
    void* hr = out_.get(count * es * size_);
    post_wait("all_to_all",
              [&](MPI_Request* r) { return MPI_Ialltoall(hs, n, mpi_type(t), hr, n, mpi_type(t), comm_, r); });
    stage_out(recv, hr, count * es * size_);
  }

  void all_to_all_v(void* recv, const std::vector<std::size_t>& recv_counts, const void* send,
                    const std::vector<std::size_t>& send_counts, ElemType t) override {
    check_all_to_all_v_counts(*this, recv_counts, send_counts);
    const std::size_t es = elem_size(t);
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    std::size_t send_total = 0, recv_total = 0;
    for (int i = 0; i < size_; ++i) {
      sc[i] = as_int(send_counts[i], "all_to_all_v");
      rc[i] = as_int(recv_counts[i], "all_to_all_v");
      sd[i] = as_int(send_total, "all_to_all_v");
      rd[i] = as_int(recv_total, "all_to_all_v");
      send_total += send_counts[i];
      recv_total += recv_counts[i];
    }
    const void* hs = stage_in(in_, send, send_total * es);
    void* hr = device_ ? out_.get(recv_total * es) : recv;
    post_wait("all_to_all_v", [&](MPI_Request* r) {
      return MPI_Ialltoallv(hs, sc.data(), sd.data(), mpi_type(t), hr, rc.data(), rd.data(), mpi_type(t), comm_, r);
    });
    stage_out(recv, hr, recv_total * es);
  }

  void barrier() override {
    post_wait("barrier", [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }

  std::unique_ptr<PendingCollective> iall_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) override {
    check_reducible(t, "iall_reduce", name_);
    auto p = std::make_unique<MpiPendingCollective>(this, "iall_reduce");
    if (count == 0 || size_ == 1) return p;
    const std::size_t es = elem_size(t);
    char* h = static_cast<char*>(own_stage_in(*p, buf, count * es));
    MpiPendingCollective* q = p.get();
    if (!opts_.deterministic) {
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        for (std::size_t off = 0; off < count; off += kMaxCount) {
          reqs.emplace_back();
          check_rc(MPI_Iallreduce(MPI_IN_PLACE, h + off * es, static_cast<int>(std::min(kMaxCount, count - off)),
                                  mpi_type(t), mpi_op(op, t), comm_, &reqs.back()),
                   "iall_reduce");
        }
      });
    } else {
      // Rank r sums block r of everyone's data in rank order, then the blocks are gathered: the
      // same bits as all_reduce's gather-and-sum, with one block of scratch per rank.
      const std::size_t base = (count + size_ - 1) / size_;
      auto off_of = [=](int r) { return std::min(count, static_cast<std::size_t>(r) * base); };
      for (int r = 0; r < size_; ++r) {
        p->counts.push_back(as_int(off_of(r + 1) - off_of(r), "iall_reduce"));
        p->displs.push_back(as_int(off_of(r), "iall_reduce"));
      }
      const int mine = p->counts[rank_];
      for (int r = 0; r < size_; ++r) {
        p->rcounts.push_back(mine);
        p->rdispls.push_back(r * mine);
      }
      p->scratch.resize(std::max<std::size_t>(1, static_cast<std::size_t>(mine) * size_ * es));
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        check_rc(MPI_Ialltoallv(h, q->counts.data(), q->displs.data(), mpi_type(t), q->scratch.data(),
                                q->rcounts.data(), q->rdispls.data(), mpi_type(t), comm_, &reqs.back()),
                 "iall_reduce");
      });
      // The second phase starts when the first completes, which differs between ranks: a collective
      // posted then could meet another call's on a peer. Point-to-point messages with this call's own
      // tag (calls are numbered in issue order, the same on every rank) match whatever the order.
      const int tag = static_cast<int>(nb_calls_++ % kNonblockingTags);
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        reduce_blocks_in_order(h + q->displs[rank_] * es, q->scratch.data(), size_, static_cast<std::size_t>(mine), t,
                               op);
        for (int r = 0; r < size_; ++r) {
          if (r == rank_) continue;
          reqs.emplace_back();
          check_rc(MPI_Irecv(h + q->displs[r] * es, q->counts[r], mpi_type(t), r, tag, nb_comm_, &reqs.back()),
                   "iall_reduce");
          reqs.emplace_back();
          check_rc(MPI_Isend(h + q->displs[rank_] * es, mine, mpi_type(t), r, tag, nb_comm_, &reqs.back()),
                   "iall_reduce");
        }
      });
    }
    add_stage_out(*p, buf, h, count * es);
    p->test();  // posts the first step
    return p;
  }

  std::unique_ptr<PendingCollective> ireduce_scatter(void* recv, const void* send, std::size_t count, ElemType t,
                                                     ReduceOp op) override {
    check_reducible(t, "ireduce_scatter", name_);
    auto p = std::make_unique<MpiPendingCollective>(this, "ireduce_scatter");
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "ireduce_scatter");
    const void* hs = own_stage_in(*p, send, count * es * size_);
    void* hr = recv;
    if (device_) {
      p->scratch.resize(count * es * (opts_.deterministic ? size_ + 1 : 1));
      hr = p->scratch.data() + (opts_.deterministic ? count * es * size_ : 0);
    }
    MpiPendingCollective* q = p.get();
    if (size_ == 1) {
      if (hr != hs) std::memcpy(hr, hs, count * es);
    } else if (opts_.deterministic) {
      if (!device_) p->scratch.resize(std::max<std::size_t>(1, count * es * size_));  // block i: rank i's part
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        check_rc(MPI_Ialltoall(hs, n, mpi_type(t), q->scratch.data(), n, mpi_type(t), comm_, &reqs.back()),
                 "ireduce_scatter");
      });
      p->steps.push_back(
          [=, this](std::vector<MPI_Request>&) { reduce_blocks_in_order(hr, q->scratch.data(), size_, count, t, op); });
    } else {
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        check_rc(MPI_Ireduce_scatter_block(hs, hr, n, mpi_type(t), mpi_op(op, t), comm_, &reqs.back()),
                 "ireduce_scatter");
      });
    }
    add_stage_out(*p, recv, hr, count * es);
    p->test();
    return p;
  }

  std::unique_ptr<PendingCollective> iall_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    auto p = std::make_unique<MpiPendingCollective>(this, "iall_gather");
    const std::size_t es = elem_size(t);
    const int n = as_int(count, "iall_gather");
    char* hr = static_cast<char*>(recv);
    char* block = hr + rank_ * count * es;
    if (device_) {
      p->host.resize(std::max<std::size_t>(1, count * es * size_));
      hr = reinterpret_cast<char*>(p->host.data());
      if (count > 0) opts_.staging->copy_to_host(hr + rank_ * count * es, send, count * es);
    } else if (block != send) {
      std::memmove(block, send, count * es);
    }
    if (size_ > 1) {
      p->steps.push_back([=, this](std::vector<MPI_Request>& reqs) {
        reqs.emplace_back();
        check_rc(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, hr, n, mpi_type(t), comm_, &reqs.back()),
                 "iall_gather");
      });
    }
    add_stage_out(*p, recv, hr, count * es * size_);
    p->test();
    return p;
  }

 private:
  static constexpr int kTag = 7;

  void check_peer(int peer, const char* op) const {
    check(peer >= 0 && peer < size_ && peer != rank_, "{} on {}: peer {} invalid in a group of {} (I am {})", op, name_,
          peer, size_, rank_);
  }
  void check_rc(int rc, const char* op) const {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fail("MPI {} on group {} {} failed: {}", op, name_, ranks_str(ranks_), std::string(msg, len));
  }

  template <typename Post>
  void post_wait(const char* op, Post post, int peer = -1) {
    MPI_Request req;
    check_rc(post(&req), op);
    wait_all(&req, 1, op, peer);
  }

  // Poll until done; after the timeout, fail naming the call, the group and (for p2p) the peer.
  // peers: group ranks waited on (batched transfers), instead of `peer`.
  void wait_all(MPI_Request* reqs, int n, const char* op, int peer, const std::vector<int>* peers = nullptr) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto deadline = start + std::chrono::duration<double>(opts_.timeout_seconds);
    for (long polls = 0;; ++polls) {
      int done = 0;
      check_rc(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE), op);
      if (done) return;
      if (polls < 2000) {
        std::this_thread::yield();
        continue;
      }
      roll_call_->answer();  // peers that timed out ask who is here
      if (clock::now() > deadline) {
        std::string who = peer >= 0 ? fmt::format("peer rank {} (world rank {})", peer, ranks_[peer]) : missing_ranks();
        if (peers != nullptr) {
          std::vector<int> world;
          for (int p : *peers) world.push_back(ranks_[p]);
          who = fmt::format("peer world ranks {}", ranks_str(world));
        }
        fail(
            "{} on group {} (world rank {}) timed out after {:.0f} s waiting for {}: a peer died or is stuck "
            "(--distributed-timeout-minutes)",
            op, name_, ranks_[rank_], opts_.timeout_seconds, who);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(polls < 20000 ? 5 : 200));
    }
  }

  // After a collective timed out: the world ranks that did not answer the roll call (they never arrived),
  // or the whole group when every rank answered (they wait in different calls).
  std::string missing_ranks() {
    const double grace = std::clamp(opts_.timeout_seconds / 10.0, 1.0, 10.0);
    std::vector<int> world;
    for (int p : roll_call_->absent(grace)) world.push_back(ranks_[p]);
    if (world.empty())
      return fmt::format("ranks {} (all of them answer: they wait in different calls)", ranks_str(ranks_));
    if (world.size() == 1) return fmt::format("world rank {}, which did not arrive", world[0]);
    return fmt::format("world ranks {}, which did not arrive", ranks_str(world));
  }

  // Device buffers go through host scratch; host buffers are used in place.
  const void* stage_in(Scratch& s, const void* p, std::size_t bytes) {
    if (!device_ || bytes == 0) return p;
    void* h = s.get(bytes);
    opts_.staging->copy_to_host(h, p, bytes);
    return h;
  }
  void* stage_in(Scratch& s, void* p, std::size_t bytes) {
    return const_cast<void*>(stage_in(s, static_cast<const void*>(p), bytes));
  }
  void stage_out(void* dst, const void* h, std::size_t bytes) {
    if (dst == h || bytes == 0) return;
    if (device_) {
      opts_.staging->copy_to_device(dst, h, bytes);
    } else {
      std::memcpy(dst, h, bytes);
    }
  }

  // Non-blocking calls stage device data into a buffer the pending call owns (several are in flight).
  void* own_stage_in(MpiPendingCollective& p, const void* src, std::size_t bytes);
  void add_stage_out(MpiPendingCollective& p, void* dst, const void* h, std::size_t bytes);

  static constexpr std::size_t kMaxCount = static_cast<std::size_t>(1) << 30;  // elements per MPI call
  static constexpr uint64_t kNonblockingTags = 32000;  // below MPI's guaranteed tag bound (32767)

  MPI_Comm comm_;
  MPI_Comm batch_comm_ = MPI_COMM_NULL;     // batch_send_recv's own message stream
  MPI_Comm nb_comm_ = MPI_COMM_NULL;        // the non-blocking calls' point-to-point phases
  uint64_t nb_calls_ = 0;                   // non-blocking calls issued (their tags)
  std::unique_ptr<MpiRollCall> roll_call_;  // who is missing after a timeout
  std::vector<int> ranks_;
  std::string name_;
  CommOptions opts_;
  int rank_ = 0;
  int size_ = 1;
  bool device_ = false;
  Scratch in_, out_, gather_, batch_;
};

bool MpiPendingCollective::test() {
  while (!done) {
    if (!reqs.empty()) {
      int complete = 0;
      comm->check_rc(MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &complete, MPI_STATUSES_IGNORE), op);
      if (!complete) return false;
      reqs.clear();
    }
    if (next == steps.size()) {
      done = true;
    } else {
      steps[next++](reqs);
    }
  }
  return true;
}

void MpiPendingCollective::wait() {
  // Each step's requests within the communicator's timeout (wait_all fails naming the group).
  while (!test()) comm->wait_all(reqs.data(), static_cast<int>(reqs.size()), op, -1);
}

MpiPendingCollective::~MpiPendingCollective() {
  if (done) return;
  try {
    wait();
  } catch (const std::exception&) {
    // Already failing (timeout): the job ends; never throw from a destructor.
  }
}

void* MpiCommunicator::own_stage_in(MpiPendingCollective& p, const void* src, std::size_t bytes) {
  if (!device_) return const_cast<void*>(src);
  p.host.resize(std::max<std::size_t>(bytes, 1));
  if (bytes > 0) opts_.staging->copy_to_host(p.host.data(), src, bytes);
  return p.host.data();
}

void MpiCommunicator::add_stage_out(MpiPendingCollective& p, void* dst, const void* h, std::size_t bytes) {
  if (dst == h || bytes == 0) return;
  p.steps.push_back([=, this](std::vector<MPI_Request>&) { stage_out(dst, h, bytes); });
}

}  // namespace

std::unique_ptr<Communicator> make_mpi_group(const std::vector<int>& world_ranks, const std::string& name,
                                             const CommOptions& opts) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  auto it = std::find(world_ranks.begin(), world_ranks.end(), me);
  const bool member = it != world_ranks.end();
  // Colour: the group's first world rank (identical on every member); key: position in the group.
  const int color = member ? world_ranks.front() : MPI_UNDEFINED;
  const int key = member ? static_cast<int>(it - world_ranks.begin()) : 0;
  MPI_Comm comm = MPI_COMM_NULL;
  int rc = MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm);
  check(rc == MPI_SUCCESS, "MPI_Comm_split for group {} failed (code {})", name, rc);
  if (!member) return nullptr;
  int size = 0;
  MPI_Comm_size(comm, &size);
  check(size == static_cast<int>(world_ranks.size()),
        "group {} {}: {} ranks joined, {} expected (groups of one kind must not overlap)", name, ranks_str(world_ranks),
        size, world_ranks.size());
  return std::make_unique<MpiCommunicator>(comm, world_ranks, name, opts);
}

std::unique_ptr<Communicator> make_mpi_world(const CommOptions& opts) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<int> all(size);
  for (int i = 0; i < size; ++i) all[i] = i;
  return make_mpi_group(all, "world", opts);
}

}  // namespace gptrain::parallel
