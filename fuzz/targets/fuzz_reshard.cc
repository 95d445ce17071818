// libFuzzer target: the resharding planner. The bytes choose a shape, a device count and two
// shardings (tile counts per dim, partial replication, a device permutation); the plan must be
// no worse than the naive plan, verify, and move the data correctly under the oracle.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/targets/fuzz_common.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"
#include "partitioner/reshard.h"

using spmdcheck::fuzz_targets::FuzzFail;

namespace {

class ByteSource {
 public:
  ByteSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int64_t Next(int64_t bound) {  // In [0, bound).
    const uint8_t b = pos_ < size_ ? data_[pos_++] : 0;
    return bound <= 1 ? 0 : b % bound;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

spmdcheck::HloSharding MakeSharding(ByteSource& bytes, int64_t rank, int64_t n) {
  if (bytes.Next(6) == 0) return spmdcheck::HloSharding::Replicate();
  // Split n into per-dim tile counts (divisors) and a replication factor.
  std::vector<int64_t> counts(rank, 1);
  int64_t left = n;
  for (int64_t k = 0; k < rank; ++k) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= left; ++d) {
      if (left % d == 0) divisors.push_back(d);
    }
    counts[k] = divisors[bytes.Next(static_cast<int64_t>(divisors.size()))];
    left /= counts[k];
  }
  std::vector<int64_t> devices(n);
  std::iota(devices.begin(), devices.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(devices[i], devices[bytes.Next(i + 1)]);
  std::vector<int64_t> dims = counts;
  if (left > 1) dims.push_back(left);
  auto tiles = spmdcheck::TileAssignment::Explicit(dims, devices);
  if (!tiles.ok()) return spmdcheck::HloSharding::Replicate();
  return left > 1 ? spmdcheck::HloSharding::PartialTile(*tiles)
                  : spmdcheck::HloSharding::Tile(*tiles);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteSource bytes(data, size);
  const int64_t rank = 1 + bytes.Next(3);
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < rank; ++k) dims.push_back(1 + bytes.Next(9));
  const spmdcheck::Shape shape = spmdcheck::Shape::Array(spmdcheck::PrimitiveType::kS32, dims);
  const int64_t n = 1 + bytes.Next(8);
  const spmdcheck::HloSharding from = MakeSharding(bytes, rank, n);
  const spmdcheck::HloSharding to = MakeSharding(bytes, rank, n);
  auto plan = spmdcheck::partitioner::PlanReshard(shape, from, to, n);
  auto naive = spmdcheck::partitioner::NaiveReshardPlan(shape, from, to, n);
  const std::string what =
      absl::StrCat(shape.ToString(), " ", from.ToString(), " -> ", to.ToString(), " on ", n);
  if (!plan.ok() || !naive.ok()) FuzzFail("no plan", what, std::string(plan.status().message()));
  if (plan->cost.Score() > naive->cost.Score())
    FuzzFail("worse than naive", what, plan->Describe());
  auto module = spmdcheck::partitioner::BuildReshardModule(shape, from, *plan, n);
  if (!module.ok()) FuzzFail("plan does not build", what, std::string(module.status().message()));
  if (!spmdcheck::VerifyModule(**module).ok()) {
    FuzzFail("plan does not verify", what, spmdcheck::PrintModule(**module));
  }
  auto global = spmdcheck::ParseHloModule(
      absl::StrCat("HloModule g, num_partitions=", n, "\nENTRY main {\n  p = ", shape.ToString(),
                   " parameter(0), sharding=", from.ToString(), "\n  ROOT c = ", shape.ToString(),
                   " copy(p), sharding=", to.ToString(), "\n}\n"));
  if (!global.ok()) FuzzFail("global module", what, std::string(global.status().message()));
  spmdcheck::oracle::EquivOptions options;
  options.trials = 1;
  auto report = spmdcheck::oracle::CheckEquivalence(*global->module, **module, options);
  if (!report.ok() || report->verdict != spmdcheck::Verdict::kHolds) {
    FuzzFail("plan moves data wrongly", what, spmdcheck::PrintModule(**module));
  }
  return 0;
}
