// Interpreter kernels on the sizes issue 3 names, plus the seed case at the report's size.
// bench/oracle_vs_numpy.sh runs this and numpy on the same machine and prints the ratios.
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "oracle/engine.h"
#include "oracle/equivalence.h"
#include "oracle/op_registry.h"
#include "tests/shared_dir.h"

namespace spmdcheck::oracle {
namespace {

std::unique_ptr<HloModule> Parse(const std::string& text) {
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  if (!parsed.ok()) return nullptr;
  return std::move(parsed->module);
}

Literal Random(const Shape& shape, uint64_t seed) {
  Literal literal(shape);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (IsFloatingType(shape.element_type())) {
      literal.SetDouble(i, uniform(rng));
    } else {
      literal.SetInt64(i, static_cast<int64_t>(rng() % 32768));
    }
  }
  return literal;
}

// Runs the entry of `text` once per iteration on one device with random parameters.
void RunModule(benchmark::State& state, const std::string& text) {
  std::unique_ptr<HloModule> module = Parse(text);
  if (module == nullptr) {
    state.SkipWithError("parse failed");
    return;
  }
  std::vector<ValueRef> args;
  uint64_t seed = 1;
  for (const HloInstruction* p : module->entry()->parameters()) {
    args.push_back(std::make_shared<const Literal>(Random(p->shape(), seed++)));
  }
  Engine engine(*module, EngineOptions());
  for (auto _ : state) {
    absl::StatusOr<std::vector<ValueRef>> result = engine.RunShared({args});
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result);
  }
}

void BM_Dot512(benchmark::State& state) {
  RunModule(state, R"(HloModule m
ENTRY e {
  a = f32[512,512] parameter(0)
  b = f32[512,512] parameter(1)
  ROOT d = f32[512,512] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}
BENCHMARK(BM_Dot512)->Unit(benchmark::kMillisecond);

void BM_Transpose64(benchmark::State& state) {
  RunModule(state, R"(HloModule m
ENTRY e {
  a = f32[64,64,64] parameter(0)
  ROOT t = f32[64,64,64] transpose(a), dimensions={2,0,1}
})");
}
BENCHMARK(BM_Transpose64)->Unit(benchmark::kMillisecond);

void BM_ReduceSum(benchmark::State& state) {
  RunModule(state, R"(HloModule m
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  a = f32[256,256,64] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[256,64] reduce(a, z), dimensions={1}, to_apply=sum
})");
}
BENCHMARK(BM_ReduceSum)->Unit(benchmark::kMillisecond);

void BM_Gather4096Rows(benchmark::State& state) {
  RunModule(state, R"(HloModule m
ENTRY e {
  table = f32[32768,128] parameter(0)
  rows = s32[4096,1] parameter(1)
  ROOT g = f32[4096,128] gather(table, rows), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,128}
})");
}
BENCHMARK(BM_Gather4096Rows)->Unit(benchmark::kMillisecond);

int64_t ReadStatusKb(const char* field) {
  const std::string status = base::ReadFile("/proc/self/status").value_or("");
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, field)) return std::stoll(std::string(line));
  }
  return 0;
}

