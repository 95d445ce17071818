#include "tools/partitioner_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "check/version_matrix.h"

namespace spmdcheck::cli {

absl::StatusOr<PartitionerChoice> PartitionerChoiceFromArgs(const Args& args) {
  PartitionerChoice choice;
  choice.specs = args.Get("--partitioner").value_or(target::kDefaultPartitionerSpec);
  // The shorthand: `--inject-bug NAME` is `+bug=NAME` on every spec (refused for partitioners
  // without injected bugs).
  if (std::optional<std::string> bug = args.Get("--inject-bug"); bug.has_value()) {
    absl::StatusOr<std::string> specs = target::WithInjectedBug(choice.specs, *bug);
    if (!specs.ok()) return specs.status();
    choice.specs = *std::move(specs);
  }
  if (std::optional<std::string> venvs = args.Get("--xla-venv")) {
    std::vector<std::string> list = absl::StrSplit(*venvs, ',', absl::SkipEmpty());
    if (list.empty()) return absl::InvalidArgumentError("--xla-venv takes a directory");
    choice.options.python = list[0] + "/bin/python";
    absl::StrAppend(&choice.reproduce_flags, " --xla-venv ", list[0]);
    for (size_t i = 1; i < list.size(); ++i) {
      choice.other_xla_pythons.push_back(list[i] + "/bin/python");
    }
  }
  if (!args.Get("--xla-venv").has_value()) {
    // The version matrix: the checkout's .venv-jax*/ (or SPMDCHECK_XLA_MATRIX).
    choice.other_xla_pythons = check::DefaultMatrixPythons();
  }
  if (std::optional<std::string> timeout = args.Get("--timeout")) {
    double seconds = 0;
    if (!absl::SimpleAtod(*timeout, &seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--timeout takes a positive number of seconds, not '", *timeout, "'"));
    }
    choice.options.compile_timeout_seconds = seconds;
    choice.options.command_timeout_seconds = seconds;
    absl::StrAppend(&choice.reproduce_flags, " --timeout ", *timeout);
  }
  absl::StatusOr<std::vector<std::string>> split = target::SplitPartitionerSpecs(choice.specs);
  if (!split.ok()) return split.status();
  for (const std::string& spec : *split) {
    absl::StatusOr<target::PartitionerSpec> parsed = target::ParsePartitionerSpec(spec);
    if (!parsed.ok()) return parsed.status();
  }
  return choice;
}

}  // namespace spmdcheck::cli
