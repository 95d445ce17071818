// The runnable XLA collective modules (../shared/conformance/xla-collectives-2023) execute on
// the engine. Their tests do not record replica or partition counts, so each module is tried
// with the counts its replica groups imply (largest id + 1) as replicas, as partitions, and split.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "oracle/engine.h"
#include "tests/shared_dir.h"
#include "tests/test_files.h"

namespace spmdcheck::oracle {
namespace {

namespace fs = std::filesystem;

int64_t LargestId(const HloModule& module) {
  int64_t largest = 0;
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      const HloAttributes& a = instruction->attrs();
      if (a.replica_groups) {
        for (const auto& group : a.replica_groups->groups()) {
          for (int64_t id : group) largest = std::max(largest, id);
        }
      }
      if (a.source_target_pairs) {
        for (const auto& [s, t] : *a.source_target_pairs) largest = std::max({largest, s, t});
      }
    }
  }
  return largest;
}

TEST(OracleConformanceTest, RunnableCollectiveModulesExecute) {
  SPMDCHECK_SKIP_WITHOUT_SHARED("conformance/xla-collectives-2023");
  const fs::path dir = test_support::SharedPath("conformance/xla-collectives-2023");
  int total = 0, runnable = 0, ran = 0;
  std::vector<std::string> failed;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".hlo") continue;
    ++total;
    absl::StatusOr<ParsedModule> parsed =
        ParseHloModule(test_support::ReadFileOrFail(entry.path()));
    ASSERT_TRUE(parsed.ok()) << parsed.status().message();
    const HloModule& module = *parsed->module;
    if (!VerifyModule(module).ok()) continue;
    // Device counts to try: what the groups name, what gather/scatter size ratios imply, and
    // small powers of two; each as replicas, as partitions, and split in two.
    std::set<int64_t> counts = {LargestId(module) + 1, 1, 2, 4, 8};
    for (const auto& computation : module.computations()) {
      for (const auto& instruction : computation->instructions()) {
        const HloAttributes& a = instruction->attrs();
        if (!a.dimensions || a.dimensions->size() != 1 || instruction->operand_count() < 1)
          continue;
        const Shape& in = instruction->operand(0)->shape();
        const Shape& out = instruction->shape().IsTuple() && instruction->shape().tuple_size() > 0
                               ? instruction->shape().tuple_shapes().back()
                               : instruction->shape();
        const int64_t d = (*a.dimensions)[0];
        if (!in.IsArray() || !out.IsArray() || d < 0 || d >= in.rank() || d >= out.rank() ||
            in.dimensions(d) == 0 || out.dimensions(d) == 0) {
          continue;
        }
        if (instruction->opcode() == HloOpcode::kAllGather)
          counts.insert(out.dimensions(d) / in.dimensions(d));
        if (instruction->opcode() == HloOpcode::kReduceScatter)
          counts.insert(in.dimensions(d) / out.dimensions(d));
      }
    }
    std::vector<std::pair<int64_t, int64_t>> configs;
    for (int64_t n : counts) {
      if (n < 1 || n > 64) continue;
      configs.push_back({n, 1});
      configs.push_back({1, n});
      if (n % 2 == 0) configs.push_back({2, n / 2});
      if (n % 2 == 0) configs.push_back({n / 2, 2});
    }
    bool is_runnable = false, executed = false;
    std::string last_error;
    for (const auto& [replicas, partitions] : configs) {
      EngineOptions options;
      options.replica_count = replicas;
      options.num_partitions = partitions;
      Engine engine(module, options);
      if (!engine.CheckRunnable().ok()) break;
      is_runnable = true;
      std::vector<std::vector<Literal>> args(engine.num_devices());
      bool has_params = false;
      for (const HloInstruction* p : module.entry()->parameters()) {
        has_params = true;
        for (auto& device_args : args) device_args.emplace_back(p->shape());
      }
      (void)has_params;
      absl::StatusOr<std::vector<Literal>> results = engine.Run(std::move(args));
      if (results.ok()) {
        executed = true;
        break;
      }
      last_error = std::string(results.status().message());
      if (absl::IsUnimplemented(results.status())) {
        is_runnable = false;  // e.g. an elided constant: not runnable.
        break;
      }
    }
    runnable += is_runnable ? 1 : 0;
    ran += executed ? 1 : 0;
    if (is_runnable && !executed) {
      failed.push_back(entry.path().filename().string() + ": " + last_error);
    }
  }
  std::cout << total << " modules, " << runnable << " runnable, " << ran << " executed\n";
  for (const std::string& f : failed) std::cout << "did not execute: " << f << "\n";
  // The one module that does not execute, reduce_scatter_reassociate.MismatchReplicaGroups, has
  // groups no single replica/partition count satisfies (its rewrite-pass test never runs it).
  EXPECT_LE(failed.size(), 1u);
  EXPECT_GE(ran, 119);
}

}  // namespace
}  // namespace spmdcheck::oracle
