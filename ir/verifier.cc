// Module verifier: structure (roots, parameter numbering, cycles, called computations), shapes
// (against InferShape and XLA's extra checks for ops whose shape must be written), shardings and
// collective groups, following xla/service/hlo_verifier.cc.
#include "ir/verifier.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/status.h"
#include "ir/collective_group_mode.h"
#include "ir/shape_inference.h"

namespace spmdcheck {
namespace {

std::string Str(const Shape& shape) { return shape.ToString(/*print_layout=*/false); }

using GroupMode = CollectiveGroupMode;

// Collectives whose replica_groups XLA's CheckReplicaGroups validates.
bool HasCheckedReplicaGroups(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kRaggedAllToAll:
      return true;
    default:
      return false;
  }
}

bool IsGatherOrScatterCollective(HloOpcode opcode) {
  return opcode == HloOpcode::kAllGather || opcode == HloOpcode::kAllGatherStart ||
         opcode == HloOpcode::kReduceScatter;
}

class ModuleVerifier {
 public:
  ModuleVerifier(const HloModule& module, const VerifierOptions& options)
      : module_(module), options_(options) {
    // The collective corpora record no counts: without either count in the header both are
    // unknown (0), which skips every participant-count check as XLA does for unset counts.
    const bool counts_known = module.has_num_partitions() || module.has_replica_count();
    num_partitions_ = counts_known ? module.num_partitions() : 0;
    replica_count_ = counts_known ? module.replica_count() : 0;
  }

  std::vector<VerifierDiagnostic> Run() {
    if (module_.entry() == nullptr && !module_.computations().empty()) {
      Report({}, absl::StrCat("module ", module_.name(), " has no entry computation"));
    }
    for (const auto& computation : module_.computations()) {
      if (computation == nullptr) continue;
      if (computation->is_opaque()) {
        if (computation.get() == module_.entry()) {
          Report(computation->location(),
                 absl::StrCat(computation->name(), ": the entry computation is opaque"));
        }
        continue;
      }
      VerifyComputation(*computation);
    }
    return std::move(diagnostics_);
  }

 private:
  void Report(SourceLocation location, std::string message) {
    diagnostics_.push_back({location, std::move(message)});
  }
  void Report(const HloInstruction& instr, absl::string_view message) {
    Report(instr.location(), absl::StrCat(instr.name(), ": ", message));
  }

  // An all-reduce inside a partially manual region (a sharding with a manual subgroup dim, as
  // shard_map over some mesh axes writes) may only combine devices of one manual subgroup: those
  // that differ only in their index along the manual dim. XLA's partitioner refuses the others
  // ("Manual all-reduce across devices that belong to different manual subgroups").
  void VerifyManualSubgroupAllReduce(const HloInstruction& instr, const ReplicaGroups& groups) {
    const std::optional<HloSharding>& sharding = instr.sharding();
    if (!sharding || !sharding->IsTiled() || !sharding->HasManualSubgroup()) return;
    const std::vector<SubgroupType>& types = sharding->subgroup_types();
    const int64_t manual_dim =
        sharding->TiledDataRank() +
        (std::find(types.begin(), types.end(), SubgroupType::kManual) - types.begin());
    if (manual_dim >= sharding->tile_assignment().num_dimensions()) return;
    const std::vector<std::vector<int64_t>> subgroups = sharding->GroupsAlongDims({manual_dim});
    absl::flat_hash_map<int64_t, int64_t> subgroup_of;
    for (size_t i = 0; i < subgroups.size(); ++i) {
      for (int64_t device : subgroups[i]) subgroup_of[device] = static_cast<int64_t>(i);
    }
    for (int64_t g = 0; g < groups.num_groups(); ++g) {
      const std::vector<int64_t> group = groups.group(g);
      std::optional<int64_t> first;
      for (int64_t device : group) {
        auto it = subgroup_of.find(device);
        if (it == subgroup_of.end()) continue;  // Out of the sharding's range: reported elsewhere.
        if (!first) first = it->second;
        if (it->second != *first) {
          Report(instr,
                 absl::StrCat("all-reduce in a manual subgroup region combines devices of "
                              "different manual subgroups: replica group {",
                              absl::StrJoin(group, ","), "} under ", sharding->ToString(false),
                              " (each group must lie within one of {",
                              absl::StrJoin(subgroups, "},{",
                                            [](std::string* out, const auto& sub) {
                                              absl::StrAppend(out, absl::StrJoin(sub, ","));
                                            }),
                              "})"));
          return;
        }
      }
    }
  }