// 64 devices run a partitioned chain whose global values total 1 GiB (four f32 values of
// 256 MiB, each device holding a 4 MiB shard); reports the peak resident memory of the run.
void BM_Simulate64DevicesOneGiB(benchmark::State& state) {
  std::unique_ptr<HloModule> module = Parse(R"(HloModule m, num_partitions=64
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  x = f32[1048576] parameter(0), sharding={devices=[64]<=[64]}
  a = f32[1048576] add(x, x), sharding={devices=[64]<=[64]}
  b = f32[1048576] multiply(a, x), sharding={devices=[64]<=[64]}
  c = f32[1048576] subtract(b, a), sharding={devices=[64]<=[64]}
  head = f32[16] slice(c), slice={[0:16]}
  ROOT total = f32[16] all-reduce(head), channel_id=1, replica_groups=[1,64]<=[64], use_global_device_ids=true, to_apply=sum
})");
  if (module == nullptr) {
    state.SkipWithError("parse failed");
    return;
  }
  EngineOptions options;
  options.num_partitions = 64;
  Engine engine(*module, options);
  int64_t peak_kb = 0;
  for (auto _ : state) {
    base::WriteFile("/proc/self/clear_refs", "5").IgnoreError();
    const int64_t before_kb = ReadStatusKb("VmRSS:");
    std::vector<std::vector<ValueRef>> args(64);
    for (int64_t d = 0; d < 64; ++d) {
      args[d].push_back(std::make_shared<const Literal>(
          Random(module->entry()->parameters()[0]->shape(), static_cast<uint64_t>(d))));
    }
    absl::StatusOr<std::vector<ValueRef>> result = engine.RunShared(std::move(args));
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    peak_kb = std::max(peak_kb, ReadStatusKb("VmHWM:") - before_kb);
  }
  state.counters["global_values_GiB"] = 1.0;
  state.counters["peak_GiB"] = static_cast<double>(peak_kb) / (1024.0 * 1024.0);
}
BENCHMARK(BM_Simulate64DevicesOneGiB)->Unit(benchmark::kMillisecond)->Iterations(1);

std::string ReadShared(const std::string& relative) {
  return base::ReadFile(test_support::SharedPath(relative)).value_or("");
}

std::string Substitute(std::string text,
                       const std::vector<std::pair<std::string, std::string>>& replacements) {
  for (const auto& [from, to] : replacements) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      text.replace(at, from.size(), to);
      at += to.size();
    }
  }
  return text;
}

// The seed case at the report's real size (x bf16[8,4,2,64,128], 64 devices): the case files are
// shrunk, so their shapes are scaled back up; one equivalence trial of GSPMD's program.
void BM_SeedCaseAtReportSize(benchmark::State& state) {
  const std::string pre = Substitute(ReadShared("cases/seed-scatter/pre.hlo"),
                                     {{"[3,4,2,16,4]", "[8,4,2,64,128]"},
                                      {"[3,1,2,16,4]", "[8,1,2,64,128]"},
                                      {"[3,2,16,4]", "[8,2,64,128]"},
                                      {"[2,3,16,4]", "[2,8,64,128]"},
                                      {"[6,16,4]", "[16,64,128]"},
                                      {"slice={[0:3], [0:1], [0:2], [0:16], [0:4]}",
                                       "slice={[0:8], [0:1], [0:2], [0:64], [0:128]}"}});
  const std::string gspmd =
      Substitute(ReadShared("cases/seed-scatter/gspmd.hlo"), {{"[3,1,1,2,4]", "[8,1,1,8,128]"},
                                                              {"[3,1,2,4]", "[8,1,8,128]"},
                                                              {"[1,3,2,4]", "[1,8,8,128]"},
                                                              {"[1,3,16,4]", "[1,8,64,128]"},
                                                              {"[3,16,4]", "[8,64,128]"}});
  std::unique_ptr<HloModule> global = Parse(pre);
  std::unique_ptr<HloModule> partitioned = Parse(gspmd);
  if (!test_support::HaveShared("cases/seed-scatter")) {
    state.SkipWithError(test_support::MissingSharedMessage("cases/seed-scatter").c_str());
    return;
  }
  if (global == nullptr || partitioned == nullptr) {
    state.SkipWithError("the seed case did not parse");
    return;
  }
  EquivOptions options;
  options.trials = 1;
  for (auto _ : state) {
    absl::StatusOr<EquivReport> report = CheckEquivalence(*global, *partitioned, options);
    if (!report.ok() || report->verdict != Verdict::kHolds) {
      state.SkipWithError(report.ok() ? FormatEquivReport(*report).c_str()
                                      : std::string(report.status().message()).c_str());
      return;
    }
  }
}
BENCHMARK(BM_SeedCaseAtReportSize)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace spmdcheck::oracle

BENCHMARK_MAIN();
