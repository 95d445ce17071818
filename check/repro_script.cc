#include "check/repro_script.h"

#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "ir/data_dir.h"
#include "ir/hlo_printer.h"
#include "nlohmann/json.hpp"
#include "oracle/inputs.h"
#include "target/partitioner_under_test.h"
#include "target/xla_worker.h"

namespace spmdcheck::check {

using target::EncodeArray;
using target::PartitionerUnderTest;
using target::PartitionOutput;
using target::PartitionStatus;
namespace {

constexpr char kTemplate[] =
#include "check/repro_template.inc"
    ;

// A Python string literal holding `text` exactly: a raw triple-quoted string where that is
// faithful, else a JSON string (JSON's escapes are Python's).
std::string PythonString(const std::string& text) {
  if (!absl::StrContains(text, "'''") && !absl::EndsWith(text, "\\") &&
      !absl::EndsWith(text, "'")) {
    return absl::StrCat("r'''", text, "'''");
  }
  return nlohmann::json(text).dump();
}

std::string PythonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(nlohmann::json(item).dump());
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// The jax version workers/xla/requirements.txt pins, or "unknown".
std::string PinnedJaxVersion() {
  const absl::StatusOr<std::string> text =
      base::ReadFile(SpmdcheckDataDir() + "/workers/xla/requirements.txt");
  if (!text.ok()) return "unknown";
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    absl::string_view view = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&view, "jax==")) return std::string(view);
  }
  return "unknown";
}

// "jax 0.10.2, jaxlib 0.10.2" -> "0.10.2".
std::string JaxVersionOf(const std::string& versions) {
  for (absl::string_view part : absl::StrSplit(versions, ", ")) {
    if (absl::ConsumePrefix(&part, "jax ")) return std::string(part);
  }
  return "";
}

std::vector<std::string> LeafShardingTexts(const HloInstruction& root) {
  const HloSharding sharding = root.sharding().value_or(HloSharding::Replicate());
  if (!root.shape().IsTuple()) return {sharding.ToString()};
  std::vector<std::string> out;
  for (int64_t k = 0; k < root.shape().tuple_size(); ++k) {
    out.push_back(sharding.IsTuple() ? sharding.tuple_elements()[k].ToString()
                                     : sharding.ToString());
  }
  return out;
}

// The per-device program as XLA runs a program it must not partition again: every value
// manual (XLA compiles N partitions only with SPMD partitioning on; a manual program passes
// through the partitioner unchanged, as shard_map bodies do), other shardings dropped.
std::string AsManualProgram(const HloModule& partitioned) {
  std::unique_ptr<HloModule> copy = partitioned.Clone();
  for (const auto& computation : copy->computations()) {
    for (const auto& instruction : computation->instructions()) instruction->clear_sharding();
  }
  for (HloInstruction* p : copy->entry()->parameters()) p->set_sharding(HloSharding::Manual());
  HloInstruction* root = copy->entry()->root();
  if (root->shape().IsTuple()) {
    root->set_sharding(HloSharding::Tuple(std::vector<HloSharding>(
        static_cast<size_t>(root->shape().LeafCount()), HloSharding::Manual())));
  } else {
    root->set_sharding(HloSharding::Manual());
  }
  return PrintModule(*copy);
}

}  // namespace

const char* ReproModeName(ReproMode mode) {
  switch (mode) {
    case ReproMode::kGspmd:
      return "gspmd";
    case ReproMode::kShardy:
      return "shardy";
    case ReproMode::kPartitioned:
      return "partitioned";
  }
  return "?";
}

