// The oracle judge (check/judges.h): our N-device interpreter runs the partitioned program
// against the global one, with the partitioner's claims (which instruction holds which global
// value) for the localisation of the first divergence.
#include <chrono>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "check/judges.h"
#include "oracle/equivalence.h"

namespace spmdcheck::check {
namespace {

// Claims for the oracle's localisation from XLA's metadata: the last partitioned instruction
// made from global instruction X (same op_name) whose shape is the tile shape of the sharding
// XLA propagated to X holds X's value under that sharding. Any opcode: XLA's handler for X
// often ends in another op (the all-reduce of a reduce's or a dot's partial results, the
// dynamic-slice that cuts a padded window), and the op of X's own opcode before it holds a
// partial value, which used to be named as the first divergence.
std::map<std::string, oracle::EquivOptions::HeldValue> ClaimsFromMetadata(
    const HloModule& judged, const HloModule* propagated, const HloModule& partitioned) {
  std::map<std::string, oracle::EquivOptions::HeldValue> claims;
  if (propagated == nullptr) return claims;
  // op_name -> (name in the judged module, sharding from propagation, opcode).
  struct Global {
    std::string name;
    HloSharding sharding;
    HloOpcode opcode;
    Shape shape;
  };
  std::map<std::string, Global> by_op_name;
  for (const auto& g : judged.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*g);
    // A parameter's value is the input itself: what XLA names after it (jaxlib 0.12 labels the
    // collective-permute that reshards a parameter `param.0`) holds it resharded.
    if (op_name.empty() || !g->shape().IsArray() || g->opcode() == HloOpcode::kParameter) continue;
    const HloInstruction* p = propagated->entry()->FindInstruction(g->name());
    if (p == nullptr || !p->sharding().has_value() || p->sharding()->IsTuple()) continue;
    by_op_name.insert_or_assign(op_name,
                                Global{g->name(), *p->sharding(), g->opcode(), g->shape()});
  }
  std::map<std::string, std::string> last_made;  // partitioned instruction -> its op_name
  std::map<std::string, std::string> made_for;   // global name -> last partitioned instruction
  for (const auto& i : partitioned.entry()->instructions()) {
    const std::string op_name = MetadataOpName(*i);
    auto it = by_op_name.find(op_name);
    if (it == by_op_name.end()) continue;
    const HloSharding& sharding = it->second.sharding;
    if (!sharding.IsReplicated() && !sharding.IsTiled()) continue;
    const Shape tile = sharding.IsTiled() ? sharding.TileShape(it->second.shape) : it->second.shape;
    if (!tile.Compatible(i->shape())) continue;
    made_for[it->second.name] = i->name();
    last_made[i->name()] = op_name;
  }
  for (const auto& [global, made] : made_for) {
    const Global& g = by_op_name.at(last_made.at(made));
    claims[made] = {g.name, g.sharding};
  }
  return claims;
}

class OracleJudge : public Judge {
 public:
  absl::string_view name() const override { return "oracle"; }
  bool Applies(const JudgeInputs&) const override { return true; }
  void Run(const JudgeInputs& in, CheckOutcome& outcome) const override {
    oracle::EquivOptions equiv;
    equiv.first_is_global = true;
    equiv.num_partitions = in.num_partitions;
    equiv.trials = in.options.trials;
    equiv.seed = in.options.seed;
    equiv.max_elements_per_array = in.options.max_elements_per_array;
    if (in.options.oracle_seconds > 0) {
      equiv.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(in.options.oracle_seconds));
    }
    if (in.judged_is_received) {
      equiv.claims =
          ClaimsFromMetadata(in.oracle_global, in.output.propagated.get(), in.oracle_partitioned);
    }
    for (const auto& [name, held] : in.output.claims) {
      equiv.claims.emplace(name, oracle::EquivOptions::HeldValue{held.first, held.second});
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<oracle::EquivReport> report =
        oracle::CheckEquivalence(in.oracle_global, in.oracle_partitioned, equiv);
    outcome.oracle_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    JudgeRecord record{"oracle", Verdict::kUnknown, "", outcome.oracle_seconds, true};
    if (!report.ok()) {
      record.detail = absl::StrCat("oracle: ", report.status().message());
      record.ran = false;
    } else {
      outcome.oracle_ran = true;
      outcome.report = *std::move(report);
      record.verdict = outcome.report.verdict;
      if (record.verdict == Verdict::kFails) {
        record.detail = absl::StrCat("device ", outcome.report.device, " differs at [",
                                     absl::StrJoin(outcome.report.mismatch.global_index, ","),
                                     "]: expected ", outcome.report.mismatch.expected, ", got ",
                                     outcome.report.mismatch.actual);
      } else if (record.verdict == Verdict::kUnknown) {
        record.detail = outcome.report.unknown_reason;
      }
    }
    outcome.judges.push_back(std::move(record));
  }
};

}  // namespace

const Judge& OracleJudgeInstance() {
  static const OracleJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
