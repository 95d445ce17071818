// Parser throughput and memory: builds a ~100 MB module by concatenating the computations of the
// XLA conformance modules (renamed apart), then times ParseHloModule on it and reports MB/s and
// the parser's peak memory as a multiple of the text size.
//
//   build/bench/parse_bench [--benchmark_min_time=...]   (SPMDCHECK_BENCH_MB sets the size;
//   SPMDCHECK_BENCH_DUMP=PATH also writes the generated text there, to profile on a file)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/lexer.h"
#include "tests/shared_dir.h"

namespace spmdcheck {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) { return base::ReadFile(path.string()).value_or(""); }

// Renames every computation of `text` (canonical printed form) by prefixing `prefix`: whole
// name tokens that are computation names and are not followed by '(' (an opcode) or '=' (an
// attribute name).
std::string RenameComputations(const std::string& text, const HloModule& module,
                               const std::string& prefix) {
  absl::flat_hash_set<std::string> names;
  for (const auto& c : module.computations()) names.insert(c->name());
  std::string out;
  out.reserve(text.size() + 1024);
  size_t i = 0;
  while (i < text.size()) {
    if (IsNameStart(text[i]) && (i == 0 || !IsNameChar(text[i - 1]))) {
      size_t j = i;
      while (j < text.size() && IsNameChar(text[j])) ++j;
      const std::string token = text.substr(i, j - i);
      const char next = j < text.size() ? text[j] : '\0';
      if (next != '(' && next != '=' && names.contains(token)) {
        out += prefix;
      }
      out += token;
      i = j;
      continue;
    }
    out += text[i++];
  }
  return out;
}

// The non-entry computations plus the entry (as a plain computation) of every conformance module,
// renamed apart, repeated until `target_bytes`; the last module's entry stays the ENTRY.
std::string BuildLargeModule(size_t target_bytes) {
  const fs::path root = test_support::SharedPath("conformance");
  std::vector<std::string> bodies;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".hlo") continue;
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(ReadAll(entry.path()));
    if (!parsed.ok()) continue;
    std::string printed = PrintModule(*parsed->module);
    // Drop the header line; turn ENTRY into a plain computation.
    printed = printed.substr(printed.find('\n') + 1);
    for (size_t at = printed.find("ENTRY "); at != std::string::npos;
         at = printed.find("ENTRY ", at)) {
      printed.erase(at, 6);
    }
    bodies.push_back(RenameComputations(printed, *parsed->module, "c0_"));
  }
  std::string text = "HloModule large, num_partitions=64\n";
  for (int round = 0; text.size() < target_bytes && !bodies.empty(); ++round) {
    for (size_t b = 0; b < bodies.size() && text.size() < target_bytes; ++b) {
      std::string body = bodies[b];
      // Make the names of this copy unique: c0_ -> r<round>m<b>_.
      const std::string prefix = absl::StrCat("r", round, "m", b, "_");
      for (size_t at = body.find("c0_"); at != std::string::npos; at = body.find("c0_", at)) {
        body.replace(at, 3, prefix);
        at += prefix.size();
      }
      text += body;
    }
  }
  text += "\nENTRY main {\n  ROOT p = f32[8] parameter(0)\n}\n";
  return text;
}

int64_t ReadStatusKb(const char* field) {
  const std::string status = base::ReadFile("/proc/self/status").value_or("");
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, field)) continue;
    int64_t kb = 0;
    return absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(line, "kB")), &kb) ? kb
                                                                                            : 0;
  }
  return 0;
}

const std::string& LargeModule() {
  static const std::string* text = [] {
    size_t mb = 100;
    if (const char* env = std::getenv("SPMDCHECK_BENCH_MB")) {
      uint64_t value = 0;
      if (absl::SimpleAtoi(env, &value) && value > 0) mb = value;
    }
    auto* built = new std::string(BuildLargeModule(mb << 20));
    // SPMDCHECK_BENCH_DUMP=PATH writes the text (for profiling the parser on a file).
    if (const char* dump = std::getenv("SPMDCHECK_BENCH_DUMP")) {
      base::WriteFile(dump, *built).IgnoreError();
    }
    return built;
  }();
  return *text;
}

void BM_ParseLargeModule(benchmark::State& state) {
  if (!test_support::HaveShared("conformance")) {
    state.SkipWithError(test_support::MissingSharedMessage("conformance").c_str());
    return;
  }
  const std::string& text = LargeModule();
  int64_t peak_extra_kb = 0;
  for (auto _ : state) {
    // Reset the high-water mark, parse, and read how far above the starting RSS it went.
    base::WriteFile("/proc/self/clear_refs", "5").IgnoreError();
    const int64_t before_kb = ReadStatusKb("VmRSS:");
    absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
    if (!parsed.ok()) {
      state.SkipWithError(std::string(parsed.status().message().substr(0, 300)).c_str());
      return;
    }
    peak_extra_kb = std::max(peak_extra_kb, ReadStatusKb("VmHWM:") - before_kb);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["text_MB"] = static_cast<double>(text.size()) / (1 << 20);
  state.counters["peak_mem_x_text"] =
      static_cast<double>(peak_extra_kb) * 1024.0 / static_cast<double>(text.size());
}
BENCHMARK(BM_ParseLargeModule)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace spmdcheck

BENCHMARK_MAIN();