  // ---- Computations --------------------------------------------------------------------------

  void VerifyComputation(const HloComputation& computation) {
    const std::string& name = computation.name();
    if (computation.root() == nullptr) {
      Report(computation.location(), absl::StrCat(name, ": computation has no root instruction"));
    } else if (computation.root()->parent() != &computation) {
      Report(computation.location(),
             absl::StrCat(name, ": root instruction ", computation.root()->name(),
                          " is not in this computation"));
    }
    VerifyParameterNumbers(computation);
    // PostOrder() follows operands, so it only runs on a graph without missing ones (those are
    // reported per instruction).
    bool operands_present = true;
    for (const auto& instruction : computation.instructions()) {
      if (instruction == nullptr) continue;
      for (const HloInstruction* operand : instruction->operands()) {
        if (operand == nullptr) operands_present = false;
      }
    }
    if (operands_present && computation.instruction_count() > 0 &&
        computation.PostOrder().empty()) {
      Report(computation.location(),
             absl::StrCat(name,
                          ": the instructions contain a cycle (an instruction depends on "
                          "itself through its operands)"));
    }
    for (const auto& instruction : computation.instructions()) {
      if (instruction != nullptr) VerifyInstruction(computation, *instruction);
    }
  }

  void VerifyParameterNumbers(const HloComputation& computation) {
    absl::flat_hash_map<int64_t, const HloInstruction*> by_number;
    int64_t count = 0;
    for (const auto& instruction : computation.instructions()) {
      if (instruction == nullptr || instruction->opcode() != HloOpcode::kParameter) continue;
      ++count;
      const int64_t number = instruction->parameter_number();
      if (number < 0) {
        Report(*instruction, absl::StrCat("parameter number ", number, " is negative"));
        continue;
      }
      auto [it, inserted] = by_number.emplace(number, instruction.get());
      if (!inserted) {
        Report(*instruction, absl::StrCat("parameter number ", number, " is already used by ",
                                          it->second->name()));
      }
    }
    // Numbers must be exactly 0..n-1 for the n distinct parameters.
    const int64_t distinct = static_cast<int64_t>(by_number.size());
    std::vector<std::pair<int64_t, const HloInstruction*>> sorted(by_number.begin(),
                                                                  by_number.end());
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [number, instruction] : sorted) {
      if (number >= distinct) {
        std::vector<int64_t> missing;
        for (int64_t i = 0; i < distinct && missing.size() < 8; ++i) {
          if (!by_number.contains(i)) missing.push_back(i);
        }
        Report(*instruction,
               absl::StrCat("parameter number ", number, " leaves a gap: the computation has ",
                            count, " parameters and parameter(",
                            absl::StrJoin(missing, "), parameter("), ") is missing"));
      }
    }
  }

  // ---- Instructions --------------------------------------------------------------------------

  void VerifyInstruction(const HloComputation& computation, const HloInstruction& instr) {
    bool operands_ok = true;
    if (instr.parent() != &computation) {
      Report(instr, "the instruction's parent is not the computation that holds it");
    }
    for (int64_t i = 0; i < instr.operand_count(); ++i) {
      const HloInstruction* operand = instr.operand(i);
      if (operand == nullptr) {
        Report(instr, absl::StrCat("operand ", i, " is missing"));
        operands_ok = false;
      } else if (operand->parent() != &computation) {
        Report(instr, absl::StrCat("operand ", i, " (", operand->name(),
                                   ") is in a different computation (",
                                   operand->parent() ? operand->parent()->name() : "none", ")"));
      }
    }
    VerifyCalledComputations(instr);
    if (!instr.shape().IsValid()) {
      Report(instr, "the instruction has no shape");
    } else {
      VerifyShapeSize(instr, instr.shape(),
                      options_.check_array_size_limit || instr.opcode() == HloOpcode::kConstant);
    }
    if (operands_ok) VerifyShape(instr);
    VerifySharding(instr);
    if (operands_ok) VerifyCollective(instr);
    if (operands_ok) VerifyFullToShard(instr);
    if (operands_ok) VerifyShardToFull(instr);
  }

