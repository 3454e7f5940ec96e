// ranks: 2 3 4
// all_to_all over real MPI ranks: block j of every rank's input reaches rank j, in rank order,
// for f32, i32 and bf16 bit patterns, blocking and in flight beside another collective; and
// the calls it refuses (different sizes, a size that does not split, in place).
#include <doctest/doctest.h>
#include <mpi.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "parallel/mpi_comm.h"

using namespace trainer;

namespace {

// The value rank `from` puts in element k of the block it sends to rank `to`.
int32_t value(int from, int to, int64_t k) { return from * 10000 + to * 100 + int32_t(k); }

}  // namespace

TEST_CASE("mpi all_to_all: block j of every rank reaches rank j, in rank order") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int n = world.size(), me = world.rank();
  for (int64_t block : {int64_t(1), int64_t(5), int64_t(1000)}) {
    CAPTURE(block);
    std::vector<int32_t> in(size_t(n * block)), out(in.size(), -1);
    std::vector<float> fin(in.size()), fout(in.size(), -1.0f);
    std::vector<uint16_t> hin(in.size()), hout(in.size(), 0);
    for (int to = 0; to < n; ++to)
      for (int64_t k = 0; k < block; ++k) {
        const size_t at = size_t(to * block + k);
        in[at] = value(me, to, k);
        fin[at] = float(in[at]) + 0.5f;
        hin[at] = uint16_t(in[at] & 0xffff);
      }
    world.all_to_all(make_tensor(out.data(), DType::i32, Device::cpu, {int64_t(out.size())}),
                     make_tensor(in.data(), DType::i32, Device::cpu, {int64_t(in.size())}));
    // In flight, started beside a barrier's worth of other traffic, then waited for.
    CommRequestPtr r = world.all_to_all_async(make_tensor(fout.data(), DType::f32, Device::cpu, {int64_t(fout.size())}),
                                              make_tensor(fin.data(), DType::f32, Device::cpu, {int64_t(fin.size())}));
    world.all_to_all(make_tensor(hout.data(), DType::u16, Device::cpu, {int64_t(hout.size())}),
                     make_tensor(hin.data(), DType::u16, Device::cpu, {int64_t(hin.size())}));
    r->wait();
    int wrong = 0;
    for (int from = 0; from < n; ++from)
      for (int64_t k = 0; k < block; ++k) {
        const size_t at = size_t(from * block + k);
        wrong += out[at] != value(from, me, k);
        wrong += fout[at] != float(value(from, me, k)) + 0.5f;
        wrong += hout[at] != uint16_t(value(from, me, k) & 0xffff);
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("mpi all_to_all: sizes that do not match or split, and in place, are refused") {
  MpiComm world(MPI_COMM_WORLD, "world", 60);
  const int n = world.size();
  std::vector<float> a(size_t(2 * n)), b(size_t(2 * n + 1));
  auto t = [](std::vector<float>& v) { return make_tensor(v.data(), DType::f32, Device::cpu, {int64_t(v.size())}); };
  CHECK_THROWS_AS(world.all_to_all(t(b), t(a)), std::logic_error);
  CHECK_THROWS_AS(world.all_to_all(t(b), t(b)), std::logic_error);
  CHECK_THROWS_AS(world.all_to_all(t(a), t(a)), std::logic_error);
}
