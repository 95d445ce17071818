#include "oracle/equivalence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/hlo_parser.h"
#include "ir/holds_comment.h"
#include "ir/tile_assignment.h"
#include "oracle/element_type_dispatch.h"
#include "oracle/engine.h"
#include "oracle/float_widening.h"
#include "oracle/global_run.h"
#include "oracle/inputs.h"
#include "oracle/kernel_util.h"

namespace spmdcheck::oracle {
namespace {

const HloSharding kReplicated = HloSharding::Replicate();

const HloSharding& ShardingOr(const HloInstruction* a, const HloInstruction* b) {
  if (a != nullptr && a->sharding().has_value()) return *a->sharding();
  if (b != nullptr && b->sharding().has_value()) return *b->sharding();
  return kReplicated;
}

bool HasDeviceDependentOps(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      // A sharding annotation (`Sharding`, Shardy's `xla.sdy.FuncResultSharding`) is the
      // identity: it makes no program device-dependent.
      // Nor does a TopK custom-call, a pure function of its operand: counting it made a global
      // program whose signature happens to equal its partitioning's (a size-1 dim over 2
      // devices keeps its local shape) be run device by device on shards, as if partitioned.
      if (instruction->opcode() == HloOpcode::kCustomCall) {
        const std::string target = instruction->attrs().custom_call_target.value_or("");
        if (IsShardingAnnotationTarget(target) || target == "TopK") continue;
      }
      if (IsCollective(instruction->opcode()) || IsDeviceDependent(instruction->opcode())) {
        return true;
      }
    }
  }
  return false;
}

bool SameSignature(const HloModule& a, const HloModule& b) {
  std::vector<HloInstruction*> pa = a.entry()->parameters();
  std::vector<HloInstruction*> pb = b.entry()->parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i] == nullptr || pb[i] == nullptr || !pa[i]->shape().Compatible(pb[i]->shape())) {
      return false;
    }
  }
  return a.entry()->root()->shape().Compatible(b.entry()->root()->shape());
}

// Tolerance for the element types of `shape` under an input style.
Tolerance ToleranceFor(const Shape& shape, InputStyle style) {
  double eps = 0;
  std::function<void(const Shape&)> visit = [&](const Shape& s) {
    if (s.IsTuple()) {
      for (const Shape& e : s.tuple_shapes()) visit(e);
      return;
    }
    // An ulp at 1 of the type's mantissa (bf16 2^-7, f16 2^-10); f32 and f64 only for real-valued
    // inputs (small integers are exact in them); the f8 formats a flat 2^-2. Tokens add nothing.
    DispatchElementType(s.element_type(), [&](auto tag) {
      using Tag = decltype(tag);
      if constexpr (Tag::kIsFloat) {
        double type_eps = std::ldexp(1.0, -Tag::kMantissaBits);
        if constexpr (Tag::kIsNativeFloat) {
          if (style != InputStyle::kReals) type_eps = 0.0;
        } else if constexpr (Tag::kBits == 8) {
          type_eps = 0x1.0p-2;
        }
        eps = std::max(eps, type_eps);
      }
    }).IgnoreError();
  };
  visit(shape);
  Tolerance tolerance;
  // Small-integer inputs are exact in f32/f64; narrow floats round sums beyond 2^(mantissa+1).
  // Real-valued inputs round everywhere, so allow 64 ulps relative plus as much absolute.
  const double factor = style == InputStyle::kReals ? 64.0 : 2.0;
  tolerance.relative = eps * factor;
  tolerance.absolute = eps * factor;
  tolerance.absolute_scales_with_magnitude = eps > 0 && eps <= 0x1.0p-23;  // f32, f64.
  return tolerance;
}

// The global input where every tile repeats tile 0 (what every device sees when each is given
// device 0's shard).
Literal RepeatTileZero(const Literal& global, const HloSharding& sharding) {
  if (!sharding.IsTiled() || global.shape().IsTuple()) return global;
  const Shape& shape = global.shape();
  const Shape tile = sharding.TileShape(shape);
  Literal out(shape);
  const int64_t width = global.element_byte_width();
  std::vector<int64_t> source(shape.rank());
  ForEachIndex(shape.dimensions(), [&](absl::Span<const int64_t> index) {
    for (int64_t k = 0; k < shape.rank(); ++k) {
      source[k] = tile.dimensions(k) == 0 ? 0 : index[k] % tile.dimensions(k);
    }
    std::memcpy(out.raw_data() + LinearIndex(shape.dimensions(), index) * width,
                global.raw_data() + LinearIndex(shape.dimensions(), source) * width,
                static_cast<size_t>(width));
  });
  return out;
}

// The global shape of which `local` is a shard under `sharding` (even tiling assumed).
Shape GlobalShapeOf(const Shape& local, const HloSharding& sharding) {
  if (!sharding.IsTiled() || !local.IsArray()) return local;
  Shape global = local;
  for (int64_t k = 0; k < local.rank(); ++k) {
    global.set_dimensions(k, local.dimensions(k) * sharding.tile_assignment().dim(k));
  }
  return global;
}

// What an instruction of the partitioned program claims to hold: the global value's name and the
// sharding it holds it under.
struct Claim {
  std::string holds;  // The global instruction's name.
  HloSharding sharding;
  std::vector<int64_t> leaf;  // Of a tuple value: the leaf's path; empty for the whole value.
  bool tentative = false;     // EquivOptions::HeldValue::tentative.
};

