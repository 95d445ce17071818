// Properties of the lint on modules without sharding annotations (issue 26), over ring sizes,
// shifts and offset tables: two shifts become one shift (or none when they undo each other) and
// the proposal gives every simulated device what the original does; an all-gather is dropped
// exactly when each device slices its own part back.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_parser.h"
#include "lint/lint.h"
#include "oracle/engine.h"

namespace spmdcheck::lint {
namespace {

absl::StatusOr<LintReport> LintText(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  if (!parsed.ok()) return parsed.status();
  LintOptions options;
  options.timeout_ms = 10000;
  return LintModule(*parsed->module, text, options);
}

// Device d's parameter holds 1000*d + i; each device's result.
std::vector<Literal> RunPerDevice(const HloModule& module) {
  const int64_t n = module.num_partitions();
  std::vector<std::vector<Literal>> args(static_cast<size_t>(n));
  const HloInstruction* parameter = module.entry()->instructions().front().get();
  for (int64_t d = 0; d < n; ++d) {
    Literal value(parameter->shape());
    for (int64_t i = 0; i < value.element_count(); ++i) {
      value.SetDouble(i, static_cast<double>(1000 * d + i));
    }
    args[static_cast<size_t>(d)].push_back(std::move(value));
  }
  oracle::EngineOptions options;
  options.num_partitions = n;
  oracle::Engine engine(module, options);
  absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(args));
  return results.ok() ? *std::move(results) : std::vector<Literal>{};
}

// A ring of n devices, a shift by a then by b, no annotations.
std::string TwoShifts(int64_t n, int64_t a, int64_t b) {
  const auto pairs = [n](int64_t shift) {
    std::vector<std::string> p;
    for (int64_t d = 0; d < n; ++d) p.push_back(absl::StrCat("{", d, ",", (d + shift) % n, "}"));
    return absl::StrCat("{", absl::StrJoin(p, ","), "}");
  };
  return absl::StrCat("HloModule shifts, num_partitions=", n,
                      "\nENTRY e {\n  p = f32[2,3] parameter(0)\n"
                      "  cp.1 = f32[2,3] collective-permute(p), channel_id=1, "
                      "source_target_pairs=",
                      pairs(a), "\n  ROOT cp.2 = f32[2,3] collective-permute(cp.1), channel_id=2, ",
                      "source_target_pairs=", pairs(b), "\n}\n");
}

// An all-gather over n devices along dim 0, then each device slices part table[pid] where table
// is the identity rotated by k.
std::string GatherThenSlice(int64_t n, int64_t k) {
  std::vector<int64_t> table;
  for (int64_t d = 0; d < n; ++d) table.push_back((d + k) % n);
  return absl::StrCat(
      "HloModule gs, num_partitions=", n, "\nENTRY e {\n  p = f32[2,3] parameter(0)\n",
      "  ag = f32[", 2 * n, ",3] all-gather(p), channel_id=1, replica_groups={{",
      absl::StrJoin(
          [n] {
            std::vector<int64_t> all;
            for (int64_t d = 0; d < n; ++d) all.push_back(d);
            return all;
          }(),
          ","),
      "}}, dimensions={0}, use_global_device_ids=true\n  pid = u32[] partition-id()\n",
      "  table = u32[", n, "] constant({", absl::StrJoin(table, ", "), "})\n",
      "  entry.1 = u32[1] dynamic-slice(table, pid), dynamic_slice_sizes={1}\n",
      "  tile = u32[] reshape(entry.1)\n  two = u32[] constant(2)\n",
      "  offset = u32[] multiply(tile, two)\n  zero = u32[] constant(0)\n",
      "  ROOT ds = f32[2,3] dynamic-slice(ag, offset, zero), dynamic_slice_sizes={2,3}\n}\n");
}

RC_GTEST_PROP(LintUnannotatedProperty, TwoShiftsBecomeOneShiftOrNone, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(2, 9);
  const int64_t a = *rc::gen::inRange<int64_t>(1, n);
  const int64_t b = *rc::gen::inRange<int64_t>(1, n);
  const std::string text = TwoShifts(n, a, b);
  absl::StatusOr<LintReport> report = LintText(text);
  RC_ASSERT(report.ok());
  RC_ASSERT(report->proved() == 1);
  const Finding& f = report->findings.front();
  RC_ASSERT(f.rule == std::string("consecutive-permutes"));
  // (a + b) mod n == 0: the shifts undo each other and no permute is left.
  const int64_t left = (a + b) % n == 0 ? 0 : 1;
  RC_ASSERT(f.proposed.flat.collective_permutes == left);
  absl::StatusOr<ParsedModule> original = ParseHloModule(text);
  absl::StatusOr<ParsedModule> proposed = ParseHloModule(f.proposed_hlo);
  RC_ASSERT(original.ok() && proposed.ok());
  const std::vector<Literal> x = RunPerDevice(*original->module);
  const std::vector<Literal> y = RunPerDevice(*proposed->module);
  RC_ASSERT(x.size() == static_cast<size_t>(n));
  for (size_t d = 0; d < x.size(); ++d) RC_ASSERT(x[d] == y[d]);
  // Device d ends with device (d - a - b) mod n's first value.
  const int64_t from = ((0 - a - b) % n + n) % n;
  RC_ASSERT(x[0].GetDouble(0) == static_cast<double>(1000 * from));
}

RC_GTEST_PROP(LintUnannotatedProperty, AGatherIsDroppedExactlyWhenEachDeviceSlicesItsOwnPart, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(2, 9);
  const int64_t k = *rc::gen::inRange<int64_t>(0, n);
  absl::StatusOr<LintReport> report = LintText(GatherThenSlice(n, k));
  RC_ASSERT(report.ok());
  RC_ASSERT(report->proved() == (k == 0 ? 1 : 0));
  if (k == 0) {
    RC_ASSERT(report->findings.front().rule == std::string("all-gather-then-own-slice"));
    RC_ASSERT(report->findings.front().proposed.flat.collectives == 0);
  } else {
    RC_ASSERT(report->findings.empty());
  }
}

}  // namespace
}  // namespace spmdcheck::lint