  // Each device's shard of `shape` under `sharding` (the whole value when replicated or on one
  // device), or nullopt when the sharding does not give one plainly (subgroups, a bad fit).
  static std::optional<Shape> ShardShape(const Shape& shape, const HloSharding& sharding) {
    if (sharding.IsReplicated() || sharding.IsMaximal()) return shape;
    if (sharding.IsTiled() && sharding.subgroup_types().empty() &&
        sharding.Validate(shape, 0).ok()) {
      return sharding.TileShape(shape);
    }
    return std::nullopt;
  }

  // SPMDShardToFullShape ends a manual region: its operand is each device's shard, so it must be
  // manual (`sharding={manual}`, or manual in a subgroup), and a fully manual one is the tile of
  // the result under the result's sharding (an unannotated result is replicated: the whole
  // value). XLA's partitioner refuses anything else (RET_CHECKs), so a reduction that drops an
  // annotation makes no XLA bug.
  void VerifyShardToFull(const HloInstruction& instr) {
    if (instr.opcode() != HloOpcode::kCustomCall || instr.operand_count() != 1 ||
        instr.attrs().custom_call_target.value_or("") != "SPMDShardToFullShape") {
      return;
    }
    const HloInstruction& operand = *instr.operand(0);
    const std::optional<HloSharding>& from = operand.sharding();
    const bool manual = from.has_value() && (from->IsManual() || from->HasManualSubgroup());
    if (!manual) {
      Report(instr,
             absl::StrCat("SPMDShardToFullShape of ", operand.name(), ", which is not manual (",
                          from.has_value() ? from->ToString(false) : "no sharding",
                          "): its operand must be each device's shard"));
      return;
    }
    if (!from->IsManual() || !operand.shape().IsArray() || !instr.shape().IsArray()) return;
    const HloSharding to = instr.sharding().value_or(HloSharding::Replicate());
    const std::optional<Shape> shard = ShardShape(instr.shape(), to);
    if (shard && !shard->Compatible(operand.shape())) {
      Report(instr,
             absl::StrCat("SPMDShardToFullShape to ", instr.shape().ToString(false), " under ",
                          to.ToString(false), " takes shards of ", shard->ToString(false), ", not ",
                          operand.shape().ToString(false)));
    }
  }

  // SPMDFullToShardShape turns its operand, under the operand's sharding, into each device's
  // shard: with a fully manual result, the result shape is the operand's tile (the whole operand
  // when that is replicated). Another shape has no meaning (XLA's partitioner aborts on it).
  void VerifyFullToShard(const HloInstruction& instr) {
    if (instr.opcode() != HloOpcode::kCustomCall || instr.operand_count() != 1 ||
        instr.attrs().custom_call_target.value_or("") != "SPMDFullToShardShape") {
      return;
    }
    const HloInstruction& operand = *instr.operand(0);
    const std::optional<HloSharding>& from = operand.sharding();
    const std::optional<HloSharding>& to = instr.sharding();
    if (!from || !to || !to->IsManual() || !operand.shape().IsArray() || !instr.shape().IsArray()) {
      return;
    }
    const std::optional<Shape> shard = ShardShape(operand.shape(), *from);
    if (shard && !shard->Compatible(instr.shape())) {
      Report(instr, absl::StrCat("SPMDFullToShardShape of ", operand.shape().ToString(false),
                                 " under ", from->ToString(false), " gives shards of ",
                                 shard->ToString(false), ", not ", instr.shape().ToString(false)));
    }
  }

  void VerifyCalledComputations(const HloInstruction& instr) {
    for (const CalledComputations& called : instr.called()) {
      for (size_t i = 0; i < called.computations.size(); ++i) {
        const HloComputation* callee = called.computations[i];
        if (callee == nullptr) {
          Report(instr, absl::StrCat(called.role, " refers to a missing computation"));
        } else if (module_.FindComputation(callee->name()) != callee) {
          Report(instr, absl::StrCat(called.role, " refers to computation ", callee->name(),
                                     " which is not in the module"));
        } else if (callee == instr.parent()) {
          Report(instr, absl::StrCat(called.role, " refers to the computation ", callee->name(),
                                     " that contains the instruction"));
        }
      }
    }
    const HloOpcode opcode = instr.opcode();
    if ((opcode == HloOpcode::kAllReduce || opcode == HloOpcode::kAllReduceStart) &&
        instr.called_computation("to_apply") == nullptr) {
      Report(instr, "missing attribute to_apply");
    }
  }

