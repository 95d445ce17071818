#include "fuzz/findings.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/file.h"
#include "base/status.h"
#include "check/signature.h"
#include "ir/hlo_opcode.h"
#include "ir/hlo_printer.h"
#include "ir/literal.h"
#include "ir/primitive_type.h"

namespace spmdcheck::fuzz {
namespace {

std::vector<std::string> Strings(const nlohmann::json& value) {
  std::vector<std::string> out;
  if (!value.is_array()) return out;
  for (const auto& v : value) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string OneLine(const std::string& text) { return absl::StrReplaceAll(text, {{"\n", " "}}); }

// A dynamic-slice or dynamic-update-slice start that is a constant of an unsigned type above
// INT32_MAX: XLA reads such a start as negative (constant-u32-slice-start-read-signed).
bool HasUnsignedStartOverInt32Max(const HloInstruction& instruction) {
  const int64_t first_start = instruction.opcode() == HloOpcode::kDynamicSlice         ? 1
                              : instruction.opcode() == HloOpcode::kDynamicUpdateSlice ? 2
                                                                                       : -1;
  if (first_start < 0) return false;
  for (int64_t i = first_start; i < instruction.operand_count(); ++i) {
    const HloInstruction& start = *instruction.operand(i);
    if (start.opcode() != HloOpcode::kConstant || !start.literal().has_value()) continue;
    const Literal& value = *start.literal();
    if (!start.shape().IsArray() || !IsUnsignedIntegralType(start.shape().element_type()) ||
        value.elided() || value.element_count() != 1) {
      continue;
    }
    if (value.GetUint64(0) > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return true;
    }
  }
  return false;
}

// An op that changes nothing about its operand's values: an identity transpose, a reshape or
// copy to the same shape, a convert to the same type.
bool IsNoOp(const HloInstruction& instruction) {
  if (instruction.operand_count() != 1) return false;
  const Shape& in = instruction.operand(0)->shape();
  const Shape& out = instruction.shape();
  if (!in.IsArray() || !out.IsArray() || in.dimensions() != out.dimensions() ||
      in.element_type() != out.element_type()) {
    return false;
  }
  switch (instruction.opcode()) {
    case HloOpcode::kTranspose: {
      const std::vector<int64_t> dims =
          instruction.attrs().dimensions.value_or(std::vector<int64_t>{});
      for (size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] != static_cast<int64_t>(i)) return false;
      }
      return true;
    }
    case HloOpcode::kReshape:
    case HloOpcode::kCopy:
    case HloOpcode::kConvert:
      return true;
    default:
      return false;
  }
}

// A no-op with a sharding of its own reading an SPMDShardToFullShape: XLA's StableHLO -> HLO
// conversion drops the no-op and writes its sharding onto the ShardToFull
// (noop-op-sharding-overwrites-shard-to-full).
bool IsShardedNoOpAfterShardToFull(const HloInstruction& instruction) {
  if (!IsNoOp(instruction) || !instruction.sharding().has_value()) return false;
  const HloInstruction& operand = *instruction.operand(0);
  return operand.opcode() == HloOpcode::kCustomCall &&
         operand.attrs().custom_call_target.value_or("") == "SPMDShardToFullShape";
}

// Named triggers a guard can ask for (`trigger:NAME`): properties of one instruction that an
// opcode list cannot say.
struct Trigger {
  absl::string_view name;
  bool (*holds)(const HloInstruction&);
};
constexpr Trigger kTriggers[] = {
    {"unsigned-slice-start-over-int32-max", &HasUnsignedStartOverInt32Max},
    {"sharded-no-op-after-shard-to-full", &IsShardedNoOpAfterShardToFull},
};

bool HoldsTrigger(const HloInstruction& instruction, absl::string_view name) {
  for (const Trigger& trigger : kTriggers) {
    if (trigger.name == name) return trigger.holds(instruction);
  }
  return false;
}

bool IsKnownTrigger(absl::string_view name) {
  return std::any_of(std::begin(kTriggers), std::end(kTriggers),
                     [&](const Trigger& trigger) { return trigger.name == name; });
}

// `KIND.*` matches every op of that kind; anything else only itself.
bool GuardedSignatureMatches(absl::string_view pattern, absl::string_view signature) {
  if (absl::EndsWith(pattern, ".*")) {
    return absl::StartsWith(signature, pattern.substr(0, pattern.size() - 1));
  }
  return pattern == signature;
}

// `module_has` guards: each entry an opcode name, `custom-call:TARGET` or `trigger:NAME`.
bool ModuleHolds(const HloModule& module, absl::string_view op) {
  if (absl::ConsumePrefix(&op, "trigger:")) {
    for (const auto& computation : module.computations()) {
      for (const auto& instruction : computation->instructions()) {
        if (HoldsTrigger(*instruction, op)) return true;
      }
    }
    return false;
  }
  const size_t colon = op.find(':');
  const absl::string_view opcode = op.substr(0, colon);
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (HloOpcodeString(instruction->opcode()) != opcode) continue;
      if (colon == absl::string_view::npos ||
          instruction->attrs().custom_call_target.value_or("") == op.substr(colon + 1)) {
        return true;
      }
    }
  }
  return false;
}

