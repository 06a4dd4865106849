#include "parallel/comm/self_communicator.h"

#include "core/common/error.h"
#include "kernels/backend.h"

#include <cstring>

namespace gptrain::parallel {
namespace {

class DonePending final : public PendingCollective {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class SelfCommunicator final : public Communicator {
 public:
  SelfCommunicator(std::string name, CommOptions opts) : name_(std::move(name)), opts_(opts) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::vector<int>& world_ranks() const override { return ranks_; }
  std::string name() const override { return name_; }
  const char* transport() const override { return "self"; }
  const CommOptions& options() const override { return opts_; }

  void all_reduce(void*, std::size_t, ElemType, ReduceOp) override {}
  void reduce_scatter(void* recv, const void* send, std::size_t count, ElemType t, ReduceOp) override {
    copy(recv, send, count * elem_size(t));
  }
  void all_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    copy(recv, send, count * elem_size(t));
  }
  void broadcast(void*, std::size_t, ElemType, int root) override {
    check(root == 0, "broadcast on {} (one rank): root {} does not exist", name_, root);
  }
  void send(const void*, std::size_t, ElemType, int peer, int) override { no_peer("send", peer); }
  void recv(void*, std::size_t, ElemType, int peer, int) override { no_peer("recv", peer); }
  void send_recv(const void*, std::size_t, int dst, void*, std::size_t, int, ElemType) override {
    no_peer("send_recv", dst);
  }
  void batch_send_recv(const std::vector<P2POp>& ops, ElemType) override {
    if (!ops.empty()) no_peer("batch_send_recv", ops.front().peer);
  }
  void all_to_all(void* recv, const void* send, std::size_t count, ElemType t) override {
    copy(recv, send, count * elem_size(t));
  }
  void all_to_all_v(void* recv, const std::vector<std::size_t>& recv_counts, const void* send,
                    const std::vector<std::size_t>& send_counts, ElemType t) override {
    check(recv_counts.size() == 1 && send_counts.size() == 1 && recv_counts[0] == send_counts[0],
          "all_to_all_v on {} (one rank): counts must be one entry, sent = received", name_);
    copy(recv, send, send_counts[0] * elem_size(t));
  }
  void barrier() override {}

  std::unique_ptr<PendingCollective> iall_reduce(void* buf, std::size_t count, ElemType t, ReduceOp op) override {
    all_reduce(buf, count, t, op);
    return std::make_unique<DonePending>();
  }
  std::unique_ptr<PendingCollective> ireduce_scatter(void* recv, const void* send, std::size_t count, ElemType t,
                                                     ReduceOp op) override {
    reduce_scatter(recv, send, count, t, op);
    return std::make_unique<DonePending>();
  }
  std::unique_ptr<PendingCollective> iall_gather(void* recv, const void* send, std::size_t count, ElemType t) override {
    all_gather(recv, send, count, t);
    return std::make_unique<DonePending>();
  }

 private:
  void copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes == 0 || dst == src) return;
    if (opts_.staging != nullptr)
      opts_.staging->copy(dst, src, bytes);
    else
      std::memmove(dst, src, bytes);
  }
  [[noreturn]] void no_peer(const char* op, int peer) const {
    fail("{} on {}: a group of one rank has no peer {} (internal error: point-to-point in a world of one)", op, name_,
         peer);
  }

  std::string name_;
  CommOptions opts_;
  std::vector<int> ranks_{0};
};

}  // namespace

std::unique_ptr<Communicator> make_self_communicator(const std::string& name, const CommOptions& opts) {
  return std::make_unique<SelfCommunicator>(name, opts);
}

}  // namespace gptrain::parallel
