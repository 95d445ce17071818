// Cross-check of smt/chain_prover.h against the oracle: on random small chains (a sharded
// parameter resharded by a collective-permute, an all-gather, a dynamic-slice at partition-id
// offsets, XLA's reshape/all-to-all/transpose/reshape pattern, DUS + all-reduce, or a masked
// reduce-scatter, with random device orders on up
// to 8 devices and, half of the time, a corrupted group, pair, table or target sharding), what
// ProveChain says and what the oracle observes running the chain on every device agree, every
// time. SPMDCHECK_PROPERTY_CASES (via RC_PARAMS) raises the case count.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "oracle/equivalence.h"
#include "smt/chain_prover.h"

namespace spmdcheck::smt {
namespace {

constexpr int64_t kRows = 8;
constexpr int64_t kCols = 8;

struct Case {
  int64_t p = 0;
  std::string from;  // Sharding text of the parameter.
  std::string to;    // Sharding text of the end of the chain.
  std::string body;  // The partitioned entry computation's instructions.
  std::string what;  // For failure messages.
};

std::string Tiled(int64_t rows, int64_t cols, const std::vector<int64_t>& devices) {
  return absl::StrCat("{devices=[", rows, ",", cols, "]", absl::StrJoin(devices, ","), "}");
}

std::vector<int64_t> Shuffled(int64_t n, std::mt19937& rng) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

std::string GroupsText(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back(absl::StrCat("{", absl::StrJoin(g, ","), "}"));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string Shape(int64_t rows, int64_t cols) { return absl::StrCat("s32[", rows, ",", cols, "]"); }

// Tile grid (a, b) with a * b = p.
std::pair<int64_t, int64_t> Grid(int64_t p, int64_t rows_log2) {
  const int64_t a = int64_t{1} << rows_log2;
  return {a, p / a};
}

Case PermuteCase(int64_t p, int64_t a, bool corrupt, std::mt19937& rng) {
  const int64_t b = p / a;
  const std::vector<int64_t> from = Shuffled(p, rng);
  const std::vector<int64_t> to = Shuffled(p, rng);
  std::vector<std::vector<int64_t>> pairs;
  for (int64_t t = 0; t < p; ++t) pairs.push_back({from[t], to[t]});
  if (corrupt) {
    if (rng() % 2 == 0) {
      pairs.erase(pairs.begin() + static_cast<int64_t>(rng() % pairs.size()));
    } else {
      const int64_t i = static_cast<int64_t>(rng() % p);
      const int64_t j = (i + 1) % p;
      std::swap(pairs[i][1], pairs[j][1]);
    }
  }
  Case c;
  c.p = p;
  c.from = Tiled(a, b, from);
  c.to = Tiled(a, b, to);
  c.body =
      absl::StrCat("  ROOT out = ", Shape(kRows / a, kCols / b),
                   " collective-permute(p), channel_id=1, source_target_pairs=", GroupsText(pairs),
                   ", sharding=", c.to, "\n");
  c.what = "collective-permute";
  return c;
}

Case AllGatherCase(int64_t p, int64_t a, bool corrupt, std::mt19937& rng) {
  const int64_t b = p / a;
  const std::vector<int64_t> from = Shuffled(p, rng);  // Row-major over the [a, b] grid.
  std::vector<std::vector<int64_t>> groups;
  std::vector<int64_t> to_devices;  // [1, b, a] grid, row-major.
  for (int64_t j = 0; j < b; ++j) {
    std::vector<int64_t> group;
    for (int64_t i = 0; i < a; ++i) group.push_back(from[i * b + j]);
    groups.push_back(group);
    to_devices.insert(to_devices.end(), group.begin(), group.end());
  }
  if (corrupt) {
    std::vector<int64_t>& group = groups[rng() % b];
    std::shuffle(group.begin(), group.end(), rng);
  }
  Case c;
  c.p = p;
  c.from = Tiled(a, b, from);
  c.to = absl::StrCat("{devices=[1,", b, ",", a, "]", absl::StrJoin(to_devices, ","),
                      " last_tile_dim_replicate}");
  c.body = absl::StrCat("  ROOT out = ", Shape(kRows, kCols / b),
                        " all-gather(p), channel_id=1, replica_groups=", GroupsText(groups),
                        ", dimensions={0}, use_global_device_ids=true, sharding=", c.to, "\n");
  c.what = "all-gather";
  return c;
}

Case DynamicSliceCase(int64_t p, int64_t a, bool corrupt, std::mt19937& rng) {
  const int64_t b = p / a;
  const int64_t rows = kRows / a;
  const int64_t cols = kCols / b;
  const std::vector<int64_t> to = Shuffled(p, rng);
  std::vector<int64_t> row_offset(p);
  std::vector<int64_t> col_offset(p);
  for (int64_t t = 0; t < p; ++t) {
    row_offset[to[t]] = (t / b) * rows;
    col_offset[to[t]] = (t % b) * cols;
  }
  if (corrupt) {
    std::vector<int64_t>& table = rng() % 2 == 0 ? row_offset : col_offset;
    table[rng() % p] = static_cast<int64_t>(rng() % (kRows + 2));  // Clamped when too large.
  }
  Case c;
  c.p = p;
  c.from = "{replicated}";
  c.to = Tiled(a, b, to);
  c.body = absl::StrCat("  pid = u32[] partition-id()\n", "  rt = s32[", p, "] constant({",
                        absl::StrJoin(row_offset, ", "), "})\n", "  ct = s32[", p, "] constant({",
                        absl::StrJoin(col_offset, ", "), "})\n",
                        "  re = s32[1] dynamic-slice(rt, pid), dynamic_slice_sizes={1}\n",
                        "  ce = s32[1] dynamic-slice(ct, pid), dynamic_slice_sizes={1}\n",
                        "  ro = s32[] reshape(re)\n  co = s32[] reshape(ce)\n",
                        "  ROOT out = ", Shape(rows, cols),
                        " dynamic-slice(p, ro, co), dynamic_slice_sizes={", rows, ",", cols,
                        "}, sharding=", c.to, "\n");
  c.what = "dynamic-slice";
  return c;
}

Case AllToAllCase(int64_t p, bool corrupt, std::mt19937& rng) {
  const int64_t chunk = kCols / p;
  const std::vector<int64_t> from = Shuffled(p, rng);
  std::vector<int64_t> group = from;
  std::vector<int64_t> to = from;
  if (corrupt) {
    std::vector<int64_t>& order = rng() % 2 == 0 ? group : to;
    std::shuffle(order.begin(), order.end(), rng);
  }
  Case c;
  c.p = p;
  c.from = Tiled(1, p, from);
  c.to = Tiled(p, 1, to);
  c.body = absl::StrCat("  r = s32[", p, ",", chunk, ",", chunk, "] reshape(p)\n", "  a2a = s32[",
                        p, ",", chunk, ",", chunk,
                        "] all-to-all(r), channel_id=1, replica_groups=", GroupsText({group}),
                        ", dimensions={0}\n", "  t = s32[", chunk, ",", p, ",", chunk,
                        "] transpose(a2a), dimensions={1,0,2}\n",
                        "  ROOT out = ", Shape(chunk, kCols), " reshape(t), sharding=", c.to, "\n");
  c.what = "all-to-all";
  return c;
}

constexpr char kAdd[] =
    "add {\n  x = s32[] parameter(0)\n  y = s32[] parameter(1)\n  ROOT s = s32[] add(x, y)\n}\n";

// Tiled rows -> replicated: each device writes its rows into zeros at its partition offset, then
// an all-reduce(add) over every device (XLA's DUS + all-reduce replication).
Case DusAllReduceCase(int64_t p, bool corrupt, std::mt19937& rng) {
  const int64_t rows = kRows / p;
  const std::vector<int64_t> from = Shuffled(p, rng);
  std::vector<int64_t> offset(p);
  for (int64_t t = 0; t < p; ++t) offset[from[t]] = t * rows;
  if (corrupt) offset[rng() % p] = static_cast<int64_t>(rng() % kRows);
  Case c;
  c.p = p;
  c.from = Tiled(p, 1, from);
  c.to = "{replicated}";
  c.body =
      absl::StrCat("  pid = u32[] partition-id()\n", "  table = s32[", p, "] constant({",
                   absl::StrJoin(offset, ", "), "})\n",
                   "  entry = s32[1] dynamic-slice(table, pid), dynamic_slice_sizes={1}\n",
                   "  row = s32[] reshape(entry)\n  col = s32[] constant(0)\n",
                   "  zero = s32[] constant(0)\n  zeros = ", Shape(kRows, kCols),
                   " broadcast(zero), dimensions={}\n  dus = ", Shape(kRows, kCols),
                   " dynamic-update-slice(zeros, p, row, col)\n  ROOT out = ", Shape(kRows, kCols),
                   " all-reduce(dus), channel_id=1, replica_groups={}, to_apply=add, "
                   "sharding={replicated}\n");
  c.what = "dus+all-reduce";
  return c;
}

// Replicated -> tiled rows: keep one device's copy (a partition-id mask), reduce-scatter it.
Case MaskedReduceScatterCase(int64_t p, bool corrupt, std::mt19937& rng) {
  const int64_t rows = kRows / p;
  std::vector<int64_t> group = Shuffled(p, rng);
  std::vector<int64_t> to = group;
  const int64_t keeper = static_cast<int64_t>(rng() % p);
  std::string compare = "EQ";
  if (corrupt) {
    if (rng() % 2 == 0) {
      std::shuffle(to.begin(), to.end(), rng);
    } else {
      compare = "LE";  // Keeps several copies.
    }
  }
  Case c;
  c.p = p;
  c.from = "{replicated}";
  c.to = Tiled(p, 1, to);
  c.body = absl::StrCat(
      "  pid = u32[] partition-id()\n  keeper = u32[] constant(", keeper, ")\n",
      "  keep = pred[] compare(pid, keeper), direction=", compare, "\n  mask = pred[", kRows, ",",
      kCols, "] broadcast(keep), dimensions={}\n  zero = s32[] constant(0)\n  zeros = ",
      Shape(kRows, kCols), " broadcast(zero), dimensions={}\n  masked = ", Shape(kRows, kCols),
      " select(mask, p, zeros)\n  ROOT out = ", Shape(rows, kCols),
      " reduce-scatter(masked), channel_id=1, replica_groups=", GroupsText({group}),
      ", use_global_device_ids=true, dimensions={0}, to_apply=add, sharding=", c.to, "\n");
  c.what = "masked reduce-scatter";
  return c;
}

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(VerifyModule(*parsed->module).ok());
  return std::move(parsed->module);
}

RC_GTEST_PROP(ChainOracleTest, ProveChainAgreesWithTheOracle, ()) {
  const int64_t p = *rc::gen::element<int64_t>(2, 4, 8);
  const int kind = *rc::gen::element(0, 1, 2, 3, 4, 5);
  const bool corrupt = *rc::gen::arbitrary<bool>();
  const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
  std::mt19937 rng(seed);
  const int64_t log2p = p == 2 ? 1 : p == 4 ? 2 : 3;
  const int64_t rows_log2 = *rc::gen::inRange<int64_t>(kind == 1 ? 1 : 0, log2p + 1);
  const auto [a, b] = Grid(p, rows_log2);
  (void)b;
  Case c;
  switch (kind) {
    case 0:
      c = PermuteCase(p, a, corrupt, rng);
      break;
    case 1:
      c = AllGatherCase(p, a, corrupt, rng);
      break;
    case 2:
      c = DynamicSliceCase(p, a, corrupt, rng);
      break;
    case 3:
      c = AllToAllCase(p, corrupt, rng);
      break;
    case 4:
      c = DusAllReduceCase(p, corrupt, rng);
      break;
    default:
      c = MaskedReduceScatterCase(p, corrupt, rng);
      break;
  }
  std::string param_shape = Shape(kRows / a, kCols / (p / a));
  if (kind == 2 || kind == 5) param_shape = Shape(kRows, kCols);
  if (kind == 3) param_shape = Shape(kRows, kCols / p);
  if (kind == 4) param_shape = Shape(kRows / p, kCols);
  const std::string partitioned_text = absl::StrCat(
      "HloModule partitioned, num_partitions=", c.p, "\n", kAdd,
      "ENTRY main {\n  p = ", param_shape, " parameter(0), sharding=", c.from, "\n", c.body, "}\n");
  const std::string global_text = absl::StrCat(
      "HloModule global, num_partitions=", c.p, "\nENTRY main {\n  p = ", Shape(kRows, kCols),
      " parameter(0), sharding=", c.from, "\n  ROOT out = ", Shape(kRows, kCols),
      " copy(p), sharding=", c.to, "\n}\n");
  std::unique_ptr<HloModule> partitioned = Parse(partitioned_text);
  std::unique_ptr<HloModule> global = Parse(global_text);

  const ProofResult proof = ProveChain(*partitioned, {});
  RC_LOG() << partitioned_text << FormatProofResult(proof) << "\n";
  RC_ASSERT(proof.verdict != Verdict::kUnknown);

  oracle::EquivOptions options;
  options.trials = 2;
  options.seed = seed;
  absl::StatusOr<oracle::EquivReport> report =
      oracle::CheckEquivalence(*global, *partitioned, options);
  RC_ASSERT(report.ok());
  RC_LOG() << oracle::FormatEquivReport(*report) << "\n";
  RC_ASSERT(report->verdict == proof.verdict);
  RC_TAG(c.what, proof.verdict == Verdict::kHolds ? "holds" : "fails");
  if (proof.verdict == Verdict::kFails) {
    // The prover's device is one the oracle finds wrong.
    const int64_t device = std::stoll(proof.counterexample.substr(7));
    RC_ASSERT(std::find(report->wrong_devices.begin(), report->wrong_devices.end(), device) !=
              report->wrong_devices.end());
  }
}

}  // namespace
}  // namespace spmdcheck::smt