// The claimed values a search for a wrong value's makers stops at: every claim but the
// tentative ones not (yet) found right on every device.
class StopsAt {
 public:
  StopsAt(const absl::flat_hash_map<const HloInstruction*, Claim>& claims,
          const absl::flat_hash_set<const HloInstruction*>& right_tentative)
      : claims_(claims), right_tentative_(right_tentative) {}
  bool contains(const HloInstruction* instruction) const {
    auto it = claims_.find(instruction);
    return it != claims_.end() && (!it->second.tentative || right_tentative_.contains(instruction));
  }

 private:
  const absl::flat_hash_map<const HloInstruction*, Claim>& claims_;
  const absl::flat_hash_set<const HloInstruction*>& right_tentative_;
};

// A claim on `held` ("NAME" or a tuple leaf "NAME{i}{j}", EquivOptions::HeldValue); a path that
// does not parse is left in the name, which then matches no global instruction.
Claim ClaimOf(absl::string_view held, HloSharding sharding) {
  Claim claim{std::string(held), std::move(sharding), {}};
  const size_t brace = held.find('{');
  if (brace == absl::string_view::npos || brace == 0) return claim;
  std::vector<int64_t> leaf;
  for (absl::string_view step : absl::StrSplit(held.substr(brace), '}', absl::SkipEmpty())) {
    int64_t index = -1;
    if (!absl::ConsumePrefix(&step, "{") || !absl::SimpleAtoi(step, &index) || index < 0) {
      return claim;
    }
    leaf.push_back(index);
  }
  claim.holds = std::string(held.substr(0, brace));
  claim.leaf = std::move(leaf);
  return claim;
}

// The part of `value` a claim's leaf path names (`value` itself for an empty path); null when
// the path leaves the value's tuple structure.
const Literal* LeafOf(const Literal& value, const std::vector<int64_t>& leaf) {
  const Literal* at = &value;
  for (int64_t index : leaf) {
    if (!at->shape().IsTuple() || index >= at->tuple_size()) return nullptr;
    at = &at->tuple_elements()[index];
  }
  return at;
}

// Whether `global` has an instruction named `name` in any computation.
bool HasInstructionNamed(const HloModule& global, const std::string& name) {
  for (const auto& c : global.computations()) {
    if (c->FindInstruction(name) != nullptr) return true;
  }
  return false;
}

// Claims from `// holds=NAME [sharding={...}]` comments on an instruction's lines, else from an
// instruction of the global program with the same name; the sharding is the comment's, else the
// instruction's own `sharding=`. Given claims come first (`given` for the entry, `given_called`
// for the other computations); every kind also comes from the computations the entry runs as
// control flow (a while body's instructions are checked on every trip), less manual values
// there (each device's own, not a shard of a global value).
absl::flat_hash_map<const HloInstruction*, Claim> ClaimsOf(
    const HloModule& global, const HloModule& partitioned, absl::string_view source,
    const std::map<std::string, EquivOptions::HeldValue>& given,
    const std::map<std::string, std::map<std::string, EquivOptions::HeldValue>>& given_called) {
  std::vector<absl::string_view> lines = absl::StrSplit(source, '\n');
  absl::flat_hash_map<const HloInstruction*, Claim> claims;
  for (const auto& computation : partitioned.computations()) {
    const bool entry = computation.get() == partitioned.entry();
    const std::map<std::string, EquivOptions::HeldValue>* given_here = &given;
    if (!entry) {
      auto it = given_called.find(computation->name());
      given_here = it != given_called.end() ? &it->second : nullptr;
    }
    const auto& instructions = computation->instructions();
    for (size_t k = 0; k < instructions.size(); ++k) {
      const HloInstruction& instruction = *instructions[k];
      std::optional<Claim> claim;
      if (given_here != nullptr) {
        if (auto it = given_here->find(instruction.name()); it != given_here->end()) {
          Claim given_claim = ClaimOf(it->second.global, it->second.sharding);
          given_claim.tentative = it->second.tentative;
          claims.emplace(&instruction, std::move(given_claim));
          continue;
        }
      }
      const int64_t first_line = instruction.location().line;
      const int64_t last_line = k + 1 < instructions.size()
                                    ? std::max(first_line, instructions[k + 1]->location().line - 1)
                                    : first_line;
      for (int64_t line = first_line;
           line >= 1 && line <= last_line && line <= static_cast<int64_t>(lines.size()); ++line) {
        std::optional<HoldsComment> note = ParseHoldsComment(lines[line - 1]);
        if (!note.has_value()) continue;
        Claim c{note->holds, note->sharding.value_or(HloSharding::Replicate()), {}};
        const bool has_sharding = note->sharding.has_value();
        if (!has_sharding) {
          if (!instruction.sharding().has_value()) continue;
          c.sharding = *instruction.sharding();
        }
        claim = std::move(c);
        break;
      }
      if (!claim.has_value() && instruction.sharding().has_value() &&
          (entry ? global.entry()->FindInstruction(instruction.name()) != nullptr
                 : HasInstructionNamed(global, instruction.name()))) {
        claim = Claim{instruction.name(), *instruction.sharding(), {}};
      }
      if (!claim.has_value() || (!entry && claim->sharding.IsManual())) continue;
      claims.emplace(&instruction, *std::move(claim));
    }
  }
  return claims;
}

