#include "target/partitioner_under_test.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "partitioner/injected_bugs.h"
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

namespace {

constexpr char kBugSuffix[] = "+bug=";

absl::Status NoInjectedBugs(absl::string_view name) {
  return absl::InvalidArgumentError(absl::StrCat(
      "--inject-bug (+bug=NAME) switches on a bug of the reference partitioner, not of ", name));
}

}  // namespace

std::string PartitionerSpec::ToString() const {
  return inject_bug.empty() ? name : absl::StrCat(name, kBugSuffix, inject_bug);
}

absl::StatusOr<PartitionerSpec> ParsePartitionerSpec(absl::string_view spec) {
  PartitionerSpec parsed;
  if (absl::StartsWith(spec, "cmd:")) {
    if (spec.size() == 4) return absl::InvalidArgumentError("cmd: needs a command");
    parsed.name = std::string(spec);
    return parsed;
  }
  const size_t plus = spec.find('+');
  parsed.name = std::string(spec.substr(0, plus));
  if (parsed.name != kDefaultPartitionerSpec && !IsXlaSpec(parsed.name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown partitioner '", spec, "' (reference, xla, shardy, or cmd:COMMAND)"));
  }
  if (plus == absl::string_view::npos) return parsed;
  const absl::string_view suffix = spec.substr(plus);
  if (!absl::StartsWith(suffix, kBugSuffix) || suffix.size() == sizeof(kBugSuffix) - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("partitioner '", spec, "': the only suffix is +bug=NAME (an injected bug)"));
  }
  parsed.inject_bug = std::string(suffix.substr(sizeof(kBugSuffix) - 1));
  absl::StatusOr<PartitionerCapabilities> capabilities = CapabilitiesOfSpec(parsed.name);
  if (!capabilities.ok()) return capabilities.status();
  if (!capabilities->injected_bugs) return NoInjectedBugs(parsed.name);
  if (!partitioner::IsInjectedBug(parsed.inject_bug)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown injected bug '", parsed.inject_bug,
                                                   "' (spmdcheck fuzz --list-bugs)"));
  }
  return parsed;
}

absl::StatusOr<PartitionerCapabilities> CapabilitiesOfSpec(absl::string_view spec) {
  if (absl::StartsWith(spec, "cmd:")) return CommandPartitioner::Capabilities();
  absl::string_view name = spec.substr(0, spec.find('+'));
  if (name == kDefaultPartitionerSpec) return ReferencePartitioner::Capabilities();
  if (IsXlaSpec(name)) return XlaPartitioner::Capabilities(name == "shardy");
  return absl::InvalidArgumentError(
      absl::StrCat("unknown partitioner '", spec, "' (reference, xla, shardy, or cmd:COMMAND)"));
}

bool AnySpecCan(absl::string_view specs, bool PartitionerCapabilities::*capability) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  if (!split.ok()) return false;
  return std::any_of(split->begin(), split->end(), [&](const std::string& spec) {
    absl::StatusOr<PartitionerCapabilities> capabilities = CapabilitiesOfSpec(spec);
    return capabilities.ok() && (*capabilities).*capability;
  });
}

double ReduceSecondsOf(absl::string_view specs) {
  double seconds = PartitionerCapabilities().reduce_seconds;
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  for (const std::string& spec : split.ok() ? *split : std::vector<std::string>{}) {
    absl::StatusOr<PartitionerCapabilities> capabilities = CapabilitiesOfSpec(spec);
    if (capabilities.ok()) seconds = std::max(seconds, capabilities->reduce_seconds);
  }
  return seconds;
}

