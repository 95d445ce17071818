#include "ir/sdy_sharding_round_trip.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/sdy_sharding.h"

namespace spmdcheck {
namespace {

constexpr char kFrontend[] = "frontend_attributes";
constexpr char kBodyPrefix[] = "xla.sdy.manual_computation_body";

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

// `{key=value,key="quoted \"value\"",...}` -> (key, value) with quoted values unescaped; the
// raw text of each entry is kept for writing the survivors back.
struct Entry {
  std::string key;
  std::string value;
  std::string raw;
};

std::vector<Entry> SplitAttributes(absl::string_view text) {
  std::vector<Entry> out;
  if (text.size() < 2 || text.front() != '{' || text.back() != '}') return out;
  text = text.substr(1, text.size() - 2);
  size_t start = 0;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '{' || c == '[' || c == '(') ++depth;
    if (c == '}' || c == ']' || c == ')') --depth;
    if (c != ',' || depth != 0) continue;
    absl::string_view raw = text.substr(start, i - start);
    start = i + 1;
    const size_t eq = raw.find('=');
    if (eq == absl::string_view::npos) continue;
    Entry entry{std::string(raw.substr(0, eq)), std::string(raw.substr(eq + 1)), std::string(raw)};
    if (entry.value.size() >= 2 && entry.value.front() == '"' && entry.value.back() == '"') {
      std::string unescaped;
      for (size_t k = 1; k + 1 < entry.value.size(); ++k) {
        if (entry.value[k] == '\\' && k + 2 < entry.value.size()) ++k;
        unescaped += entry.value[k];
      }
      entry.value = std::move(unescaped);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::optional<std::string> FrontendValue(const std::vector<RawAttribute>& attributes,
                                         absl::string_view key) {
  for (const RawAttribute& a : attributes) {
    if (a.name != kFrontend) continue;
    for (const Entry& e : SplitAttributes(a.text)) {
      if (e.key == key) return e.value;
    }
  }
  return std::nullopt;
}

// Drops the xla.sdy.* entries (and the attribute when nothing is left).
void DropShardyAttributes(std::vector<RawAttribute>& attributes) {
  for (auto it = attributes.begin(); it != attributes.end();) {
    if (it->name != kFrontend) {
      ++it;
      continue;
    }
    std::vector<std::string> kept;
    for (const Entry& e : SplitAttributes(it->text)) {
      if (!absl::StartsWith(e.key, "xla.sdy.")) kept.push_back(e.raw);
    }
    if (kept.empty()) {
      it = attributes.erase(it);
    } else {
      it->text = absl::StrCat("{", absl::StrJoin(kept, ","), "}");
      ++it;
    }
  }
}

// `#sdy<manual_axes{"a", "b"}>` -> {"a", "b"}.
std::vector<std::string> ParseManualAxes(absl::string_view text) {
  std::vector<std::string> axes;
  size_t pos = 0;
  while ((pos = text.find('"', pos)) != absl::string_view::npos) {
    const size_t end = text.find('"', pos + 1);
    if (end == absl::string_view::npos) break;
    axes.push_back(std::string(text.substr(pos + 1, end - pos - 1)));
    pos = end + 1;
  }
  return axes;
}

class Lowering {
 public:
  explicit Lowering(HloModule& module) : module_(module) {}

  absl::StatusOr<int64_t> Run() {
    std::optional<std::string> meshes =
        FrontendValue(module_.raw_header_attributes(), "xla.sdy.meshes");
    if (!meshes.has_value()) return 0;
    absl::StatusOr<std::vector<std::pair<std::string, SdyMesh>>> parsed = ParseSdyMeshes(*meshes);
    if (!parsed.ok()) {
      return Invalid(absl::StrCat("xla.sdy.meshes: ", parsed.status().message()));
    }
    for (auto& [name, mesh] : *parsed) meshes_[name] = std::move(mesh);
    if (module_.entry() == nullptr) return Invalid("the module has no entry computation");
    if (absl::Status s = Visit(module_.entry(), {}); !s.ok()) return s;
    for (const auto& computation : module_.computations()) {
      for (const auto& instruction : computation->instructions()) {
        DropShardyAttributes(instruction->mutable_raw_attributes());
      }
    }
    DropShardyAttributes(module_.mutable_raw_header_attributes());
    return rewrites_;
  }

 private:
  absl::StatusOr<HloSharding> ToHlo(const SdySharding& sharding,
                                    const std::vector<std::string>& manual) {
    const SdyMesh* mesh = nullptr;
    SdyMesh none;
    if (sharding.inline_mesh.has_value()) {
      mesh = &none;
    } else {
      auto it = meshes_.find(sharding.mesh_name);
      if (it == meshes_.end()) {
        return Invalid(absl::StrCat("mesh @", sharding.mesh_name, " is not declared"));
      }
      mesh = &it->second;
    }
    return SdyToHloSharding(sharding, *mesh, manual);
  }

  // The HloSharding an `xla.sdy.sharding` value names (tuple for several results).
  absl::StatusOr<HloSharding> ValueSharding(const std::string& text,
                                            const std::vector<std::string>& manual) {
    std::vector<SdySharding> shardings;
    if (absl::StrContains(text, "sharding_per_value")) {
      absl::StatusOr<std::vector<SdySharding>> list = ParseSdyShardingPerValue(text);
      if (!list.ok()) return list.status();
      shardings = *std::move(list);
    } else {
      absl::StatusOr<SdySharding> one = ParseSdySharding(text);
      if (!one.ok()) return one.status();
      shardings.push_back(*std::move(one));
    }
    std::vector<HloSharding> hlo;
    for (const SdySharding& s : shardings) {
      absl::StatusOr<HloSharding> h = ToHlo(s, manual);
      if (!h.ok()) return h.status();
      hlo.push_back(*std::move(h));
    }
    if (hlo.size() == 1) return hlo[0];
    return HloSharding::Tuple(std::move(hlo));
  }

  std::string FreshName(HloComputation* computation, const std::string& base) {
    std::string name = base;
    for (int i = 1; computation->FindInstruction(name) != nullptr; ++i) {
      name = absl::StrCat(base, ".", i);
    }
    return name;
  }

  HloInstruction* AddCustomCall(HloComputation* computation, const std::string& name,
                                const std::string& target, HloInstruction* operand,
                                const Shape& shape, HloSharding sharding) {
    auto instruction = std::make_unique<HloInstruction>(HloOpcode::kCustomCall,
                                                        FreshName(computation, name), shape);
    instruction->AppendOperand(operand);
    instruction->mutable_attrs().custom_call_target = target;
    instruction->set_sharding(std::move(sharding));
    return computation->AddInstruction(std::move(instruction));
  }

  static void ReplaceUses(HloComputation* computation, HloInstruction* from, HloInstruction* to) {
    for (const auto& user : computation->instructions()) {
      for (int64_t i = 0; i < user->operand_count(); ++i) {
        if (user->operand(i) == from) user->ReplaceOperand(i, to);
      }
    }
    if (computation->root() == from) computation->set_root(to);
  }

  // Replaces result `index` of `call` (the call itself when it is not a tuple, else its
  // get-tuple-elements of that index) by `value`; the replaced instructions are collected.
  static void ReplaceResult(HloComputation* computation, HloInstruction* call, int64_t index,
                            HloInstruction* value, std::set<HloInstruction*>& dead) {
    if (!call->shape().IsTuple()) {
      ReplaceUses(computation, call, value);
      return;
    }
    for (const auto& user : computation->instructions()) {
      if (user->opcode() == HloOpcode::kGetTupleElement && user->operand_count() == 1 &&
          user->operand(0) == call && user->attrs().tuple_index == index) {
        ReplaceUses(computation, user.get(), value);
        dead.insert(user.get());
      }
    }
  }

  static std::vector<std::string> Union(const std::vector<std::string>& a,
                                        const std::vector<std::string>& b) {
    std::vector<std::string> out = a;
    for (const std::string& s : b) {
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
  }

  // The manual axes a manual computation's custom-call names.
  static std::vector<std::string> ManualAxesOf(const HloInstruction& instruction) {
    std::optional<std::string> text =
        FrontendValue(instruction.raw_attributes(), "xla.sdy.manual_axes");
    return text.has_value() ? ParseManualAxes(*text) : std::vector<std::string>{};
  }

  // The manual axes of the body `call` calls: from the GlobalToLocalShape feeding it, else the
  // LocalToGlobalShape it feeds.
  std::vector<std::string> BodyAxes(const HloComputation* computation, const HloInstruction& call) {
    auto is_target = [](const HloInstruction* i, absl::string_view target) {
      return i->opcode() == HloOpcode::kCustomCall && i->attrs().custom_call_target == target;
    };
    for (const HloInstruction* operand : call.operands()) {
      const HloInstruction* source =
          operand->opcode() == HloOpcode::kGetTupleElement ? operand->operand(0) : operand;
      if (is_target(source, "xla.sdy.GlobalToLocalShape")) return ManualAxesOf(*source);
    }
    for (const auto& user : computation->instructions()) {
      for (const HloInstruction* operand : user->operands()) {
        const HloInstruction* source =
            operand->opcode() == HloOpcode::kGetTupleElement ? operand->operand(0) : operand;
        if (source == &call && is_target(user.get(), "xla.sdy.LocalToGlobalShape")) {
          return ManualAxesOf(*user);
        }
      }
    }
    return {};
  }

  absl::Status Visit(HloComputation* computation, const std::vector<std::string>& manual) {
    const std::string key = absl::StrCat(computation->name(), "|", absl::StrJoin(manual, ","));
    if (!visited_.insert(key).second) return absl::OkStatus();
    // Snapshot: rewriting appends instructions.
    std::vector<HloInstruction*> instructions;
    for (const auto& i : computation->instructions()) instructions.push_back(i.get());
    std::set<HloInstruction*> dead;
    for (HloInstruction* instruction : instructions) {
      // Called computations first (manual bodies with their axes added).
      for (HloComputation* called : instruction->AllCalledComputations()) {
        if (called == nullptr) continue;
        std::vector<std::string> axes = manual;
        if (instruction->opcode() == HloOpcode::kCall &&
            absl::StartsWith(called->name(), kBodyPrefix)) {
          axes = Union(manual, BodyAxes(computation, *instruction));
        }
        if (absl::Status s = Visit(called, axes); !s.ok()) return s;
      }
      const std::string target = instruction->opcode() == HloOpcode::kCustomCall
                                     ? instruction->attrs().custom_call_target.value_or("")
                                     : "";
      auto fail = [&](const absl::Status& s) {
        return Invalid(absl::StrCat(instruction->name(), ": ", s.message()));
      };
      if (target == "xla.sdy.GlobalToLocalShape" || target == "xla.sdy.LocalToGlobalShape") {
        const bool to_local = target == "xla.sdy.GlobalToLocalShape";
        std::optional<std::string> list =
            FrontendValue(instruction->raw_attributes(),
                          to_local ? "xla.sdy.in_shardings" : "xla.sdy.out_shardings");
        if (!list.has_value()) return fail(Invalid("has no in/out shardings"));
        absl::StatusOr<std::vector<SdySharding>> shardings = ParseSdyShardingPerValue(*list);
        if (!shardings.ok()) return fail(shardings.status());
        if (static_cast<int64_t>(shardings->size()) != instruction->operand_count()) {
          return fail(Invalid("the number of shardings differs from the number of operands"));
        }
        const std::vector<std::string> inner = Union(manual, ManualAxesOf(*instruction));
        for (int64_t i = 0; i < instruction->operand_count(); ++i) {
          absl::StatusOr<HloSharding> outer_sharding = ToHlo((*shardings)[i], manual);
          absl::StatusOr<HloSharding> inner_sharding = ToHlo((*shardings)[i], inner);
          if (!outer_sharding.ok()) return fail(outer_sharding.status());
          if (!inner_sharding.ok()) return fail(inner_sharding.status());
          HloInstruction* operand = instruction->operand(i);
          const Shape& result_shape = instruction->shape().IsTuple()
                                          ? instruction->shape().tuple_shapes()[i]
                                          : instruction->shape();
          HloInstruction* annotated = AddCustomCall(
              computation, absl::StrCat(instruction->name(), ".sharding.", i), "Sharding", operand,
              operand->shape(), to_local ? *outer_sharding : *inner_sharding);
          HloInstruction* moved = AddCustomCall(
              computation,
              absl::StrCat(instruction->name(), ".", to_local ? "to_shard" : "to_full", ".", i),
              to_local ? "SPMDFullToShardShape" : "SPMDShardToFullShape", annotated, result_shape,
              to_local ? *inner_sharding : *outer_sharding);
          ReplaceResult(computation, instruction, i, moved, dead);
        }
        dead.insert(instruction);
        ++rewrites_;
        continue;
      }
      std::optional<std::string> value =
          FrontendValue(instruction->raw_attributes(), "xla.sdy.sharding");
      if (target == "xla.sdy.FuncResultSharding") {
        if (!value.has_value()) return fail(Invalid("has no xla.sdy.sharding"));
        absl::StatusOr<HloSharding> sharding = ValueSharding(*value, manual);
        if (!sharding.ok()) return fail(sharding.status());
        instruction->mutable_attrs().custom_call_target = "Sharding";
        instruction->set_sharding(*std::move(sharding));
        auto& raw = instruction->mutable_raw_attributes();
        raw.erase(std::remove_if(raw.begin(), raw.end(),
                                 [](const RawAttribute& a) {
                                   return a.name == "custom_call_has_side_effect";
                                 }),
                  raw.end());
        ++rewrites_;
        continue;
      }
      if (!manual.empty() && value.has_value()) {
        absl::StatusOr<HloSharding> sharding = ValueSharding(*value, manual);
        if (!sharding.ok()) return fail(sharding.status());
        instruction->set_sharding(*std::move(sharding));
        ++rewrites_;
      }
    }
    // get-tuple-elements of removed tuple-shaped custom-calls go too.
    if (!dead.empty()) {
      computation->RemoveInstructionsIf(
          [&](const HloInstruction* i) { return dead.count(const_cast<HloInstruction*>(i)) > 0; });
    }
    return absl::OkStatus();
  }

  HloModule& module_;
  std::map<std::string, SdyMesh> meshes_;
  absl::flat_hash_set<std::string> visited_;
  int64_t rewrites_ = 0;
};

}  // namespace

bool HasShardyRoundTrip(const HloModule& module) {
  return FrontendValue(module.raw_header_attributes(), "xla.sdy.meshes").has_value();
}

absl::StatusOr<int64_t> LowerShardyRoundTrip(HloModule& module) { return Lowering(module).Run(); }

}  // namespace spmdcheck