// The unclaimed instructions that feed `roots` (their operands, theirs, ...), stopping at
// claimed values and parameters; `roots` themselves are included.
absl::flat_hash_set<const HloInstruction*> UnclaimedCone(
    const std::vector<const HloInstruction*>& roots, const StopsAt& claims,
    std::vector<const HloInstruction*>* order = nullptr) {
  std::vector<const HloInstruction*> cone = roots;
  absl::flat_hash_set<const HloInstruction*> seen(roots.begin(), roots.end());
  for (size_t i = 0; i < cone.size(); ++i) {
    for (const HloInstruction* operand : cone[i]->operands()) {
      if (claims.contains(operand) || operand->opcode() == HloOpcode::kParameter ||
          !seen.insert(operand).second) {
        continue;
      }
      cone.push_back(operand);
    }
  }
  if (order != nullptr) *order = std::move(cone);
  return seen;
}

// The backward cone of `diverging` through unclaimed instructions (Divergence::suspects), less
// what also fed a claimed value the oracle found right before it (`verified`): a partition
// offset or a constant that XLA's partitioner shares between the handlers of two source ops
// (CSE) made a right value there, so it is not the first wrong one (a dynamic-update-slice's
// wrong select was named after the reverse whose offset it reused).
// A loop's parameter (of its body or condition) holds, after the first trip, what the body's
// root computed on the trip before: that root, for `diverging` a loop's parameter; else null.
const HloInstruction* LoopCarriedRoot(const HloInstruction& diverging) {
  const HloComputation* computation = diverging.parent();
  if (diverging.opcode() != HloOpcode::kParameter || computation == nullptr ||
      computation->parent() == nullptr) {
    return nullptr;
  }
  for (const auto& c : computation->parent()->computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() != HloOpcode::kWhile) continue;
      const HloComputation* body = i->called_computation("body");
      if (body != nullptr &&
          (body == computation || i->called_computation("condition") == computation)) {
        return body->root();
      }
    }
  }
  return nullptr;
}

// The operand of tuple instruction `tuple` (through nested tuples) that makes its leaf `leaf`
// (a path as ElementMismatch::leaf gives it, "{1}{0}"); `tuple` itself when it is no tuple
// instruction or the path does not lead into an operand.
const HloInstruction* LeafMaker(const HloInstruction& tuple, absl::string_view leaf) {
  const HloInstruction* maker = &tuple;
  for (absl::string_view step : absl::StrSplit(leaf, '}', absl::SkipEmpty())) {
    int64_t index = -1;
    if (maker->opcode() != HloOpcode::kTuple || !absl::ConsumePrefix(&step, "{") ||
        !absl::SimpleAtoi(step, &index) || index < 0 || index >= maker->operand_count()) {
      break;
    }
    maker = maker->operand(index);
  }
  return maker;
}

// `wrong_leaf`: the leaf of `diverging` found wrong (ElementMismatch::leaf). A tuple made by a
// tuple instruction is wrong through that leaf's operand only: the other leaves' makers (a
// right all-to-all beside the wrong all-gather of one sort's two outputs) are not suspects.
std::vector<Divergence::Suspect> SuspectsOf(const HloInstruction& diverging, const StopsAt& claims,
                                            const std::vector<const HloInstruction*>& verified,
                                            bool later_trip, absl::string_view wrong_leaf) {
  const HloInstruction* maker = LeafMaker(diverging, wrong_leaf);
  if (claims.contains(maker)) maker = &diverging;
  std::vector<const HloInstruction*> roots = {maker};
  // A loop's state wrong on a later trip: what the body made it from on the trip before (an
  // unclaimed root, e.g. the reshard that ends the body), the parameter itself last.
  const HloInstruction* carried = later_trip ? LoopCarriedRoot(diverging) : nullptr;
  if (carried != nullptr && !claims.contains(carried)) roots.push_back(carried);
  std::vector<const HloInstruction*> cone;
  (void)UnclaimedCone(roots, claims, &cone);
  if (maker != &diverging) cone.push_back(&diverging);
  const absl::flat_hash_set<const HloInstruction*> right = UnclaimedCone(verified, claims);
  cone.erase(
      std::remove_if(cone.begin(), cone.end(),
                     [&](const HloInstruction* i) { return i != &diverging && right.contains(i); }),
      cone.end());
  // Program order; the loop body's part before the diverging computation's.
  std::sort(cone.begin(), cone.end(), [&](const HloInstruction* a, const HloInstruction* b) {
    const bool a_here = a->parent() == diverging.parent();
    const bool b_here = b->parent() == diverging.parent();
    if (a_here != b_here) return b_here;
    return a->index_in_parent() < b->index_in_parent();
  });
  std::vector<Divergence::Suspect> suspects;
  for (const HloInstruction* i : cone) suspects.push_back({i->name(), i->opcode()});
  return suspects;
}

std::string IndexText(const std::vector<int64_t>& index) {
  return absl::StrCat("[", absl::StrJoin(index, ","), "]");
}

}  // namespace

