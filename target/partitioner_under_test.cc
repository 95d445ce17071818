#include "target/partitioner_under_test.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "target/command_partitioner.h"
#include "target/reference_partitioner.h"
#include "target/xla_partitioner.h"

namespace spmdcheck::target {

const char* PartitionStatusName(PartitionStatus status) {
  switch (status) {
    case PartitionStatus::kOk:
      return "ok";
    case PartitionStatus::kRejected:
      return "rejected";
    case PartitionStatus::kUnsupported:
      return "unsupported";
    case PartitionStatus::kUnavailable:
      return "unavailable";
    case PartitionStatus::kCrash:
      return "crash";
    case PartitionStatus::kTimeout:
      return "timeout";
  }
  return "?";
}

absl::StatusOr<std::vector<Literal>> PartitionerUnderTest::RunGlobal(const HloModule&,
                                                                     const std::vector<Literal>&) {
  return absl::UnimplementedError(absl::StrCat(spec(), " cannot run programs"));
}

absl::StatusOr<std::vector<std::string>> SplitPartitionerSpecs(absl::string_view specs) {
  std::vector<std::string> out;
  while (!specs.empty()) {
    if (absl::StartsWith(specs, "cmd:")) {
      out.emplace_back(specs);
      break;
    }
    const size_t comma = specs.find(',');
    std::string one(specs.substr(0, comma));
    if (one.empty()) return absl::InvalidArgumentError("empty partitioner in --partitioner");
    out.push_back(std::move(one));
    if (comma == absl::string_view::npos) break;
    specs.remove_prefix(comma + 1);
  }
  if (out.empty()) return absl::InvalidArgumentError("--partitioner needs a partitioner");
  return out;
}

bool IsXlaSpec(absl::string_view spec) {
  return spec == "xla" || spec == "gspmd" || spec == "shardy";
}

bool AnySpec(absl::string_view specs, bool (*wanted)(absl::string_view spec)) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  return split.ok() && std::any_of(split->begin(), split->end(),
                                   [&](const std::string& spec) { return wanted(spec); });
}

absl::StatusOr<std::vector<std::unique_ptr<PartitionerUnderTest>>> MakePartitioners(
    absl::string_view specs, const TargetOptions& options) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  if (!split.ok()) return split.status();
  std::vector<std::unique_ptr<PartitionerUnderTest>> out;
  std::shared_ptr<XlaWorker> worker;  // `xla` and `shardy` share one worker process.
  for (const std::string& spec : *split) {
    if (IsXlaSpec(spec)) {
      if (!options.inject_bug.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--inject-bug switches on a bug of the reference partitioner, not of ", spec));
      }
      if (worker == nullptr) worker = MakeXlaWorker(options);
      out.push_back(std::make_unique<XlaPartitioner>(spec, worker, options));
      continue;
    }
    absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> one = MakePartitioner(spec, options);
    if (!one.ok()) return one.status();
    out.push_back(*std::move(one));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> MakePartitioner(
    absl::string_view spec, const TargetOptions& options) {
  if (spec == "reference") return std::make_unique<ReferencePartitioner>(options.inject_bug);
  if (!options.inject_bug.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--inject-bug switches on a bug of the reference partitioner, not of ", spec));
  }
  if (IsXlaSpec(spec)) {
    return std::make_unique<XlaPartitioner>(std::string(spec), MakeXlaWorker(options), options);
  }
  if (absl::StartsWith(spec, "cmd:")) {
    std::string command(spec.substr(4));
    if (command.empty()) return absl::InvalidArgumentError("cmd: needs a command");
    return std::make_unique<CommandPartitioner>(std::move(command), options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown partitioner '", spec, "' (reference, xla, shardy, or cmd:COMMAND)"));
}

}  // namespace spmdcheck::target