  // Dims must be non-negative and the element count must fit int64 (and kMaxArrayElements when
  // `limit_elements`).
  void VerifyShapeSize(const HloInstruction& instr, const Shape& shape, bool limit_elements) {
    if (shape.IsTuple()) {
      for (const Shape& element : shape.tuple_shapes()) {
        VerifyShapeSize(instr, element, limit_elements);
      }
      return;
    }
    if (!shape.IsArray()) return;
    for (int64_t size : shape.dimensions()) {
      if (size < 0) {
        Report(instr, absl::StrCat("shape ", Str(shape), " has a negative dimension"));
        return;
      }
    }
    const std::optional<int64_t> elements = CheckedProduct(shape.dimensions());
    if (!elements || (limit_elements && *elements > kMaxArrayElements)) {
      Report(instr, absl::StrCat("shape ", Str(shape), " has ",
                                 elements ? absl::StrCat(*elements) : std::string("too many"),
                                 " elements, more than the limit of ", kMaxArrayElements));
    }
  }

  // Message of an InferShape error without its leading "opcode: " when the instruction's name
  // already starts with the opcode.
  static std::string InferenceMessage(const HloInstruction& instr, absl::string_view message) {
    const std::string prefix = absl::StrCat(HloOpcodeString(instr.opcode()), ": ");
    if (absl::StartsWith(message, prefix) &&
        absl::StartsWith(instr.name(), HloOpcodeString(instr.opcode()))) {
      message.remove_prefix(prefix.size());
    }
    return std::string(message);
  }

  void ReportMismatch(const HloInstruction& instr, const Shape& inferred,
                      absl::string_view note = "") {
    const Shape& written = instr.shape();
    std::string message;
    if (written.IsTuple() != inferred.IsTuple()) {
      message =
          absl::StrCat("shape ", Str(written), " is ",
                       written.IsTuple() ? "a tuple" : "not a tuple", " but the inferred shape ",
                       Str(inferred), " is ", inferred.IsTuple() ? "a tuple" : "not a tuple");
    } else {
      message = absl::StrCat("shape ", Str(written), " does not match the inferred shape ",
                             Str(inferred));
    }
    if (!note.empty()) absl::StrAppend(&message, " (", note, ")");
    if (instr.opcode() == HloOpcode::kReplicaId || instr.opcode() == HloOpcode::kPartitionId) {
      // XLA's verifier requires u32[], yet XLA's own test modules write s32[] partition-id() and
      // even tuple-shaped replica-id(); keep them readable and say so.
      absl::StrAppend(&message, "; XLA's verifier rejects this, running it is unsupported");
      diagnostics_.push_back({instr.location(), absl::StrCat(instr.name(), ": ", message), true});
      return;
    }
    Report(instr, message);
  }

  void VerifyShape(const HloInstruction& instr) {
    absl::StatusOr<Shape> inferred = InferShape(instr, num_partitions_, replica_count_);
    if (!inferred.ok()) {
      if (absl::IsUnimplemented(inferred.status())) {
        if (IsGatherOrScatterCollective(instr.opcode()) && instr.shape().IsValid()) {
          VerifyCollectiveRatio(instr);
        } else {
          VerifyWrittenShape(instr);
        }
      } else {
        Report(instr, InferenceMessage(instr, inferred.status().message()));
      }
      return;
    }
    if (!instr.shape().IsValid()) return;
    if (IsGatherOrScatterCollective(instr.opcode())) {
      std::optional<int64_t> count = ParticipantCount(instr);
      if (!count || *count <= 1) {
        // XLA skips the count check when the count is 1 (counts unset) and re-infers the shape
        // from the written ratio.
        VerifyCollectiveRatio(instr);
        return;
      }
    }
    if (!instr.shape().Compatible(*inferred)) ReportMismatch(instr, *inferred);
  }

  // ---- Ops whose shape must be written: XLA's remaining checks -------------------------------