// Ops whose float results are not integers even on integer inputs: with them, small-integer
// inputs no longer make sums exact in any order, so results compare with the reals' tolerance.
bool HasInexactFloatOps(const HloModule& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (!instruction->shape().IsArray() || !IsFloatingType(instruction->shape().element_type())) {
        continue;
      }
      switch (instruction->opcode()) {
        case HloOpcode::kAtan2:
        case HloOpcode::kCbrt:
        case HloOpcode::kCos:
        case HloOpcode::kDivide:
        case HloOpcode::kErf:
        case HloOpcode::kExp:
        case HloOpcode::kExpm1:
        case HloOpcode::kLog:
        case HloOpcode::kLog1p:
        case HloOpcode::kLogistic:
        case HloOpcode::kPower:
        case HloOpcode::kRsqrt:
        case HloOpcode::kSin:
        case HloOpcode::kSqrt:
        case HloOpcode::kTan:
        case HloOpcode::kTanh:
        case HloOpcode::kBatchNormGrad:
        case HloOpcode::kBatchNormInference:
        case HloOpcode::kBatchNormTraining:
        case HloOpcode::kCholesky:
        case HloOpcode::kTriangularSolve:
        case HloOpcode::kFft:
          return true;
        default:
          break;
      }
    }
  }
  return false;
}

namespace {

// A program whose parameters and result are all manual has no global view: it is already a
// per-device program.
bool HasManualInterface(const HloModule& m) {
  auto manual = [](const HloInstruction* i) {
    if (i == nullptr || !i->sharding().has_value()) return false;
    const HloSharding& s = *i->sharding();
    if (s.IsManual()) return true;
    if (!s.IsTuple() || s.tuple_elements().empty()) return false;
    for (const HloSharding& e : s.tuple_elements()) {
      if (!e.IsManual()) return false;
    }
    return true;
  };
  for (const HloInstruction* p : m.entry()->parameters()) {
    if (!manual(p)) return false;
  }
  return manual(m.entry()->root());
}

// How CheckEquivalence compares the two programs and feeds them, fixed before the first trial.
struct EquivSetup {
  const HloModule* first = nullptr;
  const HloModule* second = nullptr;
  const EquivOptions* options = nullptr;
  int64_t partitions = 1;
  int64_t replicas = 1;
  int64_t n = 1;  // Devices.
  InputStyle style = InputStyle::kSmallIntegers;
  bool both_partitioned = false;
  bool global_on_every_device = false;
  std::vector<HloInstruction*> first_params;
  std::vector<HloInstruction*> second_params;
  std::vector<ParameterProfile> profiles;
  const HloSharding* root_sharding = nullptr;
  Tolerance tolerance;
};

// The notes on how results compare (tolerance) and what inputs are drawn.
void AddInputNotes(const EquivSetup& setup, bool inexact, EquivReport* report) {
  if (inexact) {
    report->notes.push_back(
        "the program has inexact float ops (exp, tanh, divide, ...): summation order changes "
        "roundings even on integer inputs, so float results compare with a tolerance");
  } else if (setup.tolerance.relative > 0) {
    report->notes.push_back(
        absl::StrCat("floating-point results compared with relative and "
                     "absolute tolerance ",
                     setup.tolerance.relative, " (element type and input style)"));
  }
  if (setup.style == InputStyle::kSmallIntegers) {
    report->notes.push_back(
        absl::StrCat(inexact ? "inputs are small integers; "
                             : "inputs are small integers (exact float sums in any order); ",
                     "--float draws reals in [-1, 1]"));
  } else {
    report->notes.push_back("inputs are reals in [-1, 1] (--float)");
  }
  if (setup.options->same_input_everywhere) {
    report->notes.push_back(
        "UNSOUND (--same-input-everywhere): every partition was fed the same shard (device 0's), "
        "so every tile of every input was identical. A program that reads the wrong tile, e.g. "
        "its own pipeline stage instead of stage 0, computes the same numbers on such inputs and "
        "cannot be told apart. This is how XLA's HLO runner comparison in the seed report passed; "
        "drop the flag to give each partition its own shard.");
  }
}

// Every device's arguments for the global inputs `globals` of trial `trial`.
absl::Status ShardInputs(const EquivSetup& setup, int64_t trial,
                         const std::vector<Literal>& globals,
                         std::vector<std::vector<Literal>>* per_device) {
  const EquivOptions& options = *setup.options;
  per_device->assign(setup.n, {});
  for (int64_t d = 0; d < setup.n; ++d) {
    const int64_t partition = d % setup.partitions;
    for (size_t i = 0; i < globals.size(); ++i) {
      const HloSharding& sharding = ShardingOr(setup.first_params[i], setup.second_params[i]);
      if (sharding.IsManual() && setup.both_partitioned) {
        // A manual parameter has no global value: every device gets its own random input
        // (the same one in both programs), drawn from the trial's seed and the device.
        std::mt19937_64 device_rng(
            TrialSeed(options.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(d + 1)),
                      trial * 1000003 + static_cast<int64_t>(i)));
        const ParameterProfile profile =
            i < setup.profiles.size() ? setup.profiles[i] : ParameterProfile{};
        (*per_device)[d].push_back(
            RandomLiteral(setup.first_params[i]->shape(), profile, setup.style, device_rng));
        continue;
      }
      absl::StatusOr<Literal> shard = options.same_input_everywhere
                                          ? ShardOf(globals[i], sharding, 0)
                                          : ShardOf(globals[i], sharding, partition);
      if (!shard.ok()) return shard.status();
      (*per_device)[d].push_back(*std::move(shard));
    }
  }
  return absl::OkStatus();
}

