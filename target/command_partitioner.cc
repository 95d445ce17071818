#include "target/command_partitioner.h"

#include <stdlib.h>

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "base/process.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"

namespace spmdcheck::target {
namespace {

std::string Tail(const std::string& text, size_t bytes) {
  return text.size() <= bytes ? text : "..." + text.substr(text.size() - bytes);
}

}  // namespace

absl::StatusOr<PartitionOutput> CommandPartitioner::Partition(const HloModule& global,
                                                              int64_t num_partitions) {
  PartitionOutput output;
  output.report.name = spec();
  std::string dir = (std::filesystem::temp_directory_path() / "spmdcheck-cmd-XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{dir};
  const std::string in = dir + "/in.hlo";
  const std::string out = dir + "/out.hlo";
  if (absl::Status written = base::WriteFile(in, PrintModule(global)); !written.ok()) {
    return absl::InternalError(written.message());
  }
  // `sh -c 'COMMAND "$@"' sh IN OUT --num-partitions N`: the user's command as written (it may
  // carry its own arguments), our arguments passed without any quoting trouble.
  const std::vector<std::string> argv = {
      "/bin/sh", "-c", command_ + " \"$@\"", "sh",
      in,        out,  "--num-partitions",   absl::StrCat(num_partitions)};
  base::ProcessOptions process;
  process.timeout_seconds = timeout_seconds_;
  absl::StatusOr<base::ProcessResult> run = base::RunProcess(argv, process);
  if (!run.ok()) {
    output.status = PartitionStatus::kUnavailable;
    output.message = std::string(run.status().message());
    return output;
  }
  output.report.seconds = run->seconds;
  const std::string stderr_tail = Tail(run->stderr_text, 2000);
  if (!stderr_tail.empty()) output.report.warnings.push_back(stderr_tail);
  if (run->timed_out) {
    output.status = PartitionStatus::kTimeout;
    output.message = absl::StrCat("'", command_, "' ", run->Describe());
    return output;
  }
  if (!run->exited() || (run->exit_code != 0 && run->exit_code != 2 && run->exit_code != 3)) {
    output.status = run->exit_code == 127 ? PartitionStatus::kUnavailable : PartitionStatus::kCrash;
    output.message = absl::StrCat("'", command_, "' ", run->Describe(),
                                  stderr_tail.empty() ? "" : ": ", stderr_tail);
    return output;
  }
  if (run->exit_code == 2 || run->exit_code == 3) {
    output.status =
        run->exit_code == 2 ? PartitionStatus::kRejected : PartitionStatus::kUnsupported;
    output.message =
        stderr_tail.empty() ? absl::StrCat("'", command_, "' ", run->Describe()) : stderr_tail;
    return output;
  }
  absl::StatusOr<std::string> text = base::ReadFile(out);
  if (!text.ok()) {
    output.status = PartitionStatus::kCrash;
    output.message =
        absl::IsNotFound(text.status())
            ? absl::StrCat("'", command_, "' exited 0 but wrote no ", out)
            : absl::StrCat("'", command_,
                           "' exited 0 but its output cannot be read: ", text.status().message());
    return output;
  }
  output.partitioned_text = *std::move(text);
  absl::StatusOr<ParsedModule> parsed =
      ParseHloModule(output.partitioned_text, {.path = "<partitioned by " + command_ + ">"});
  if (!parsed.ok()) {
    output.status = PartitionStatus::kCrash;
    output.message = absl::StrCat("its output does not parse: ", parsed.status().message());
    return output;
  }
  output.status = PartitionStatus::kOk;
  output.partitioned = std::move(parsed->module);
  return output;
}

}  // namespace spmdcheck::target