  void VerifyWrittenShape(const HloInstruction& instr) {
    const Shape& shape = instr.shape();
    if (!shape.IsValid()) return;
    auto operand = [&](int64_t i) -> const Shape& { return instr.operand(i)->shape(); };
    switch (instr.opcode()) {
      case HloOpcode::kConvert:
      case HloOpcode::kStochasticConvert:
        if (!shape.IsArray() || !operand(0).IsArray() ||
            shape.dimensions() != operand(0).dimensions()) {
          Report(instr, absl::StrCat("shape ", Str(shape),
                                     " must be an array with the dims of "
                                     "the operand ",
                                     Str(operand(0))));
        }
        return;
      case HloOpcode::kBitcastConvert:
        VerifyBitcastConvert(instr);
        return;
      case HloOpcode::kReshape:
      case HloOpcode::kDynamicReshape:
        if (!shape.IsArray() || !operand(0).IsArray() ||
            shape.element_type() != operand(0).element_type()) {
          Report(instr, absl::StrCat("shape ", Str(shape),
                                     " must be an array of the operand's "
                                     "element type (operand ",
                                     Str(operand(0)), ")"));
        } else if (instr.opcode() == HloOpcode::kReshape && shape.is_static() &&
                   operand(0).is_static() && shape.ElementCount() != operand(0).ElementCount()) {
          Report(instr, absl::StrCat("shape ", Str(shape), " has ", shape.ElementCount(),
                                     " elements but the operand ", Str(operand(0)), " has ",
                                     operand(0).ElementCount()));
        } else if (instr.opcode() == HloOpcode::kDynamicReshape &&
                   instr.operand_count() != shape.rank() + 1) {
          Report(instr, absl::StrCat("expects ", shape.rank() + 1, " operands for a rank-",
                                     shape.rank(), " result but has ", instr.operand_count()));
        }
        return;
      case HloOpcode::kIota: {
        if (!shape.IsArray() || shape.rank() == 0) {
          Report(instr, absl::StrCat("shape ", Str(shape), " must be an array of rank >= 1"));
          return;
        }
        const PrimitiveType type = shape.element_type();
        if (!IsIntegralType(type) && !IsFloatingType(type) && !IsComplexType(type)) {
          Report(instr, absl::StrCat("element type ", PrimitiveTypeName(type),
                                     " is not integral, floating-point or complex"));
        }
        const std::optional<int64_t>& dim = instr.attrs().iota_dimension;
        if (!dim) {
          Report(instr, "missing attribute iota_dimension");
        } else if (*dim < 0 || *dim >= shape.rank()) {
          Report(instr, absl::StrCat("iota_dimension ", *dim, " is out of range for ", Str(shape)));
        }
        return;
      }
      case HloOpcode::kConstant:
        if (!instr.literal()) {
          Report(instr, "constant has no literal");
        } else if (!instr.literal()->shape().Compatible(shape)) {
          Report(instr, absl::StrCat("shape ", Str(shape), " does not match its literal's shape ",
                                     Str(instr.literal()->shape())));
        }
        return;
      case HloOpcode::kRng: {
        const Shape& low = operand(0);
        const Shape& high = operand(1);
        if (!low.IsScalar() || !high.IsScalar() || low.element_type() != high.element_type() ||
            !shape.IsArray() || shape.element_type() != low.element_type()) {
          Report(instr, absl::StrCat("expects two scalar operands of the result's element type, "
                                     "got ",
                                     Str(low), " and ", Str(high), " for ", Str(shape)));
        }
        return;
      }
      case HloOpcode::kInfeed:
        if (!operand(0).IsToken()) {
          Report(instr, absl::StrCat("operand 0 must be a token, got ", Str(operand(0))));
        }
        if (!shape.IsTuple() || shape.tuple_size() != 2 || !shape.tuple_shapes()[1].IsToken()) {
          Report(instr, absl::StrCat("shape ", Str(shape), " must be a tuple (data, token[])"));
        }
        return;
      case HloOpcode::kRecv:
        if (!operand(0).IsToken()) {
          Report(instr, absl::StrCat("operand 0 must be a token, got ", Str(operand(0))));
        }
        if (!shape.IsTuple() || shape.tuple_size() != 3 ||
            !shape.tuple_shapes()[1].Compatible(Shape::Scalar(PrimitiveType::kU32)) ||
            !shape.tuple_shapes()[2].IsToken()) {
          Report(instr,
                 absl::StrCat("shape ", Str(shape), " must be a tuple (data, u32[], token[])"));
        }
        return;
      case HloOpcode::kRngBitGenerator:
        if (shape.IsTuple() &&
            (shape.tuple_size() != 2 || !shape.tuple_shapes()[0].Compatible(operand(0)))) {
          Report(instr, absl::StrCat("shape ", Str(shape), " must be a tuple (state ",
                                     Str(operand(0)), ", data)"));
        }
        return;
      case HloOpcode::kBroadcast:
        if (!shape.IsArray()) {
          Report(instr, absl::StrCat("shape ", Str(shape), " must be an array"));
        }
        return;
      default:
        return;
    }
  }