absl::StatusOr<std::string> WithInjectedBug(absl::string_view specs, absl::string_view bug) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  if (!split.ok()) return split.status();
  std::vector<std::string> out;
  for (const std::string& one : *split) {
    absl::StatusOr<PartitionerSpec> parsed = ParsePartitionerSpec(one);
    if (!parsed.ok()) return parsed.status();
    absl::StatusOr<PartitionerCapabilities> capabilities = CapabilitiesOfSpec(one);
    if (!capabilities.ok()) return capabilities.status();
    if (!capabilities->injected_bugs) return NoInjectedBugs(one);
    if (!parsed->inject_bug.empty() && parsed->inject_bug != bug) {
      return absl::InvalidArgumentError(
          absl::StrCat("--inject-bug ", bug, ": partitioner '", one, "' has another injected bug"));
    }
    parsed->inject_bug = std::string(bug);
    absl::StatusOr<PartitionerSpec> checked = ParsePartitionerSpec(parsed->ToString());
    if (!checked.ok()) return checked.status();
    out.push_back(checked->ToString());
  }
  return absl::StrJoin(out, ",");
}

std::vector<InjectableBug> InjectableBugs() {
  std::vector<InjectableBug> bugs;
  for (const partitioner::InjectedBug& bug : partitioner::InjectedBugs()) {
    bugs.push_back({std::string(bug.name), std::string(bug.description)});
  }
  return bugs;
}

bool IsInjectableBug(absl::string_view name) { return partitioner::IsInjectedBug(name); }

std::string InjectedBugOf(absl::string_view specs) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  for (const std::string& spec : split.ok() ? *split : std::vector<std::string>{}) {
    absl::StatusOr<PartitionerSpec> parsed = ParsePartitionerSpec(spec);
    if (parsed.ok() && !parsed->inject_bug.empty()) return parsed->inject_bug;
  }
  return "";
}

std::string WithoutInjectedBugs(absl::string_view specs) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  if (!split.ok()) return std::string(specs);
  std::vector<std::string> names;
  for (const std::string& spec : *split) {
    absl::StatusOr<PartitionerSpec> parsed = ParsePartitionerSpec(spec);
    names.push_back(parsed.ok() ? parsed->name : spec);
  }
  return absl::StrJoin(names, ",");
}

std::string ReproducePartitionerFlags(absl::string_view full_spec,
                                      std::string (*quote)(const std::string&)) {
  if (full_spec == kDefaultPartitionerSpec) return "";
  absl::StatusOr<PartitionerSpec> parsed = ParsePartitionerSpec(full_spec);
  if (parsed.ok() && parsed->name == kDefaultPartitionerSpec && !parsed->inject_bug.empty()) {
    return absl::StrCat(" --inject-bug ", parsed->inject_bug);
  }
  return absl::StrCat(" --partitioner ",
                      quote == nullptr ? std::string(full_spec) : quote(std::string(full_spec)));
}

std::string PartitionerTitle(absl::string_view spec) {
  if (spec == "xla") return "GSPMD";
  if (spec == "shardy") return "Shardy";
  if (spec == kDefaultPartitionerSpec) return "spmdcheck's reference partitioner";
  return std::string(spec);
}

std::unique_ptr<PartitionerUnderTest> MakeOurPartitioner() {
  return std::make_unique<ReferencePartitioner>("");
}

absl::StatusOr<std::vector<std::unique_ptr<PartitionerUnderTest>>> MakePartitioners(
    absl::string_view specs, const TargetOptions& options) {
  absl::StatusOr<std::vector<std::string>> split = SplitPartitionerSpecs(specs);
  if (!split.ok()) return split.status();
  std::vector<std::unique_ptr<PartitionerUnderTest>> out;
  std::shared_ptr<XlaWorker> worker;  // `xla` and `shardy` share one worker process.
  for (const std::string& spec : *split) {
    if (IsXlaSpec(spec)) {
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
  absl::StatusOr<PartitionerSpec> parsed = ParsePartitionerSpec(spec);
  if (!parsed.ok()) return parsed.status();
  if (parsed->name == kDefaultPartitionerSpec) {
    return std::make_unique<ReferencePartitioner>(parsed->inject_bug);
  }
  if (IsXlaSpec(parsed->name)) {
    return std::make_unique<XlaPartitioner>(parsed->name, MakeXlaWorker(options), options);
  }
  return std::make_unique<CommandPartitioner>(parsed->name.substr(4), options);
}

bool IsReferenceSpec(absl::string_view spec) { return spec == kDefaultPartitionerSpec; }

}  // namespace spmdcheck::target
