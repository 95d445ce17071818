// Partitioner speed (Google Benchmark): instructions partitioned per second on (1) the largest
// conformance module (by instruction count) of ../shared/conformance/xla-spmd-2023 and (2) a
// generated module of 2,000 instructions (a chain of elementwise, dot, transpose, reshape and
// reduce ops with shardings that change every few instructions, so the planner works).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "partitioner/partitioner.h"
#include "tests/shared_dir.h"

namespace spmdcheck {
namespace {

std::string GeneratedModule(int instructions) {
  const char* shardings[] = {"{devices=[4,2]<=[8]}", "{devices=[2,4]<=[4,2]T(1,0)}",
                             "{devices=[8,1]<=[8]}",
                             "{devices=[1,2,4]<=[8] last_tile_dim_replicate}", "{replicated}"};
  std::string text =
      "HloModule generated, num_partitions=8\nadd {\n  a = f32[] parameter(0)\n  b = f32[] "
      "parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n"
      "  p0 = f32[64,64] parameter(0), sharding={devices=[4,2]<=[8]}\n"
      "  w = f32[64,64] parameter(1), sharding={devices=[2,4]<=[8]}\n  zero = f32[] constant(0)\n";
  std::string prev = "p0";
  int count = 3;
  for (int i = 0; count < instructions; ++i) {
    const std::string s = shardings[i % 5];
    const std::string name = absl::StrCat("v", i);
    switch (i % 6) {
      case 0:
        absl::StrAppend(&text, "  ", name, " = f32[64,64] add(", prev, ", w), sharding=", s, "\n");
        break;
      case 1:
        absl::StrAppend(&text, "  ", name, " = f32[64,64] dot(", prev,
                        ", w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, sharding=", s,
                        "\n");
        break;
      case 2:
        absl::StrAppend(&text, "  ", name, " = f32[64,64] transpose(", prev,
                        "), dimensions={1,0}, sharding=", s, "\n");
        break;
      case 3:
        absl::StrAppend(&text, "  r", i, " = f32[64,8,8] reshape(", prev, ")\n  ", name,
                        " = f32[64,64] reshape(r", i, "), sharding=", s, "\n");
        ++count;
        break;
      case 4:
        absl::StrAppend(&text, "  r", i, " = f32[64] reduce(", prev,
                        ", zero), dimensions={1}, to_apply=add\n  ", name,
                        " = f32[64,64] broadcast(r", i, "), dimensions={0}, sharding=", s, "\n");
        ++count;
        break;
      default:
        absl::StrAppend(&text, "  ", name, " = f32[64,64] multiply(", prev, ", ", prev,
                        "), sharding=", s, "\n");
        break;
    }
    prev = name;
    ++count;
  }
  absl::StrAppend(&text, "  ROOT out = f32[64,64] copy(", prev, ")\n}\n");
  return text;
}

void PartitionText(benchmark::State& state, const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  if (!parsed.ok()) {
    state.SkipWithError(std::string(parsed.status().message()).c_str());
    return;
  }
  int64_t instructions = 0;
  for (const auto& c : parsed->module->computations()) instructions += c->instruction_count();
  for (auto _ : state) {
    absl::StatusOr<partitioner::PartitionResult> result =
        partitioner::PartitionModule(*parsed->module, {});
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result->module);
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["instructions_per_s"] = benchmark::Counter(
      static_cast<double>(instructions) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_PartitionGenerated2000(benchmark::State& state) {
  PartitionText(state, GeneratedModule(2000));
}
BENCHMARK(BM_PartitionGenerated2000)->Unit(benchmark::kMillisecond);

void BM_PartitionLargestConformanceModule(benchmark::State& state) {
  if (!test_support::HaveShared("conformance/xla-spmd-2023")) {
    state.SkipWithError(test_support::MissingSharedMessage("conformance/xla-spmd-2023").c_str());
    return;
  }
  const std::filesystem::path dir = test_support::SharedPath("conformance/xla-spmd-2023");
  std::string best_text;
  int64_t best = -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    absl::StatusOr<std::string> text = base::ReadFile(entry.path().string());
    if (!text.ok()) continue;
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(*text);
    if (!parsed.ok()) continue;
    int64_t n = 0;
    for (const auto& c : parsed->module->computations()) n += c->instruction_count();
    if (n > best) {
      best = n;
      best_text = *std::move(text);
    }
  }
  if (best < 0) {
    state.SkipWithError("no conformance modules");
    return;
  }
  PartitionText(state, best_text);
}
BENCHMARK(BM_PartitionLargestConformanceModule)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spmdcheck

BENCHMARK_MAIN();
