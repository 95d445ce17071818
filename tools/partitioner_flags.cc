#include "tools/partitioner_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck::cli {

absl::StatusOr<PartitionerChoice> PartitionerChoiceFromArgs(const Args& args) {
  PartitionerChoice choice;
  choice.specs = args.Get("--partitioner").value_or("reference");
  choice.options.inject_bug = args.Get("--inject-bug").value_or("");
  if (!choice.options.inject_bug.empty()) {
    absl::StrAppend(&choice.reproduce_flags, " --inject-bug ", choice.options.inject_bug);
  }
  if (std::optional<std::string> venv = args.Get("--xla-venv")) {
    choice.options.python = *venv + "/bin/python";
    absl::StrAppend(&choice.reproduce_flags, " --xla-venv ", *venv);
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
  return choice;
}

}  // namespace spmdcheck::cli
