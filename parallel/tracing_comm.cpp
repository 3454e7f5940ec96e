// TracingComm (see tracing_comm.h).
#include "parallel/tracing_comm.h"

#include <utility>

namespace trainer {

namespace {

class TracedRequest : public CommRequest {
 public:
  TracedRequest(CommRequestPtr inner, TraceRecorder& recorder, std::string op, std::vector<TraceArg> args,
                double start_us)
      : inner_(std::move(inner)), recorder_(recorder), op_(std::move(op)), args_(std::move(args)), start_us_(start_us) {}
  ~TracedRequest() override {
    if (inner_) wait();
  }
  void wait() override {
    if (!inner_) return;
    const double w0 = recorder_.now_us();
    inner_->wait();
    inner_.reset();
    const double w1 = recorder_.now_us();
    recorder_.complete("wait " + op_, "comm", TraceRecorder::kMainThread, w0, w1, args_);
    recorder_.async_span(op_, "comm", start_us_, w1, args_);
  }

 private:
  CommRequestPtr inner_;
  TraceRecorder& recorder_;
  std::string op_;
  std::vector<TraceArg> args_;
  double start_us_;
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

template <class F>
void TracingComm::blocking(const char* op, size_t bytes, int peer, F&& call) {
  ++seq_;
  if (!recorder_.enabled()) return call();
  const double t0 = recorder_.now_us();
  call();
  recorder_.complete(op, "comm", TraceRecorder::kMainThread, t0, recorder_.now_us(), args(bytes, peer, false));
}

CommRequestPtr TracingComm::traced(const char* op, size_t bytes, int peer, CommRequestPtr request, double start_us,
                                   bool bucketed) {
  if (!recorder_.enabled()) return request;
  if (bucketed && bucket_step_ != recorder_.step()) {
    bucket_step_ = recorder_.step();
    bucket_ = 0;
  }
  auto out = std::make_unique<TracedRequest>(std::move(request), recorder_, op, args(bytes, peer, bucketed), start_us);
  if (bucketed) ++bucket_;
  return out;
}

void TracingComm::all_reduce(Tensor buf, ReduceOp op) {
  blocking("all_reduce", buf.bytes(), -1, [&] { inner_->all_reduce(buf, op); });
}
void TracingComm::reduce_scatter(Tensor out, Tensor in) {
  blocking("reduce_scatter", in.bytes(), -1, [&] { inner_->reduce_scatter(out, in); });
}
void TracingComm::all_gather(Tensor out, Tensor in) {
  blocking("all_gather", out.bytes(), -1, [&] { inner_->all_gather(out, in); });
}
void TracingComm::broadcast(Tensor buf, int root) {
  blocking("broadcast", buf.bytes(), -1, [&] { inner_->broadcast(buf, root); });
}
void TracingComm::send(Tensor buf, int peer, int tag) {
  blocking("send", buf.bytes(), peer, [&] { inner_->send(buf, peer, tag); });
}
void TracingComm::recv(Tensor buf, int peer, int tag) {
  blocking("recv", buf.bytes(), peer, [&] { inner_->recv(buf, peer, tag); });
}
void TracingComm::barrier() {
  blocking("barrier", 0, -1, [&] { inner_->barrier(); });
}

CommRequestPtr TracingComm::all_reduce_async(Tensor buf, ReduceOp op) {
  ++seq_;
  const double t0 = recorder_.now_us();
  return traced("all_reduce", buf.bytes(), -1, inner_->all_reduce_async(buf, op), t0, true);
}
CommRequestPtr TracingComm::reduce_scatter_async(Tensor out, Tensor in) {
  ++seq_;
  const double t0 = recorder_.now_us();
  return traced("reduce_scatter", in.bytes(), -1, inner_->reduce_scatter_async(out, in), t0, true);
}
CommRequestPtr TracingComm::all_gather_async(Tensor out, Tensor in) {
  ++seq_;
  const double t0 = recorder_.now_us();
  return traced("all_gather", out.bytes(), -1, inner_->all_gather_async(out, in), t0, true);
}
CommRequestPtr TracingComm::send_async(Tensor buf, int peer, int tag) {
  ++seq_;
  const double t0 = recorder_.now_us();
  return traced("send", buf.bytes(), peer, inner_->send_async(buf, peer, tag), t0, false);
}
CommRequestPtr TracingComm::recv_async(Tensor buf, int peer, int tag) {
  ++seq_;
  const double t0 = recorder_.now_us();
  return traced("recv", buf.bytes(), peer, inner_->recv_async(buf, peer, tag), t0, false);
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
