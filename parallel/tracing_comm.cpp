// TracingComm (see tracing_comm.h).
#include "parallel/tracing_comm.h"

#include <utility>

namespace trainer {

namespace {

// Records its operation when waited for: as one span if it was waited for at once (a blocking
// call), else as an async span from its start and the wait's own span.
class TracedRequest : public CommRequest {
 public:
  TracedRequest(CommRequestPtr inner, TraceRecorder& recorder, std::string op, std::vector<TraceArg> args,
                double start_us, bool at_once)
      : inner_(std::move(inner)),
        recorder_(recorder),
        op_(std::move(op)),
        args_(std::move(args)),
        start_us_(start_us),
        at_once_(at_once) {}
  ~TracedRequest() override {
    if (inner_) wait();
  }
  void wait() override {
    if (!inner_) return;
    const double w0 = recorder_.now_us();
    // Released first: a wait that throws must leave nothing for the destructor to wait on again.
    CommRequestPtr inner = std::move(inner_);
    inner->wait();
    const double w1 = recorder_.now_us();
    if (at_once_) {
      recorder_.complete(op_, "comm", TraceRecorder::kMainThread, start_us_, w1, args_);
      return;
    }
    recorder_.complete("wait " + op_, "comm", TraceRecorder::kMainThread, w0, w1, args_);
    recorder_.async_span(op_, "comm", start_us_, w1, args_);
  }

 private:
  CommRequestPtr inner_;
  TraceRecorder& recorder_;
  std::string op_;
  std::vector<TraceArg> args_;
  double start_us_;
  bool at_once_;
};

}  // namespace

TracingComm::TracingComm(Comm& inner, Comm& host, TraceRecorder& recorder)
    : inner_(&inner), host_(&host), recorder_(recorder) {
  for (int r = 0; r < inner.size(); ++r) peer_world_.push_back(r);
}

TracingComm::TracingComm(std::unique_ptr<Comm> owned, std::unique_ptr<Comm> host, TraceRecorder& recorder,
                         std::vector<int> peer_world)
    : owned_(std::move(owned)),
      host_owned_(std::move(host)),
      inner_(owned_.get()),
      host_(host_owned_ ? host_owned_.get() : owned_.get()),
      recorder_(recorder),
      peer_world_(std::move(peer_world)) {}

std::vector<TraceArg> TracingComm::args(size_t bytes, int peer, bool bucketed) {
  std::vector<TraceArg> a = {TraceArg::str("group", inner_->name()), TraceArg::num("bytes", double(bytes)),
                             TraceArg::num("seq", double(seq_))};
  if (peer >= 0) a.push_back(TraceArg::num("peer", double(peer_world_.at(size_t(peer)))));
  if (bucketed) a.push_back(TraceArg::num("bucket", double(bucket_)));
  return a;
}

template <class Start>
CommRequestPtr TracingComm::traced(const char* op, size_t bytes, int peer, bool bucketed, Start&& start) {
  ++seq_;
  const double t0 = recorder_.now_us();
  CommRequestPtr request = start();
  if (!recorder_.enabled()) return request;
  // A blocking call is no gradient bucket: it neither takes a bucket number nor counts as one.
  if (waited_at_once())
    return std::make_unique<TracedRequest>(std::move(request), recorder_, op, args(bytes, peer, false), t0, true);
  if (bucketed && bucket_step_ != recorder_.step()) {
    bucket_step_ = recorder_.step();
    bucket_ = 0;
  }
  auto out = std::make_unique<TracedRequest>(std::move(request), recorder_, op, args(bytes, peer, bucketed), t0, false);
  if (bucketed) ++bucket_;
  return out;
}

CommRequestPtr TracingComm::all_reduce_async(Tensor buf, ReduceOp op) {
  return traced("all_reduce", buf.bytes(), -1, true, [&] { return inner_->all_reduce_async(buf, op); });
}
CommRequestPtr TracingComm::reduce_scatter_async(Tensor out, Tensor in) {
  return traced("reduce_scatter", in.bytes(), -1, true, [&] { return inner_->reduce_scatter_async(out, in); });
}
CommRequestPtr TracingComm::all_gather_async(Tensor out, Tensor in) {
  return traced("all_gather", out.bytes(), -1, true, [&] { return inner_->all_gather_async(out, in); });
}
CommRequestPtr TracingComm::all_to_all_async(Tensor out, Tensor in) {
  return traced("all_to_all", out.bytes(), -1, true, [&] { return inner_->all_to_all_async(out, in); });
}
CommRequestPtr TracingComm::broadcast_async(Tensor buf, int root) {
  return traced("broadcast", buf.bytes(), -1, false, [&] { return inner_->broadcast_async(buf, root); });
}
CommRequestPtr TracingComm::send_async(Tensor buf, int peer, int tag) {
  return traced("send", buf.bytes(), peer, false, [&] { return inner_->send_async(buf, peer, tag); });
}
CommRequestPtr TracingComm::recv_async(Tensor buf, int peer, int tag) {
  return traced("recv", buf.bytes(), peer, false, [&] { return inner_->recv_async(buf, peer, tag); });
}
CommRequestPtr TracingComm::barrier_async() {
  return traced("barrier", 0, -1, false, [&] { return inner_->barrier_async(); });
}

std::unique_ptr<Comm> TracingComm::split(int color, int key, const std::string& group) {
  std::unique_ptr<Comm> sub = inner_->split(color, key, group);
  std::unique_ptr<Comm> host_sub = host_ == inner_ ? nullptr : host_->split(color, key, group);
  if (!sub) return nullptr;
  Comm& host = host_sub ? *host_sub : *sub;
  int32_t mine = peer_world_.at(size_t(inner_->rank()));
  std::vector<int32_t> all(size_t(host.size()));
  host.all_gather(make_tensor(all.data(), DType::i32, Device::cpu, {int64_t(all.size())}),
                  make_tensor(&mine, DType::i32, Device::cpu, {1}));
  return std::unique_ptr<Comm>(
      new TracingComm(std::move(sub), std::move(host_sub), recorder_, std::vector<int>(all.begin(), all.end())));
}

}  // namespace trainer
