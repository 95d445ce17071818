// Shared pieces of the `spmdcheck` subcommands: exit codes, argument parsing, file reading.
#ifndef SPMDCHECK_TOOLS_CLI_H_
#define SPMDCHECK_TOOLS_CLI_H_

#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spmdcheck::cli {

// Exit codes shared by every subcommand (DESIGN.md).
inline constexpr int kExitHolds = 0;
inline constexpr int kExitFails = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitUnknown = 3;

// Parsed command line of one subcommand: `--flag value`, `--flag=value`, boolean `--flag`, and
// positional arguments. Unknown flags are errors.
class Args {
 public:
  // `value_flags` take a value; `bool_flags` do not.
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& argv,
                                    const std::set<std::string>& value_flags,
                                    const std::set<std::string>& bool_flags);

  const std::vector<std::string>& positional() const { return positional_; }
  bool Has(absl::string_view flag) const;
  std::optional<std::string> Get(absl::string_view flag) const;
  // The flag as an integer; error when malformed; `fallback` when absent.
  absl::StatusOr<int64_t> GetInt(absl::string_view flag, int64_t fallback) const;
  // An unsigned 64-bit flag (seeds: the campaign's case seeds use all 64 bits).
  absl::StatusOr<uint64_t> GetUint64(absl::string_view flag, uint64_t fallback) const;

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string, std::less<>> values_;
};

// Reads a whole file; clear errors for missing files, directories and files over 1 GiB.
absl::StatusOr<std::string> ReadFile(const std::string& path);

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