  void VerifyBitcastConvert(const HloInstruction& instr) {
    const Shape& shape = instr.shape();
    const Shape& operand = instr.operand(0)->shape();
    if (!shape.IsArray() || !operand.IsArray()) {
      Report(instr,
             absl::StrCat("operand ", Str(operand), " and shape ", Str(shape), " must be arrays"));
      return;
    }
    const int in_bits = BitWidth(operand.element_type());
    const int out_bits = BitWidth(shape.element_type());
    std::vector<int64_t> expected = operand.dimensions();
    if (in_bits > out_bits && out_bits > 0) {
      expected.push_back(in_bits / out_bits);
    } else if (in_bits < out_bits && in_bits > 0) {
      if (expected.empty() || expected.back() != out_bits / in_bits) {
        Report(instr, absl::StrCat("operand ", Str(operand), " must have a minor dim of ",
                                   out_bits / in_bits, " to bitcast-convert to ",
                                   PrimitiveTypeName(shape.element_type())));
        return;
      }
      expected.pop_back();
    }
    if (shape.dimensions() != expected) {
      Report(instr,
             absl::StrCat("shape ", Str(shape), " must have dims {", absl::StrJoin(expected, ","),
                          "} to bitcast-convert ", Str(operand)));
    }
  }

  // ---- Collectives ---------------------------------------------------------------------------

  std::optional<GroupMode> GroupModeOf(const HloInstruction& instr) const {
    return CollectiveGroupModeOf(instr);
  }

  // XLA's GetSubgroupSize; nullopt when unknown.
  std::optional<int64_t> ParticipantCount(const HloInstruction& instr) const {
    std::optional<GroupMode> mode = GroupModeOf(instr);
    if (!mode) return std::nullopt;
    const ReplicaGroups groups = instr.attrs().replica_groups.value_or(ReplicaGroups());
    std::optional<int64_t> first =
        groups.empty() ? std::nullopt : std::optional<int64_t>(groups.first_group_size());
    auto known = [](int64_t n) { return n > 0 ? std::optional<int64_t>(n) : std::nullopt; };
    switch (*mode) {
      case GroupMode::kCrossReplica:
        return first ? first : known(replica_count_);
      case GroupMode::kCrossReplicaAndPartition: {
        std::optional<int64_t> base = first ? first : known(replica_count_);
        int64_t product;
        if (!base || num_partitions_ <= 0 ||
            __builtin_mul_overflow(*base, num_partitions_, &product)) {
          return std::nullopt;
        }
        return product;
      }
      case GroupMode::kFlattenedId:
        return first;
      case GroupMode::kCrossPartition:
        return first ? first : known(num_partitions_);
    }
    return std::nullopt;
  }

  // Ids each group mode draws from (0 when unknown).
  int64_t ExpectedParticipants(GroupMode mode) const {
    switch (mode) {
      case GroupMode::kCrossReplica:
      case GroupMode::kCrossReplicaAndPartition:
        return replica_count_;
      case GroupMode::kCrossPartition:
        return num_partitions_;
      case GroupMode::kFlattenedId: {
        int64_t product;
        if (replica_count_ <= 0 || num_partitions_ <= 0 ||
            __builtin_mul_overflow(replica_count_, num_partitions_, &product)) {
          return 0;
        }
        return product;
      }
    }
    return 0;
  }

