// The round-trip judge (check/judges.h): when the module a partitioner received is not the one
// sent (XLA's HLO -> StableHLO -> HLO route), our interpreter runs both on the same inputs. If
// they compute different values, the partitioned module was judged against another program
// than the user's, and a `holds` would be about that other program.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check/judges.h"
#include "oracle/global_run.h"
#include "oracle/inputs.h"
#include "oracle/sharded_values.h"

namespace spmdcheck::check {
namespace {

// At most this many trials: the two programs are the same unless the route changed one, which
// shows on the first inputs as a rule; the oracle's own trials stay the thorough part.
constexpr int64_t kRoundTripTrials = 2;

// The first difference of two runs' leaves, or nothing.
std::optional<std::string> FirstDifference(const std::vector<Literal>& sent,
                                           const std::vector<Literal>& received) {
  if (sent.size() != received.size()) {
    return absl::StrCat("the sent program has ", sent.size(), " outputs, the received one ",
                        received.size());
  }
  for (size_t l = 0; l < sent.size(); ++l) {
    if (!sent[l].shape().Compatible(received[l].shape())) {
      return absl::StrCat("output {", l, "} has shape ", sent[l].shape().ToString(false),
                          " in the sent program, ", received[l].shape().ToString(false),
                          " in the received one");
    }
    std::optional<oracle::ElementMismatch> m = oracle::CompareLiterals(
        sent[l], received[l], ExecutionTolerance(sent[l].shape().element_type()));
    if (m.has_value()) {
      m->leaf = sent.size() > 1 ? absl::StrCat("{", l, "}") : "";
      return absl::StrCat(MismatchText(*m), " (expected = the program as sent, got = as received)");
    }
  }
  return std::nullopt;
}

class RoundTripJudge : public Judge {
 public:
  absl::string_view name() const override { return "round-trip"; }
  bool Applies(const JudgeInputs& inputs) const override { return inputs.judged_is_received; }
  void Run(const JudgeInputs& in, CheckOutcome& outcome) const override {
    JudgeRecord record{"round-trip", Verdict::kUnknown, "", 0, true};
    const auto start = std::chrono::steady_clock::now();
    oracle::EngineOptions engine;
    engine.seed = in.options.seed;
    engine.num_partitions = in.num_partitions;
    engine.max_elements_per_array = in.options.max_elements_per_array;
    if (in.options.oracle_seconds > 0) {
      engine.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(in.options.oracle_seconds));
    }
    const int64_t trials = std::min<int64_t>(in.options.trials, kRoundTripTrials);
    record.verdict = Verdict::kHolds;
    for (int64_t trial = 0; trial < trials && record.verdict == Verdict::kHolds; ++trial) {
      const std::vector<Literal> inputs =
          oracle::TrialInputs(in.sent, in.options.seed, trial, oracle::InputStyle::kSmallIntegers);
      absl::StatusOr<std::vector<Literal>> sent = oracle::RunGlobalProgram(in.sent, inputs, engine);
      absl::StatusOr<std::vector<Literal>> received =
          sent.ok() ? oracle::RunGlobalProgram(in.judged, inputs, engine) : sent;
      if (!sent.ok() || !received.ok()) {
        record.verdict = Verdict::kUnknown;
        record.detail =
            absl::StrCat("our interpreter: ", (sent.ok() ? received : sent).status().message());
      } else if (std::optional<std::string> d = FirstDifference(*sent, *received)) {
        record.verdict = Verdict::kFails;
        record.detail = absl::StrCat("trial ", trial, ": ", *d);
      }
    }
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.judges.push_back(std::move(record));
  }
};

}  // namespace

const Judge& RoundTripJudgeInstance() {
  static const RoundTripJudge judge;
  return judge;
}

}  // namespace spmdcheck::check