absl::StatusOr<std::vector<KnownFinding::GuardedSignature>> GuardedSignatures(
    const std::string& path, const std::string& name, const nlohmann::json& value) {
  std::vector<KnownFinding::GuardedSignature> out;
  if (value.is_null()) return out;
  for (const auto& entry : value) {
    if (!entry.is_object() || !entry.contains("signature") || !entry["signature"].is_string() ||
        !entry.contains("module_has") || !entry["module_has"].is_array() ||
        entry["module_has"].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": ", name,
          ": a guarded signature needs a \"signature\" and a non-empty \"module_has\" list"));
    }
    KnownFinding::GuardedSignature guarded{entry["signature"].get<std::string>(),
                                           Strings(entry["module_has"])};
    for (absl::string_view op : guarded.module_has) {
      if (absl::ConsumePrefix(&op, "trigger:") && !IsKnownTrigger(op)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": ", name, ": unknown trigger '", op, "'"));
      }
    }
    out.push_back(std::move(guarded));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<KnownFinding>> LoadKnownFindings(const std::string& path) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return base::WithContext(text.status(), "cannot read the known findings");
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object() || !json.contains("findings") ||
      !json["findings"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a known-findings file (an object with a \"findings\" list)"));
  }
  std::vector<KnownFinding> known;
  for (const auto& entry : json["findings"]) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": a finding without a name"));
    }
    KnownFinding k;
    k.name = entry["name"].get<std::string>();
    k.signatures = Strings(entry.value("signatures", nlohmann::json::array()));
    k.jax_versions = Strings(entry.value("jax_versions", nlohmann::json::array()));
    k.status = entry.value("status", "");
    k.upstream = entry.value("upstream", "");
    absl::StatusOr<std::vector<KnownFinding::GuardedSignature>> guarded =
        GuardedSignatures(path, k.name, entry.value("guarded_signatures", nlohmann::json()));
    if (!guarded.ok()) return guarded.status();
    k.guarded_signatures = *std::move(guarded);
    known.push_back(std::move(k));
  }
  return known;
}

bool KnownFinding::MatchesUnguarded(const std::string& signature) const {
  return std::find(signatures.begin(), signatures.end(), signature) != signatures.end();
}

bool KnownFinding::Matches(const std::string& signature, const HloModule* module) const {
  if (MatchesUnguarded(signature)) return true;
  if (module == nullptr) return false;
  return std::any_of(
      guarded_signatures.begin(), guarded_signatures.end(), [&](const GuardedSignature& g) {
        return GuardedSignatureMatches(g.signature, signature) &&
               std::all_of(g.module_has.begin(), g.module_has.end(),
                           [&](const std::string& op) { return ModuleHolds(*module, op); });
      });
}

const KnownFinding* FindKnown(const std::vector<KnownFinding>& known, const std::string& signature,
                              const HloModule* module) {
  // A plain signature first: a guarded one is the narrower claim.
  for (const KnownFinding& k : known) {
    if (k.MatchesUnguarded(signature)) return &k;
  }
  for (const KnownFinding& k : known) {
    if (k.Matches(signature, module)) return &k;
  }
  return nullptr;
}

