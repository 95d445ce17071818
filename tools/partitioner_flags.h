// The flags that choose and configure the partitioner under test, shared by `check`,
// `partition`, `fuzz` and `reduce`: --partitioner SPEC[,SPEC...], --inject-bug NAME,
// --xla-venv DIR, --timeout SECONDS.
#ifndef SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_
#define SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "target/partitioner_under_test.h"
#include "tools/cli.h"

namespace spmdcheck::cli {

inline const std::set<std::string> kPartitionerValueFlags = {"--partitioner", "--inject-bug",
                                                             "--xla-venv", "--timeout"};

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

absl::StatusOr<PartitionerChoice> PartitionerChoiceFromArgs(const Args& args);

// Help text for the flags above.
inline constexpr char kPartitionerFlagsHelp[] =
    R"(  --partitioner SPEC      the partitioner under test: reference (default), xla (XLA's GSPMD),
                          shardy (XLA's Shardy), cmd:COMMAND (docs/partitioners.md), or several
                          separated by commas (xla,shardy); reference+bug=NAME switches on an
                          injected bug of the reference partitioner (spmdcheck fuzz --list-bugs)
  --inject-bug NAME       the same, shorthand: +bug=NAME on the partitioner (reference only)
  --xla-venv DIR[,DIR]    the virtual environment whose jax/jaxlib to test (default: the
                          project's .venv; also SPMDCHECK_XLA_VENV); check and fuzz try each
                          finding on the further ones too (other jaxlib versions; default:
                          the checkout's .venv-jax*/, or SPMDCHECK_XLA_MATRIX)
  --timeout SECONDS       per compile (xla, shardy) or per command run (cmd:); default 120
)";

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_PARTITIONER_FLAGS_H_