  void VerifyCollective(const HloInstruction& instr) {
    const HloOpcode opcode = instr.opcode();
    const HloAttributes& attrs = instr.attrs();
    if (opcode == HloOpcode::kReplicaId || opcode == HloOpcode::kPartitionId) {
      // The shape itself is compared with u32[] by VerifyShape.
      return;
    }
    if ((opcode == HloOpcode::kAllReduce || opcode == HloOpcode::kAllReduceStart) &&
        attrs.channel_id && *attrs.channel_id <= 0) {
      Report(instr, absl::StrCat("channel_id ", *attrs.channel_id, " must be positive"));
    }
    if (HasCheckedReplicaGroups(opcode)) {
      std::optional<GroupMode> mode = GroupModeOf(instr);
      if (!mode) {
        Report(instr, "use_global_device_ids=true requires a channel_id");
        return;
      }
      const ReplicaGroups groups = attrs.replica_groups.value_or(ReplicaGroups());
      if (groups.empty()) {
        if (*mode == GroupMode::kFlattenedId) {
          Report(instr,
                 "replica_groups must be given in flattened-id mode "
                 "(channel_id with use_global_device_ids=true)");
        }
        return;
      }
      const bool uniform = opcode != HloOpcode::kAllReduce && opcode != HloOpcode::kAllReduceStart;
      absl::Status status = ValidateReplicaGroups(groups, ExpectedParticipants(*mode), uniform);
      if (!status.ok()) {
        Report(instr, absl::StrCat("invalid replica_groups ", groups.ToString(), " in ",
                                   CollectiveGroupModeName(*mode), " mode: ", status.message()));
        return;
      }
      if (!uniform && *mode == GroupMode::kFlattenedId)
        VerifyManualSubgroupAllReduce(instr, groups);
      return;
    }
    if (opcode == HloOpcode::kCollectivePermute || opcode == HloOpcode::kCollectivePermuteStart) {
      if (!attrs.source_target_pairs) {
        Report(instr, "missing attribute source_target_pairs");
        return;
      }
      const int64_t limit = attrs.channel_id ? num_partitions_ : replica_count_;
      SourceTargetPairs pairs = *attrs.source_target_pairs;
      if (instr.operand_count() == 4) {
        // The in-place form may name a source or target once per offset tuple: check ranges only.
        for (const auto& [source, target] : pairs) {
          for (int64_t id : {source, target}) {
            if (id < 0 || (limit > 1 && id >= limit)) {
              Report(instr, absl::StrCat("id ", id, " in source_target_pairs is out of range [0, ",
                                         limit, ")"));
              return;
            }
          }
        }
        return;
      }
      absl::Status status = ValidateSourceTargetPairs(pairs, limit);
      if (!status.ok()) {
        Report(instr, absl::StrCat("invalid source_target_pairs ", SourceTargetPairsToString(pairs),
                                   ": ", status.message()));
      }
    }
  }