nlohmann::json FindingRecord::ToJson() const {
  nlohmann::json versions_json = nlohmann::json::array();
  for (const VersionCheck& v : versions) {
    versions_json.push_back({{"venv", v.venv}, {"versions", v.versions}, {"verdict", v.verdict}});
  }
  return {{"signature", signature},
          {"partitioner", partitioner},
          {"partitioner_version", partitioner_version},
          {"bug_claim", claim},
          {"campaign", campaign},
          {"first_case", first_case},
          {"case_seed", case_seed},
          {"seconds_to_find", seconds_to_find},
          {"reproduce", reproduce},
          {"message", message},
          {"first_divergence", divergence},
          {"reduction", reduction},
          {"root_cause", root_cause},
          {"other_versions", versions_json},
          {"other_versions_note", versions_note},
          {"broken_by_pass", broken_by},
          {"repro_note", repro_note}};
}

absl::StatusOr<std::string> WriteFindingFolder(const std::string& dir, const FindingRecord& record,
                                               const FindingFiles& files) {
  const std::filesystem::path folder =
      std::filesystem::path(dir) / check::SanitizedName(record.signature);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", folder.string(), ": ", ec.message()));
  }
  std::ostringstream header;
  header << "// spmdcheck fuzz finding: " << record.signature
         << (record.claim ? "" : " (to investigate: not a bug claim)") << "\n"
         << "// partitioner: " << record.partitioner
         << (record.partitioner_version.empty() ? "" : " (" + record.partitioner_version + ")")
         << "\n"
         << "// found by: " << record.campaign << " (case " << record.first_case << ", case seed "
         << record.case_seed << ")\n"
         << "// reproduce: " << record.reproduce << "\n"
         << "// expected vs actual: " << OneLine(record.message) << "\n";
  if (!record.divergence.empty()) {
    header << "// first divergence: " << OneLine(record.divergence) << "\n";
  }
  if (!record.broken_by.empty()) header << "// broken by: " << OneLine(record.broken_by) << "\n";
  for (const VersionCheck& v : record.versions) {
    header << "// " << (v.versions.empty() ? v.venv : v.versions) << ": " << v.verdict << "\n";
  }
  if (!record.versions_note.empty()) {
    header << "// other versions: " << OneLine(record.versions_note) << "\n";
  }
  header << "// " << OneLine(record.reduction) << "\n";
  if (absl::Status s = base::WriteFile((folder / "module.hlo").string(),
                                       header.str() + PrintModule(*files.module));
      !s.ok()) {
    return s;
  }
  if (!files.jax_source.empty()) {
    if (absl::Status s = base::WriteFile((folder / "module.mlir").string(), files.jax_source);
        !s.ok())
      return s;
  }
  if (!files.partitioned_text.empty()) {
    if (absl::Status s =
            base::WriteFile((folder / "partitioned.hlo").string(), files.partitioned_text);
        !s.ok()) {
      return s;
    }
  }
  if (!files.inputs.empty()) {
    std::string inputs;
    for (size_t i = 0; i < files.inputs.size(); ++i) {
      absl::StrAppend(&inputs, "parameter ", i, ": ", files.inputs[i].ToString(), "\n");
    }
    if (absl::Status s = base::WriteFile((folder / "inputs.txt").string(), inputs); !s.ok())
      return s;
  }
  if (!files.repro_script.empty()) {
    if (absl::Status s = base::WriteFile((folder / "repro.py").string(), files.repro_script);
        !s.ok())
      return s;
  }
  nlohmann::json json = record.ToJson();
  json["files"] = {{"module", "module.hlo"},
                   {"jax_source", files.jax_source.empty() ? "" : "module.mlir"},
                   {"partitioned", files.partitioned_text.empty() ? "" : "partitioned.hlo"},
                   {"inputs", files.inputs.empty() ? "" : "inputs.txt"},
                   {"repro", files.repro_script.empty() ? "" : "repro.py"}};
  if (absl::Status s = base::WriteFile((folder / "finding.json").string(), json.dump(2) + "\n");
      !s.ok())
    return s;
  return folder.string();
}

}  // namespace spmdcheck::fuzz