// The global inputs of trial `trial` (global shapes of partitioned parameters when both
// programs are partitioned).
std::vector<Literal> TrialGlobals(const EquivSetup& setup, int64_t trial) {
  std::mt19937_64 rng(TrialSeed(setup.options->seed, trial));
  std::vector<Literal> globals;
  for (size_t i = 0; i < setup.first_params.size(); ++i) {
    const HloSharding& sharding = ShardingOr(setup.first_params[i], setup.second_params[i]);
    const Shape shape = setup.both_partitioned
                            ? GlobalShapeOf(setup.first_params[i]->shape(), sharding)
                            : setup.first_params[i]->shape();
    const ParameterProfile profile =
        i < setup.profiles.size() ? setup.profiles[i] : ParameterProfile{};
    Literal global = RandomLiteral(shape, profile, setup.style, rng);
    if (setup.options->same_input_everywhere) global = RepeatTileZero(global, sharding);
    globals.push_back(std::move(global));
  }
  return globals;
}

void SetUnknown(absl::string_view reason, EquivReport* report) {
  report->verdict = Verdict::kUnknown;
  report->unknown_reason = std::string(reason);
}

// How a trial ended: on to the next one, a wrong device (the verdict fails), or a final report
// (unknown) to return as it is.
enum class TrialEnd { kNext, kFailed, kReport };

// Compares every device's result of a trial; records the wrong devices.
TrialEnd CompareDevices(const EquivSetup& setup, int64_t trial,
                        const std::vector<Literal>& first_results,
                        const std::vector<Literal>& second_results, EquivReport* report) {
  for (int64_t d = 0; d < setup.n; ++d) {
    std::optional<ElementMismatch> mismatch;
    if (setup.both_partitioned) {
      mismatch = CompareLiterals(first_results[d], second_results[d], setup.tolerance);
    } else {
      absl::StatusOr<std::optional<ElementMismatch>> compared =
          CompareShard(second_results[d], first_results[0], *setup.root_sharding,
                       d % setup.partitions, setup.tolerance);
      if (!compared.ok()) {
        if (absl::IsUnimplemented(compared.status())) {
          SetUnknown(compared.status().message(), report);
          return TrialEnd::kReport;
        }
        mismatch = ElementMismatch{{}, {}, "", std::string(compared.status().message()), ""};
      } else {
        mismatch = *compared;
      }
    }
    if (!mismatch.has_value()) continue;
    if (report->device < 0) {
      report->device = d;
      report->mismatch = *mismatch;
    }
    report->wrong_devices.push_back(d);
  }
  if (report->wrong_devices.empty()) return TrialEnd::kNext;
  report->verdict = Verdict::kFails;
  report->failing_trial = trial;
  return TrialEnd::kFailed;
}

// Runs both programs on the inputs of trial `trial` and compares them.
absl::StatusOr<TrialEnd> RunTrial(const EquivSetup& setup, int64_t trial, Engine& first_engine,
                                  Engine& second_engine, EquivReport* report) {
  std::vector<Literal> globals = TrialGlobals(setup, trial);
  std::vector<std::vector<Literal>> second_args;
  absl::Status sharded = ShardInputs(setup, trial, globals, &second_args);
  if (!sharded.ok()) {
    SetUnknown(sharded.message(), report);
    return TrialEnd::kReport;
  }
  std::vector<std::vector<Literal>> first_args;
  if (setup.both_partitioned) {
    first_args = second_args;
  } else if (setup.global_on_every_device) {
    first_args.assign(setup.n, globals);
  } else {
    first_args.push_back(globals);
  }
  absl::StatusOr<std::vector<Literal>> first_results = first_engine.Run(std::move(first_args));
  absl::StatusOr<std::vector<Literal>> second_results =
      first_results.ok() ? second_engine.Run(std::move(second_args)) : first_results;
  for (const auto* results : {&first_results, &second_results}) {
    if (results->ok()) continue;
    const absl::Status& status = results->status();
    if (absl::IsUnimplemented(status) || absl::IsResourceExhausted(status)) {
      SetUnknown(status.message(), report);
      return TrialEnd::kReport;
    }
    return status;
  }
  report->trials_run = trial + 1;
  return CompareDevices(setup, trial, *first_results, *second_results, report);
}

// The bytes of a value of `shape` (a tuple's: its leaves').
int64_t BytesOf(const Shape& shape) {
  if (!shape.IsTuple()) return shape.IsArray() ? shape.ByteSize() : 0;
  int64_t bytes = 0;
  for (const Shape& leaf : shape.tuple_shapes()) bytes += BytesOf(leaf);
  return bytes;
}

// The trips of a loop on which its body's values are checked against the global ones.
constexpr size_t kMaxObservedTrips = 64;
constexpr int64_t kMaxObservedTripBytes = int64_t{1} << 28;

