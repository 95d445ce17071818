#include "tools/partitioner_flags.h"

#include "absl/strings/str_cat.h"
#include "check/version_matrix.h"

namespace spmdcheck::cli {

void AddPartitionerFlags(CLI::App& app, PartitionerFlags& flags) {
  constexpr char kGroup[] = "partitioner under test";
  AddOptional(app, "--partitioner", flags.partitioner,
              "reference (default), xla (XLA's GSPMD), shardy (XLA's Shardy), cmd:COMMAND\n"
              "(docs/partitioners.md), or several separated by commas (xla,shardy);\n"
              "reference+bug=NAME switches on an injected bug of the reference\n"
              "partitioner (spmdcheck fuzz --list-bugs)")
      ->type_name("SPEC")
      ->group(kGroup);
  AddOptional(app, "--inject-bug", flags.inject_bug,
              "the same, shorthand: +bug=NAME on the partitioner (reference only)")
      ->type_name("NAME")
      ->group(kGroup);
  AddOptional(app, "--xla-venv", flags.xla_venvs,
              "the virtual environment whose jax/jaxlib to test (default: the project's\n"
              ".venv; also SPMDCHECK_XLA_VENV); check and fuzz try each finding on the\n"
              "further ones too (other jaxlib versions; default: the checkout's\n"
              ".venv-jax*/, or SPMDCHECK_XLA_MATRIX)")
      ->type_name("DIR[,DIR]")
      ->delimiter(',')
      ->group(kGroup);
  AddOptional(app, "--timeout", flags.timeout,
              "per compile (xla, shardy) or per command run (cmd:); default 120")
      ->type_name("SECONDS")
      ->check(Number())
      ->group(kGroup);
}

absl::StatusOr<PartitionerChoice> ChoosePartitioner(const PartitionerFlags& flags) {
  PartitionerChoice choice;
  choice.specs = flags.partitioner.value_or(target::kDefaultPartitionerSpec);
  // The shorthand: `--inject-bug NAME` is `+bug=NAME` on every spec (refused for partitioners
  // without injected bugs).
  if (flags.inject_bug.has_value()) {
    absl::StatusOr<std::string> specs = target::WithInjectedBug(choice.specs, *flags.inject_bug);
    if (!specs.ok()) return specs.status();
    choice.specs = *std::move(specs);
  }
  if (flags.xla_venvs.has_value()) {
    std::vector<std::string> list;
    for (const std::string& venv : *flags.xla_venvs) {
      if (!venv.empty()) list.push_back(venv);
    }
    if (list.empty()) return absl::InvalidArgumentError("--xla-venv takes a directory");
    choice.options.python = list[0] + "/bin/python";
    absl::StrAppend(&choice.reproduce_flags, " --xla-venv ", list[0]);
    for (size_t i = 1; i < list.size(); ++i) {
      choice.other_xla_pythons.push_back(list[i] + "/bin/python");
    }
  } else {
    // The version matrix: the checkout's .venv-jax*/ (or SPMDCHECK_XLA_MATRIX).
    choice.other_xla_pythons = check::DefaultMatrixPythons();
  }
  if (flags.timeout.has_value()) {
    const double seconds = *flags.timeout;
    if (!(seconds > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--timeout takes a positive number of seconds, not ", seconds));
    }
    choice.options.compile_timeout_seconds = seconds;
    choice.options.command_timeout_seconds = seconds;
    absl::StrAppend(&choice.reproduce_flags, " --timeout ", seconds);
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
