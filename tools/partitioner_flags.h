// The flags that choose and configure the partitioner under test, shared by `check`,
// `partition`, `fuzz`, `reduce` and `repro`: --partitioner SPEC[,SPEC...], --inject-bug NAME,
// --xla-venv DIR[,DIR...], --timeout SECONDS.
#ifndef SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_
#define SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "target/partitioner_under_test.h"
#include "tools/cli.h"

namespace spmdcheck::cli {

// The flags as given (each empty when absent).
struct PartitionerFlags {
  std::optional<std::string> partitioner;
  std::optional<std::string> inject_bug;
  std::optional<std::vector<std::string>> xla_venvs;
  std::optional<double> timeout;
};

// Adds the four flags to `app` (group "partitioner under test"); parsing fills `flags`, which
// must outlive the parse.
void AddPartitionerFlags(CLI::App& app, PartitionerFlags& flags);

struct PartitionerChoice {
  // As given to --partitioner, with --inject-bug's `+bug=NAME` on each spec.
  std::string specs = target::kDefaultPartitionerSpec;
  target::TargetOptions options;
  // The flags to repeat in a `reproduce:` line (besides the partitioner's own,
  // target::ReproducePartitionerFlags).
  std::string reproduce_flags;
  // `--xla-venv A,B,...`: A is the jaxlib under test; the others are where findings are tried
  // too (their pythons). Without --xla-venv: check::DefaultMatrixPythons().
  std::vector<std::string> other_xla_pythons;
};

// The partitioner the parsed flags choose; errors for unknown specs, bugs and empty values.
absl::StatusOr<PartitionerChoice> ChoosePartitioner(const PartitionerFlags& flags);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_