// Localises a global-vs-partitioned check: replays the failing trial (or trial 0 when the
// verdict holds), recording the global value of every instruction the partitioned program claims
// to hold, then checks each claim in program order (report->first_divergence).
void Localise(const EquivSetup& setup, Engine& first_engine, Engine& second_engine,
              EquivReport* report) {
  const EquivOptions& options = *setup.options;
  const absl::flat_hash_map<const HloInstruction*, Claim> claims =
      ClaimsOf(*setup.first, *setup.second, options.partitioned_source, options.claims,
               options.called_claims);
  absl::flat_hash_set<std::string> wanted;
  for (const auto& [instruction, claim] : claims) wanted.insert(claim.holds);
  // Every value a wanted global instruction took, in order (a loop body's: one per trip, up to
  // kMaxObservedTrips).
  absl::flat_hash_map<std::string, std::vector<Literal>> global_values;
  int64_t stored_bytes = 0;
  // Claimed instructions checked right on every device before the first divergence.
  std::vector<const HloInstruction*> verified;
  absl::flat_hash_set<const HloInstruction*> verified_set;
  // Of them, the tentative claims (right on every device each time they were checked).
  absl::flat_hash_set<const HloInstruction*> right_tentative;
  absl::flat_hash_set<const HloInstruction*> wrong_tentative;
  const StopsAt stops_at(claims, right_tentative);
  absl::flat_hash_set<const HloInstruction*> diverged;
  absl::flat_hash_map<const HloInstruction*, size_t> trips;
  first_engine.set_observer([&](const HloInstruction& instruction, absl::Span<const int64_t>,
                                absl::Span<const ValueRef> values) {
    if (!wanted.contains(instruction.name())) return;
    std::vector<Literal>& taken = global_values[instruction.name()];
    // The first value always (what was kept before loop bodies were observed); later trips
    // while the copies stay small.
    const int64_t bytes = BytesOf(instruction.shape());
    if (!taken.empty() &&
        (taken.size() >= kMaxObservedTrips || stored_bytes + bytes > kMaxObservedTripBytes)) {
      return;
    }
    stored_bytes += bytes;
    taken.push_back(*values[0]);
  });
  const int64_t replay = report->failing_trial >= 0 ? report->failing_trial : 0;
  std::vector<Literal> globals = TrialGlobals(setup, replay);
  std::vector<std::vector<Literal>> second_args;
  // The trial only seeds manual parameters of two partitioned programs, never localised.
  if (claims.empty() || !ShardInputs(setup, replay, globals, &second_args).ok()) return;
  // A global program with manual regions runs on every device (RunTrial); device 0's values
  // outside the regions are the global ones the observer records.
  std::vector<std::vector<Literal>> first_args;
  if (setup.global_on_every_device) {
    first_args.assign(setup.n, globals);
  } else {
    first_args.push_back(std::move(globals));
  }
  if (!first_engine.Run(std::move(first_args)).ok()) return;
  second_engine.set_observer([&](const HloInstruction& instruction,
                                 absl::Span<const int64_t> devices,
                                 absl::Span<const ValueRef> values) {
    auto claim = claims.find(&instruction);
    if (claim == claims.end()) return;
    // The k-th run of a claimed instruction holds the k-th value of its global instruction.
    const size_t trip = trips[&instruction]++;
    auto taken = global_values.find(claim->second.holds);
    if (taken == global_values.end() || trip >= taken->second.size()) return;
    const Literal* leaf = LeafOf(taken->second[trip], claim->second.leaf);
    if (leaf == nullptr) return;
    const Literal& global = *leaf;
    const bool tentative = claim->second.tentative;
    if (!tentative) ++report->annotations_checked;
    // One divergence per instruction: a loop body's wrong value is wrong again on the next trip.
    if (report->later_divergences.size() >= EquivReport::kMaxLaterDivergences ||
        diverged.contains(&instruction) || wrong_tentative.contains(&instruction)) {
      return;
    }
    Divergence divergence;
    for (size_t i = 0; i < devices.size(); ++i) {
      absl::StatusOr<std::optional<ElementMismatch>> compared =
          CompareShard(*values[i], global, claim->second.sharding, devices[i] % setup.partitions,
                       setup.tolerance);
      if (!compared.ok()) {
        // The local shape is not the claimed shard's (e.g. a padded buffer): not comparable.
        if (!tentative) --report->annotations_checked;
        return;
      }
      if (!compared->has_value()) continue;
      if (divergence.devices_wrong++ == 0) {
        divergence.device = devices[i];
        divergence.mismatch = **compared;
      }
    }
    if (tentative) {
      // Right every time, it ends searches for makers; once wrong, it is unclaimed for good.
      if (divergence.devices_wrong > 0) {
        right_tentative.erase(&instruction);
        wrong_tentative.insert(&instruction);
        return;
      }
      right_tentative.insert(&instruction);
    }
    if (divergence.devices_wrong == 0) {
      if (verified_set.insert(&instruction).second) verified.push_back(&instruction);
      return;
    }
    diverged.insert(&instruction);
    divergence.instruction = instruction.name();
    // Right on an earlier trip of a loop and wrong now: what made it then is no evidence.
    divergence.suspects = SuspectsOf(
        instruction, stops_at,
        verified_set.contains(&instruction) ? std::vector<const HloInstruction*>{} : verified,
        trip > 0, divergence.mismatch.leaf);
    divergence.location = instruction.location();
    divergence.holds = claim->second.holds;
    for (int64_t index : claim->second.leaf)
      absl::StrAppend(&divergence.holds_leaf, "{", index, "}");
    divergence.sharding = claim->second.sharding.ToString(false);
    if (report->first_divergence.has_value()) {
      report->later_divergences.push_back(std::move(divergence));
    } else {
      report->first_divergence = std::move(divergence);
    }
  });
  (void)second_engine.Run(std::move(second_args));
}

