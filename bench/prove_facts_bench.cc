// Issue 14 item 2: group, pair and sharding facts over explicit device lists (as V1 dumps print
// them), decided by direct enumeration and by Z3, in the same process. Each benchmark's label
// says which procedure and the verdict; `--benchmark_filter=Enumerate` skips the slow Z3 runs.
// Z3 runs with a 60 s timeout per query, so its largest sizes may report `unknown` (a lower
// bound on its time, which is what matters for the ratio).
//
//   build/bench/prove_facts_bench                         # a few minutes on 2 busy cores
//   build/bench/prove_facts_bench --benchmark_filter=Enumerate
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/replica_groups.h"
#include "ir/sharding.h"
#include "smt/device_algebra.h"

namespace {

using spmdcheck::HloSharding;
using spmdcheck::ReplicaGroups;
using spmdcheck::SourceTargetPairs;
using spmdcheck::smt::FactOptions;
using spmdcheck::smt::FormatProofResult;
using spmdcheck::smt::Procedure;
using spmdcheck::smt::ProofResult;

constexpr int64_t kZ3TimeoutMs = 60000;

// n devices in groups of 32 (256 groups of 32 at 8192 devices, as in the issue), listed
// explicitly: the groups along tile dim 1 of {devices=[n/32,32]<=[n]}.
ReplicaGroups ExplicitGroups(int64_t n) {
  std::vector<std::vector<int64_t>> groups;
  for (int64_t g = 0; g < n / 32; ++g) {
    std::vector<int64_t> members;
    for (int64_t p = 0; p < 32; ++p) members.push_back(g * 32 + p);
    groups.push_back(std::move(members));
  }
  return ReplicaGroups(std::move(groups));
}

HloSharding Parse(const std::string& text) { return *spmdcheck::ParseSharding(text); }

void Label(benchmark::State& state, const ProofResult& r) {
  state.SetLabel(absl::StrCat(FormatProofResult(r), " [", r.procedure, "]"));
}

void Groups(benchmark::State& state, Procedure procedure) {
  const int64_t n = state.range(0);
  const HloSharding sharding = Parse(absl::StrCat("{devices=[", n / 32, ",32]<=[", n, "]}"));
  const ReplicaGroups groups = ExplicitGroups(n);
  ProofResult r;
  for (auto _ : state) {
    r = spmdcheck::smt::ProveGroups(sharding, {1}, groups, FactOptions{kZ3TimeoutMs, procedure});
  }
  Label(state, r);
}

// An explicit (V1) device order: the transpose of the iota, written out.
HloSharding ExplicitSharding(int64_t n) {
  HloSharding iota = Parse(absl::StrCat("{devices=[32,", n / 32, "]<=[", n / 32, ",32]T(1,0)}"));
  std::vector<int64_t> devices = iota.tile_assignment().Devices();
  return HloSharding::Tile(*spmdcheck::TileAssignment::Explicit({32, n / 32}, devices));
}

void Sharding(benchmark::State& state, Procedure procedure) {
  const int64_t n = state.range(0);
  const HloSharding sharding = ExplicitSharding(n);
  ProofResult r;
  for (auto _ : state) {
    r = spmdcheck::smt::ProveSharding(sharding, n, FactOptions{kZ3TimeoutMs, procedure});
  }
  Label(state, r);
}

// A cyclic shift of the tiles by one device: pairs {d, d+1 mod n}.
void Pairs(benchmark::State& state, Procedure procedure) {
  const int64_t n = state.range(0);
  const HloSharding from = Parse(absl::StrCat("{devices=[", n, ",1]<=[", n, "]}"));
  std::vector<int64_t> shifted;
  for (int64_t t = 0; t < n; ++t) shifted.push_back((t + 1) % n);
  const HloSharding to = HloSharding::Tile(*spmdcheck::TileAssignment::Explicit({n, 1}, shifted));
  SourceTargetPairs pairs;
  for (int64_t d = 0; d < n; ++d) pairs.push_back({d, (d + 1) % n});
  ProofResult r;
  for (auto _ : state) {
    r = spmdcheck::smt::ProvePairs(from, to, pairs, FactOptions{kZ3TimeoutMs, procedure});
  }
  Label(state, r);
}

// Enumeration alone at the sizes; both procedures (the label has both times and their
// ratio) where Z3 answers within minutes: Z3's explicit tables grow quadratically (8192 explicit
// groups take minutes: `spmdcheck prove groups ... --procedure z3`).
void EnumerateGroups(benchmark::State& state) { Groups(state, Procedure::kEnumerate); }
void BothGroups(benchmark::State& state) { Groups(state, Procedure::kBoth); }
void EnumerateSharding(benchmark::State& state) { Sharding(state, Procedure::kEnumerate); }
void BothSharding(benchmark::State& state) { Sharding(state, Procedure::kBoth); }
void EnumeratePairs(benchmark::State& state) { Pairs(state, Procedure::kEnumerate); }
void BothPairs(benchmark::State& state) { Pairs(state, Procedure::kBoth); }

BENCHMARK(EnumerateGroups)->Arg(8192)->Arg(65536)->Unit(benchmark::kMillisecond);
BENCHMARK(BothGroups)->Arg(64)->Arg(256)->Arg(512)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(EnumerateSharding)->Arg(8192)->Arg(65536)->Unit(benchmark::kMillisecond);
BENCHMARK(BothSharding)->Arg(64)->Arg(128)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(EnumeratePairs)->Arg(8192)->Arg(65536)->Unit(benchmark::kMillisecond);
BENCHMARK(BothPairs)->Arg(64)->Arg(256)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