absl::StatusOr<std::string> RenderReproScript(const ReproScript& script) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const Literal& input : script.inputs) {
    absl::StatusOr<nlohmann::json> encoded = EncodeArray(input);
    if (!encoded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot embed an input: ", encoded.status().message()));
    }
    inputs.push_back(*std::move(encoded));
  }
  const std::string how =
      script.mode == ReproMode::kPartitioned
          ? "the per-device program another partitioner wrote (SHARDED_TEXT), run by XLA "
            "without partitioning"
          : absl::StrCat("XLA's ", script.mode == ReproMode::kShardy ? "Shardy" : "GSPMD",
                         " partitioner");
  std::ostringstream out;
  out << "#!/usr/bin/env python3\n\"\"\"" << script.title << "\n\n"
      << "Written by spmdcheck (" << absl::StrReplaceAll(script.command, {{"\"\"\"", "'''"}})
      << ").\nNeeds nothing but `pip install jax==" << script.jax_version
      << "`; run `python repro.py`.\n"
      << "Compiles the global module for one CPU device and, sharded over " << script.num_partitions
      << " CPU devices with\n"
      << how
      << ", runs both on the inputs below, prints both results\n"
         "and exits 1 when they differ (0 when they agree, 2 when it cannot run). A crash of "
         "XLA's\ncompiler ends the process with XLA's message.\n\"\"\"\n"
      << "N = " << script.num_partitions << "\n"
      << "MODE = \"" << ReproModeName(script.mode) << "\"\n"
      << "PINNED_JAX = " << nlohmann::json(script.jax_version).dump() << "\n"
      << "PADDING = \"" << (script.mode == ReproMode::kPartitioned ? "poison" : "zeros") << "\"\n"
      << "FOUND = " << nlohmann::json(script.found).dump() << "\n"
      << "GLOBAL_HLO = " << PythonString(script.global_hlo) << "\n"
      << "SHARDED_TEXT = " << PythonString(script.sharded_text) << "\n"
      << "PARAMETER_SHARDINGS = " << PythonList(script.parameter_shardings) << "\n"
      << "OUTPUT_SHARDINGS = " << PythonList(script.output_shardings) << "\n";
  // The inputs, readable, then exact.
  for (size_t i = 0; i < script.inputs.size(); ++i) {
    std::string text = script.inputs[i].ToString();
    if (text.size() > 400) text = text.substr(0, 400) + " ...";
    out << "# input " << i << ": " << absl::StrReplaceAll(text, {{"\n", " "}}) << "\n";
  }
  out << "INPUTS = " << inputs.dump() << "\n\n" << kTemplate;
  return out.str();
}

absl::StatusOr<ReproScript> MakeReproScript(const HloModule& global,
                                            PartitionerUnderTest& partitioner,
                                            const ReproRequest& request) {
  if (global.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  ReproScript script;
  script.num_partitions =
      request.num_partitions > 0 ? request.num_partitions : global.num_partitions();
  script.global_hlo = PrintModule(global);
  script.found = request.found;
  script.command = request.command;
  script.jax_version = PinnedJaxVersion();
  for (const HloInstruction* p : global.entry()->parameters()) {
    if (!p->shape().IsArray()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", p->name(), " is a tuple: repro scripts pass arrays only"));
    }
  }
  script.inputs =
      oracle::TrialInputs(global, request.seed, request.trial, oracle::InputStyle::kSmallIntegers);
  const std::string spec = partitioner.spec();
  if (target::JaxReproducible* xla = partitioner.jax_reproducible()) {
    script.mode = xla->shardy() ? ReproMode::kShardy : ReproMode::kGspmd;
    if (xla->shardy()) {
      absl::StatusOr<std::string> mlir = xla->StableHloText(global, script.num_partitions);
      if (!mlir.ok()) return mlir.status();
      script.sharded_text = *std::move(mlir);
    }
    if (const std::string version = JaxVersionOf(xla->versions()); !version.empty()) {
      script.jax_version = version;
    }
    script.title = absl::StrCat("XLA's ", xla->shardy() ? "Shardy" : "GSPMD",
                                " partitioning of module ", global.name(), " over ",
                                script.num_partitions, " devices, against one device");
    return script;
  }
  absl::StatusOr<PartitionOutput> out = partitioner.Partition(global, script.num_partitions);
  if (!out.ok()) return out.status();
  if (out->status != PartitionStatus::kOk) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the partitioner ", spec, " gave ", PartitionStatusName(out->status), ": ", out->message));
  }
  script.mode = ReproMode::kPartitioned;
  script.sharded_text = AsManualProgram(*out->partitioned);
  if (!out->parameter_shardings.empty()) {
    for (const HloSharding& s : out->parameter_shardings) {
      script.parameter_shardings.push_back(s.ToString());
    }
  } else {
    for (const HloInstruction* p : global.entry()->parameters()) {
      script.parameter_shardings.push_back(
          p->sharding().value_or(HloSharding::Replicate()).ToString());
    }
  }
  if (!out->output_shardings.empty()) {
    for (const HloSharding& s : out->output_shardings)
      script.output_shardings.push_back(s.ToString());
  } else {
    script.output_shardings = LeafShardingTexts(*global.entry()->root());
  }
  script.title = absl::StrCat("The partitioning of module ", global.name(), " by ", spec, " over ",
                              script.num_partitions, " devices, run by XLA, against one device");
  return script;
}

}  // namespace spmdcheck::check