// CheckEquivalence on the programs as given; float results compare with the tolerance of the
// element types of `typed_result` (the first program's result shape, or the shape it had before
// it was widened).
absl::StatusOr<EquivReport> CompareOnDevices(const HloModule& first, const HloModule& second,
                                             const EquivOptions& options,
                                             const Shape& typed_result) {
  EquivReport report;
  report.seed = options.seed;
  EquivSetup setup;
  setup.first = &first;
  setup.second = &second;
  setup.options = &options;
  setup.partitions = options.num_partitions > 0 ? options.num_partitions : second.num_partitions();
  setup.replicas = options.replica_count > 0 ? options.replica_count : second.replica_count();
  setup.n = setup.partitions * setup.replicas;
  report.num_devices = setup.n;
  setup.style = options.float_inputs ? InputStyle::kReals : InputStyle::kSmallIntegers;
  // A per-device program (all-manual interface) is compared device by device like two
  // partitioned programs.
  setup.both_partitioned =
      SameSignature(first, second) &&
      (HasManualInterface(first) || (!options.first_is_global && HasDeviceDependentOps(first)));
  report.mode = setup.both_partitioned ? "partitioned vs partitioned" : "global vs partitioned";

  setup.first_params = first.entry()->parameters();
  setup.second_params = second.entry()->parameters();
  if (setup.first_params.size() != setup.second_params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the programs take ", setup.first_params.size(),
                                                   " and ", setup.second_params.size(),
                                                   " parameters"));
  }
  for (size_t i = 0; i < setup.first_params.size(); ++i) {
    if (setup.first_params[i] == nullptr || setup.second_params[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", i, " is missing"));
    }
  }

  // A global program with manual regions is itself SPMD inside them: it runs on every device
  // with the whole inputs, and device 0's result is the global result (ShardToFull assembles it
  // on every device).
  setup.global_on_every_device = !setup.both_partitioned && HasManualRegions(first);
  EngineOptions first_options;
  first_options.seed = options.seed;
  first_options.max_elements_per_array = options.max_elements_per_array;
  first_options.deadline = options.deadline;
  if (setup.both_partitioned || setup.global_on_every_device) {
    first_options.num_partitions = setup.partitions;
    first_options.replica_count = setup.replicas;
  }
  EngineOptions second_options = first_options;
  second_options.num_partitions = setup.partitions;
  second_options.replica_count = setup.replicas;
  Engine first_engine(first, first_options);
  Engine second_engine(second, second_options);
  for (Engine* engine : {&first_engine, &second_engine}) {
    absl::Status runnable = engine->CheckRunnable();
    if (!runnable.ok()) {
      SetUnknown(runnable.message(), &report);
      return report;
    }
  }

  setup.profiles = ProfileParameters(first);
  setup.root_sharding = &ShardingOr(first.entry()->root(), second.entry()->root());
  const bool inexact = setup.style == InputStyle::kSmallIntegers && HasInexactFloatOps(first);
  setup.tolerance = ToleranceFor(typed_result, inexact ? InputStyle::kReals : setup.style);
  AddInputNotes(setup, inexact, &report);

  for (int64_t trial = 0; trial < options.trials; ++trial) {
    absl::StatusOr<TrialEnd> end = RunTrial(setup, trial, first_engine, second_engine, &report);
    if (!end.ok()) return end.status();
    if (*end == TrialEnd::kReport) return report;
    if (*end == TrialEnd::kFailed) break;
  }
  if (report.verdict != Verdict::kFails) {
    report.verdict = Verdict::kHolds;
    report.notes.push_back(absl::StrCat("holds on ", report.trials_run,
                                        " random trial(s) for every one of the ", setup.n,
                                        " devices (a test, not a proof; raise --trials for more)"));
  }
  if (!setup.both_partitioned) Localise(setup, first_engine, second_engine, &report);
  if (report.verdict == Verdict::kHolds && report.annotations_checked > 0) {
    report.notes.push_back(absl::StrCat("every one of the ", report.annotations_checked,
                                        " annotated instructions holds the value its sharding= "
                                        "promises (trial 0)"));
  }
  return report;
}

// True when an f32 mismatch in `report` may be rounding: both programs compute in f32 only, and
// their floats are not exact (inexact ops, or real-valued inputs), so a reordered sum rounds
// differently in each.
bool RoundingMayExplain(const HloModule& first, const HloModule& second,
                        const EquivOptions& options, const EquivReport& report) {
  return report.verdict == Verdict::kFails && AllFloatsAreF32(first) && AllFloatsAreF32(second) &&
         (options.float_inputs || HasInexactFloatOps(first));
}

