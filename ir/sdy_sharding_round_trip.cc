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
#include "ir/named_sharding.h"
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

// A name not yet used in `computation`: `base`, else `base.1`, `base.2`, ...
std::string FreshName(HloComputation* computation, const std::string& base) {
  std::string name = base;
  for (int i = 1; computation->FindInstruction(name) != nullptr; ++i) {
    name = absl::StrCat(base, ".", i);
  }
  return name;
}

// A custom-call `target` of `operand` with `sharding`, appended to `computation`.
HloInstruction* AddCustomCall(HloComputation* computation, const std::string& name,
                              const std::string& target, HloInstruction* operand,
                              const Shape& shape, HloSharding sharding) {
  auto instruction =
      std::make_unique<HloInstruction>(HloOpcode::kCustomCall, FreshName(computation, name), shape);
  instruction->AppendOperand(operand);
  instruction->mutable_attrs().custom_call_target = target;
  instruction->set_sharding(std::move(sharding));
  return computation->AddInstruction(std::move(instruction));
}

// Every use of `from` (the root included) becomes a use of `to`, except `to`'s own.
void ReplaceUses(HloComputation* computation, HloInstruction* from, HloInstruction* to) {
  for (const auto& user : computation->instructions()) {
    if (user.get() == to) continue;
    for (int64_t i = 0; i < user->operand_count(); ++i) {
      if (user->operand(i) == from) user->ReplaceOperand(i, to);
    }
  }
  if (computation->root() == from) computation->set_root(to);
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

// jaxlib 0.12's form: shardings are named-mesh (V3) HloShardings, so the meshes travel with
// them and there is no `xla.sdy.meshes`; a manual computation is
//   Sharding(global) -> xla.sdy.GlobalToLocalShape {..., manual={'x'}} -> call of the body
//   {..., manual={'x'}} -> xla.sdy.LocalToGlobalShape {global}
// with the body's shardings written over the whole mesh without the manual axes, and
// `xla.sdy.ShardingGroup` custom-calls (shape ()) tie values to one sharding (shard_alike).
class NamedLowering {
 public:
  explicit NamedLowering(HloModule& module) : module_(module) {}

  absl::StatusOr<int64_t> Run() {
    if (module_.entry() == nullptr) return Invalid("the module has no entry computation");
    if (absl::Status s = Visit(module_.entry(), {}); !s.ok()) return s;
    return rewrites_;
  }

 private:
  static bool IsTarget(const HloInstruction* i, absl::string_view target) {
    return i->opcode() == HloOpcode::kCustomCall && i->attrs().custom_call_target == target;
  }

  // `sharding` (each leaf with a named form) with `axes` added to its manual axes, for a value of
  // `shape`. Shardings without a named form are kept (nothing to add the axes to).
  static absl::StatusOr<HloSharding> AddManual(const HloSharding& sharding, const Shape& shape,
                                               absl::Span<const MeshAxisRef> axes) {
    if (axes.empty()) return sharding;
    if (sharding.IsTuple()) {
      std::vector<HloSharding> elements;
      for (size_t k = 0; k < sharding.tuple_elements().size(); ++k) {
        const Shape& leaf = shape.IsTuple() && static_cast<int64_t>(k) < shape.tuple_size()
                                ? shape.tuple_shapes()[k]
                                : shape;
        absl::StatusOr<HloSharding> e = AddManual(sharding.tuple_elements()[k], leaf, axes);
        if (!e.ok()) return e.status();
        elements.push_back(*std::move(e));
      }
      return HloSharding::Tuple(std::move(elements));
    }
    const NamedSharding* named = sharding.named();
    if (named == nullptr) return sharding;
    absl::StatusOr<NamedSharding> widened =
        named->WithManualAxes(axes, shape.IsArray() ? shape.rank() : 0);
    if (!widened.ok()) return widened.status();
    absl::StatusOr<HloSharding> out = HloSharding::FromNamed(*widened);
    if (!out.ok()) return out.status();
    out->set_metadata(sharding.metadata());
    return out;
  }

  // The manual axes a sharding names (its first named leaf's), without `outer`.
  static std::vector<MeshAxisRef> ManualAxes(const std::optional<HloSharding>& sharding,
                                             absl::Span<const MeshAxisRef> outer) {
    if (!sharding.has_value()) return {};
    const HloSharding* leaf = &*sharding;
    while (leaf->IsTuple() && !leaf->tuple_elements().empty()) leaf = &leaf->tuple_elements()[0];
    if (leaf->named() == nullptr) return {};
    std::vector<MeshAxisRef> axes;
    for (const MeshAxisRef& ref : leaf->named()->manual()) {
      if (std::find(outer.begin(), outer.end(), ref) == outer.end()) axes.push_back(ref);
    }
    return axes;
  }

  static std::vector<MeshAxisRef> Union(std::vector<MeshAxisRef> a,
                                        absl::Span<const MeshAxisRef> b) {
    for (const MeshAxisRef& ref : b) {
      if (std::find(a.begin(), a.end(), ref) == a.end()) a.push_back(ref);
    }
    return a;
  }

  // Replaces the results of `from` by `values` (one per result): its get-tuple-elements go,
  // any other use of a tuple-shaped `from` takes a tuple of the values.
  static void ReplaceResults(HloComputation* computation, HloInstruction* from,
                             const std::vector<HloInstruction*>& values,
                             std::set<const HloInstruction*>& dead) {
    if (!from->shape().IsTuple()) {
      ReplaceUses(computation, from, values[0]);
      return;
    }
    HloInstruction* tuple = nullptr;  // Made at the first use that needs it.
    auto tuple_of_values = [&]() {
      if (tuple == nullptr) {
        auto made = std::make_unique<HloInstruction>(
            HloOpcode::kTuple, absl::StrCat(from->name(), ".tuple"), from->shape());
        for (HloInstruction* v : values) made->AppendOperand(v);
        tuple = computation->AddInstruction(std::move(made));
      }
      return tuple;
    };
    for (const auto& user : computation->instructions()) {
      HloInstruction* u = user.get();
      if (dead.count(u) > 0) continue;
      for (int64_t k = 0; k < u->operand_count(); ++k) {
        if (u->operand(k) != from) continue;
        if (u->opcode() == HloOpcode::kGetTupleElement && u->attrs().tuple_index.has_value() &&
            *u->attrs().tuple_index < static_cast<int64_t>(values.size())) {
          ReplaceUses(computation, u, values[*u->attrs().tuple_index]);
          dead.insert(u);
          break;
        }
        u->ReplaceOperand(k, tuple_of_values());
      }
    }
    if (computation->root() == from) computation->set_root(tuple_of_values());
  }

  absl::Status Visit(HloComputation* computation, const std::vector<MeshAxisRef>& manual) {
    std::string key = computation->name();
    for (const MeshAxisRef& ref : manual) {
      absl::StrAppend(&key, "|", ref.axis, ":", ref.pre_size, ":", ref.size);
    }
    if (!visited_.insert(key).second) return absl::OkStatus();
    std::vector<HloInstruction*> instructions;
    for (const auto& i : computation->instructions()) instructions.push_back(i.get());
    std::set<const HloInstruction*> dead;
    for (HloInstruction* instruction : instructions) {
      auto fail = [&](const absl::Status& st) {
        return Invalid(absl::StrCat(instruction->name(), ": ", st.message()));
      };
      const std::string target = instruction->opcode() == HloOpcode::kCustomCall
                                     ? instruction->attrs().custom_call_target.value_or("")
                                     : "";
      // Called computations first: a manual body gains the call's manual axes.
      for (HloComputation* called : instruction->AllCalledComputations()) {
        if (called == nullptr) continue;
        std::vector<MeshAxisRef> axes = manual;
        if (instruction->opcode() == HloOpcode::kCall &&
            absl::StartsWith(called->name(), kBodyPrefix)) {
          axes = Union(manual, ManualAxes(instruction->sharding(), manual));
        }
        if (absl::Status st = Visit(called, axes); !st.ok()) return st;
      }
      if (target == "xla.sdy.ShardingGroup") {
        // shard_alike: a hint to propagation with no value (shape ()), nothing to evaluate.
        if (instruction->shape().IsTuple() && instruction->shape().tuple_size() == 0) {
          dead.insert(instruction);
          ++rewrites_;
          continue;
        }
        return fail(Invalid("xla.sdy.ShardingGroup with a result"));
      }
      if (target == "xla.sdy.GlobalToLocalShape" || target == "xla.sdy.LocalToGlobalShape") {
        // Per operand: GlobalToLocalShape -> SPMDFullToShardShape (its operand holds the global
        // sharding); LocalToGlobalShape -> Sharding(local, manual) + SPMDShardToFullShape.
        const bool to_local = target == "xla.sdy.GlobalToLocalShape";
        if (!instruction->sharding().has_value()) return fail(Invalid("has no sharding"));
        const int64_t count = instruction->operand_count();
        const bool tuple = instruction->shape().IsTuple();
        if (tuple ? instruction->shape().tuple_size() != count : count != 1) {
          return fail(Invalid("the results do not match the operands"));
        }
        const HloSharding& all = *instruction->sharding();
        std::vector<HloInstruction*> moved;
        for (int64_t i = 0; i < count; ++i) {
          const HloSharding& element =
              all.IsTuple() && i < static_cast<int64_t>(all.tuple_elements().size())
                  ? all.tuple_elements()[i]
                  : all;
          const Shape& result_shape =
              tuple ? instruction->shape().tuple_shapes()[i] : instruction->shape();
          HloInstruction* operand = instruction->operand(i);
          if (to_local) {
            if (!operand->sharding().has_value()) {
              return fail(Invalid("GlobalToLocalShape's operand has no sharding"));
            }
            absl::StatusOr<HloSharding> local = AddManual(element, result_shape, manual);
            if (!local.ok()) return fail(local.status());
            moved.push_back(
                AddCustomCall(computation, absl::StrCat(instruction->name(), ".to_shard"),
                              "SPMDFullToShardShape", operand, result_shape, *std::move(local)));
            continue;
          }
          // The local value's sharding is the one the body's result has (`{mesh, manual}` or
          // `{mesh, [...], manual={'x'}}`), from the call (or its tuple element).
          const HloInstruction* source = operand;
          int64_t element_index = -1;
          if (operand->opcode() == HloOpcode::kGetTupleElement) {
            source = operand->operand(0);
            element_index = operand->attrs().tuple_index.value_or(-1);
          }
          if (!source->sharding().has_value()) {
            return fail(Invalid("the value it takes has no sharding"));
          }
          HloSharding source_sharding = *source->sharding();
          if (source_sharding.IsTuple()) {
            if (element_index < 0 ||
                element_index >= static_cast<int64_t>(source_sharding.tuple_elements().size())) {
              return fail(Invalid("the value it takes has no sharding of its own"));
            }
            source_sharding = source_sharding.tuple_elements()[element_index];
          }
          if (ManualAxes(source_sharding, manual).empty() && !source_sharding.IsManual()) {
            return fail(Invalid("the value it takes is not manual"));
          }
          absl::StatusOr<HloSharding> global = AddManual(element, result_shape, manual);
          absl::StatusOr<HloSharding> local = AddManual(source_sharding, operand->shape(), manual);
          if (!global.ok()) return fail(global.status());
          if (!local.ok()) return fail(local.status());
          HloInstruction* annotated =
              AddCustomCall(computation, absl::StrCat(operand->name(), ".sharding"), "Sharding",
                            operand, operand->shape(), *std::move(local));
          moved.push_back(AddCustomCall(computation, absl::StrCat(instruction->name(), ".to_full"),
                                        "SPMDShardToFullShape", annotated, result_shape,
                                        *std::move(global)));
        }
        ReplaceResults(computation, instruction, moved, dead);
        dead.insert(instruction);
        ++rewrites_;
        continue;
      }
      if (!manual.empty() && instruction->sharding().has_value()) {
        absl::StatusOr<HloSharding> sharding =
            AddManual(*instruction->sharding(), instruction->shape(), manual);
        if (!sharding.ok()) return fail(sharding.status());
        instruction->set_sharding(*std::move(sharding));
        ++rewrites_;
      }
    }
    if (!dead.empty()) {
      computation->RemoveInstructionsIf([&](const HloInstruction* i) { return dead.count(i) > 0; });
    }
    return absl::OkStatus();
  }

  HloModule& module_;
  absl::flat_hash_set<std::string> visited_;
  int64_t rewrites_ = 0;
};

bool HasShardyCustomCalls(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kCustomCall &&
          absl::StartsWith(instruction->attrs().custom_call_target.value_or(""), "xla.sdy.")) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool HasShardyRoundTrip(const HloModule& module) {
  return FrontendValue(module.raw_header_attributes(), "xla.sdy.meshes").has_value() ||
         HasShardyCustomCalls(module);
}

absl::StatusOr<int64_t> LowerShardyRoundTrip(HloModule& module) {
  if (FrontendValue(module.raw_header_attributes(), "xla.sdy.meshes").has_value()) {
    return Lowering(module).Run();
  }
  return NamedLowering(module).Run();
}

}  // namespace spmdcheck