  // all-gather / reduce-scatter with an unknown (or unit) participant count: XLA takes the
  // count from the written shape (ceil of the size ratio along the dimension) and re-infers the
  // shape with it, so the gathered dim must be a whole multiple of the operand's.
  void VerifyCollectiveRatio(const HloInstruction& instr) {
    const HloOpcode opcode = instr.opcode();
    const Shape& written = instr.shape();
    const int64_t n = instr.operand_count();
    if (n == 0 || !instr.attrs().dimensions || instr.attrs().dimensions->size() != 1) return;
    const int64_t dim = (*instr.attrs().dimensions)[0];
    // The written results, one per operand.
    const Shape* results_holder = &written;
    if (opcode == HloOpcode::kAllGatherStart) {
      if (!written.IsTuple() || written.tuple_size() != 2) {
        Report(instr, absl::StrCat("shape ", Str(written),
                                   " must be a tuple (operands, gathered results)"));
        return;
      }
      results_holder = &written.tuple_shapes()[1];
    }
    std::vector<const Shape*> results;
    if (n == 1) {
      results.push_back(results_holder);
    } else {
      if (!results_holder->IsTuple() || results_holder->tuple_size() != n) {
        Report(instr, absl::StrCat("shape ", Str(*results_holder), " must be a tuple of ", n,
                                   " results, one per operand"));
        return;
      }
      for (const Shape& element : results_holder->tuple_shapes()) results.push_back(&element);
    }
    for (int64_t i = 0; i < n; ++i) {
      const Shape& operand = instr.operand(i)->shape();
      if (!operand.IsArray() || dim < 0 || dim >= operand.rank()) return;  // Reported already.
      if (!results[i]->IsArray() || results[i]->rank() != operand.rank()) {
        Report(instr, absl::StrCat("result ", Str(*results[i]), " must be an array of rank ",
                                   operand.rank(), " like operand ", i, " ", Str(operand)));
        return;
      }
    }
    const bool gather = opcode != HloOpcode::kReduceScatter;
    const int64_t in0 = instr.operand(0)->shape().dimensions(dim);
    const int64_t out0 = results[0]->dimensions(dim);
    const int64_t numerator = gather ? out0 : in0;
    const int64_t denominator = gather ? in0 : out0;
    const int64_t shard_count =
        denominator <= 0 ? 1 : numerator / denominator + (numerator % denominator != 0 ? 1 : 0);
    std::vector<Shape> expected_results;
    for (int64_t i = 0; i < n; ++i) {
      Shape expected = instr.operand(i)->shape();
      expected.clear_layout();
      const int64_t size = expected.dimensions(dim);
      if (gather) {
        int64_t gathered;
        if (__builtin_mul_overflow(size, shard_count, &gathered)) {
          Report(instr, absl::StrCat("operand ", i, " dim ", dim, " of size ", size,
                                     " overflows when gathered ", shard_count, " times"));
          return;
        }
        expected.set_dimensions(dim, gathered);
      } else {
        if (shard_count <= 0 || size % shard_count != 0) {
          Report(instr, absl::StrCat("operand ", i, " dim ", dim, " of size ", size,
                                     " is not divisible by the shard count ", shard_count,
                                     " implied by the result"));
          return;
        }
        expected.set_dimensions(dim, size / shard_count);
      }
      expected_results.push_back(std::move(expected));
    }
    Shape expected = n == 1 ? expected_results[0] : Shape::Tuple(expected_results);
    if (opcode == HloOpcode::kAllGatherStart) {
      std::vector<Shape> inputs;
      for (int64_t i = 0; i < n; ++i) inputs.push_back(instr.operand(i)->shape());
      Shape input = n == 1 ? inputs[0] : Shape::Tuple(std::move(inputs));
      expected = Shape::Tuple({std::move(input), std::move(expected)});
    }
    if (!written.Compatible(expected)) {
      ReportMismatch(instr, expected,
                     absl::StrCat("participant count unknown; shard count ", shard_count,
                                  " taken from the result"));
    }
  }

  // ---- Shardings -----------------------------------------------------------------------------

  void VerifySharding(const HloInstruction& instr) {
    if (!instr.sharding() || !instr.shape().IsValid() || instr.shape().IsToken()) return;
    // XLA validates against num_partitions only for SPMD modules with more than one partition.
    const int64_t num_devices = options_.check_sharding_device_count &&
                                        module_.has_num_partitions() && module_.num_partitions() > 1
                                    ? module_.num_partitions()
                                    : 0;
    absl::Status status = instr.sharding()->Validate(instr.shape(), num_devices);
    if (!status.ok()) {
      Report(instr, absl::StrCat("invalid sharding ", instr.sharding()->ToString(false), ": ",
                                 status.message()));
    }
  }

  const HloModule& module_;
  const VerifierOptions& options_;
  int64_t num_partitions_ = 0;
  int64_t replica_count_ = 0;
  std::vector<VerifierDiagnostic> diagnostics_;
};

}  // namespace

std::vector<VerifierDiagnostic> VerifyModuleDiagnostics(const HloModule& module,
                                                        const VerifierOptions& options) {
  return ModuleVerifier(module, options).Run();
}

std::string FormatDiagnostic(const HloModule& module, const VerifierDiagnostic& diagnostic) {
  const std::string path = module.source_path().empty() ? "<input>" : module.source_path();
  return absl::StrCat(
      base::SourceLocation(path, diagnostic.location.line, diagnostic.location.column),
      diagnostic.is_warning ? ": warning: " : ": error: ", diagnostic.message);
}

absl::Status VerifyModule(const HloModule& module, const VerifierOptions& options) {
  std::vector<std::string> lines;
  for (const VerifierDiagnostic& diagnostic : VerifyModuleDiagnostics(module, options)) {
    if (!diagnostic.is_warning) lines.push_back(FormatDiagnostic(module, diagnostic));
  }
  if (lines.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

}  // namespace spmdcheck