// A second look at an f32 mismatch: both programs evaluated in f64 on the same trials (the same
// small-integer inputs; real inputs come from the same stream, drawn at f64 precision), compared
// with f32's tolerance. Why not a wider f32 tolerance: partitioning reorders additions, and what
// a reordering changes is the rounding unit times the magnitude of the terms times how much the
// rest of the program amplifies an error, and that last factor is what a tolerance fixed per
// element type cannot know. A generated pipeline (PipelineGenTest, RapidCheck seed
// 8135646384220318788) sums a 4-term dot as two partial sums and an all-reduce, which rounds
// differently in the last bit; six loop trips of dots (weights up to 3, 4 terms) and tanh grow
// that to 2.3e-4 at 2.59 (about 950 ulps; the tolerance there, 64 ulps relative plus 64 ulps of
// the result's largest magnitude, is 6.6e-5). Evaluated in f64 the two programs agree to 1e-13:
// the same reorderings round 2^29 times finer, so after the same amplification they stay far
// inside f32's tolerance, while a wrong value (a wrong element, a lost or doubled collective,
// padding read) is as wrong in f64 as in f32. Only programs that compute in f32 alone: one that
// also has narrow floats or f64 could hide a partitioner that computes in the wrong type. The f32
// report stands unless the f64 one holds.
absl::StatusOr<EquivReport> LookAgainInF64(const HloModule& first, const HloModule& second,
                                           const EquivOptions& options, EquivReport f32_report) {
  std::unique_ptr<HloModule> wide_first = WidenFloats(first, FloatWidening::kF32ToF64);
  std::unique_ptr<HloModule> wide_second = WidenFloats(second, FloatWidening::kF32ToF64);
  if (wide_first == nullptr || wide_second == nullptr) return f32_report;
  absl::StatusOr<EquivReport> wide =
      CompareOnDevices(*wide_first, *wide_second, options, first.entry()->root()->shape());
  if (!wide.ok() || wide->verdict == Verdict::kUnknown) return f32_report;
  if (wide->verdict == Verdict::kFails) {
    f32_report.notes.push_back(
        "evaluated in f64 the programs differ as well: the difference is not rounding");
    return f32_report;
  }
  const ElementMismatch& m = f32_report.mismatch;
  wide->notes.push_back(absl::StrCat(
      "in f32 the programs differ beyond the tolerance (trial ", f32_report.failing_trial,
      ", device ", f32_report.device, " at ", m.leaf, IndexText(m.global_index), ": expected ",
      m.expected, ", got ", m.actual,
      "); evaluated in f64 on the same trials they agree within "
      "f32's tolerance: rounding of reordered additions that the program amplifies, not a "
      "partitioning difference"));
  return wide;
}

}  // namespace

absl::StatusOr<EquivReport> CheckEquivalence(const HloModule& first, const HloModule& second,
                                             const EquivOptions& options) {
  if (first.entry() == nullptr || second.entry() == nullptr) {
    return absl::InvalidArgumentError("both modules need an entry computation");
  }
  absl::StatusOr<EquivReport> report =
      CompareOnDevices(first, second, options, first.entry()->root()->shape());
  if (!report.ok() || !RoundingMayExplain(first, second, options, *report)) return report;
  return LookAgainInF64(first, second, options, *std::move(report));
}

std::string FormatDivergence(const Divergence& d) {
  return absl::StrCat(d.instruction, " (line ", d.location.line, ") should hold ", d.holds,
                      d.holds_leaf, " under ", d.sharding, "; wrong on ", d.devices_wrong,
                      " devices, first device ", d.device, " at ",
                      IndexText(d.mismatch.global_index), ": expected ", d.mismatch.expected,
                      ", got ", d.mismatch.actual);
}

std::string FormatEquivReport(const EquivReport& report) {
  std::string out = absl::StrCat("verdict: ", VerdictName(report.verdict), " (", report.mode, ", ",
                                 report.num_devices, " devices, seed ", report.seed, ")\n");
  if (report.verdict == Verdict::kUnknown) {
    absl::StrAppend(&out, "reason: ", report.unknown_reason, "\n");
  }
  if (report.verdict == Verdict::kFails) {
    absl::StrAppend(&out, "trial ", report.failing_trial, ": wrong on ",
                    report.wrong_devices.size(), " of ", report.num_devices, " devices\n");
    const ElementMismatch& m = report.mismatch;
    if (m.global_index.empty() && m.expected.empty()) {
      absl::StrAppend(&out, "first wrong device: ", report.device, ": ", m.actual, "\n");
    } else {
      absl::StrAppend(&out, "first wrong device: ", report.device, " at global index ", m.leaf,
                      IndexText(m.global_index), " (local ", IndexText(m.local_index),
                      "): expected ", m.expected, ", got ", m.actual, "\n");
    }
    std::vector<std::string> ids;
    for (int64_t d : report.wrong_devices) ids.push_back(absl::StrCat(d));
    absl::StrAppend(&out, "wrong devices: ", absl::StrJoin(ids, ","), "\n");
    if (report.first_divergence.has_value()) {
      absl::StrAppend(&out, "first divergence: ", FormatDivergence(*report.first_divergence), "\n");
      if (!report.later_divergences.empty()) {
        std::vector<std::string> later;
        for (const Divergence& d : report.later_divergences) later.push_back(d.holds);
        absl::StrAppend(&out, "later divergences (holding): ", absl::StrJoin(later, ", "), "\n");
      }
    } else {
      absl::StrAppend(&out, "first divergence: none of the ", report.annotations_checked,
                      " annotated instructions matched to a global value diverges\n");
    }
  }
  for (const std::string& note : report.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

}  // namespace spmdcheck::oracle
