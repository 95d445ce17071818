// Shared pieces of the `spmdcheck` subcommands: exit codes, command lines (CLI11), file reading.
#ifndef SPMDCHECK_TOOLS_CLI_H_
#define SPMDCHECK_TOOLS_CLI_H_

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spmdcheck::cli {

// Exit codes shared by every subcommand (DESIGN.md).
inline constexpr int kExitHolds = 0;
inline constexpr int kExitFails = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitUnknown = 3;

// The command line of one subcommand, declared with CLI11: typed options, flags and positional
// arguments are added to app() before Parse() fills them. `--flag value` and `--flag=value` both
// work; an option given twice keeps its last value. Never exits the process: errors and --help
// come back as exit codes.
class Command {
 public:
  // `name` as in messages ("fmt", "prove rule"); `usage` the synopsis (`usage: spmdcheck fmt
  // FILE ...`, one or more lines); `description` the prose under it; `footer` what follows the
  // flags in --help (the exit codes).
  Command(std::string name, std::string usage, std::string description, std::string footer);
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  CLI::App& app() { return app_; }
  const std::string& name() const { return name_; }
  // The generated help: usage, description, arguments, flags by group, footer.
  std::string Help() const { return app_.help(); }

  // Parses `argv` (what follows the subcommand's name). Returns nullopt when the command is to
  // run; otherwise the exit code to return at once: kExitHolds after printing the help to `out`
  // (-h, --help), kExitBadInput after printing the error (an unknown flag, a malformed number, a
  // missing or extra argument) and the usage to `err`.
  std::optional<int> Parse(const std::vector<std::string>& argv, std::ostream& out,
                           std::ostream& err);

  // `spmdcheck NAME: error: MESSAGE`, then the usage, on `err`; returns kExitBadInput.
  int UsageError(std::ostream& err, absl::string_view message) const;

 private:
  std::string name_;
  std::string usage_;
  CLI::App app_;
};

// Transforms for integer options (`->transform(DecimalInt64())`): the text must be a decimal
// integer in the type's range, and CLI11 converts its canonical form (CLI11 alone reads 010 as
// octal and 0x10 as hex, and saturates on overflow). The messages read `--seed: expects an
// integer ...`.
CLI::Validator DecimalInt64();
CLI::Validator DecimalUint64();
// A check for floating-point options (`->check(Number())`): `--hours: expects a number, not 'x'`.
CLI::Validator Number();

// CLI::ExistingFile without the `:FILE` it would add to the option's name in the help.
CLI::Validator InputFile();

// An option whose absence matters: `value` is set only when the flag is given (CLI11 2.1 has no
// std::optional support of its own).
template <typename T>
CLI::Option* AddOptional(CLI::App& app, const std::string& name, std::optional<T>& value,
                         const std::string& description) {
  return app.add_option_function<T>(
      name, [&value](const T& given) { value = given; }, description);
}

// Prints `spmdcheck <command>: error: MESSAGE` (or the message as is when it already carries a
// location) and returns kExitBadInput.
int BadInput(std::ostream& err, absl::string_view command, absl::string_view message);

// Subcommands. Each returns an exit code.
int RunParse(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunFmt(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunSharding(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunRun(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunEquiv(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunProve(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `prove rewrites` and `prove instructions` (dispatched from RunProve).
int RunProveRewrites(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunProveInstructions(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err);
int RunProveRule(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunPartition(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunCheck(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunReshard(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunReduce(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunFuzz(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunNightly(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunRepro(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunLint(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunExplain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int RunReport(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace spmdcheck::cli

#endif  // SPMDCHECK_TOOLS_CLI_H_
