// The table of judges and the one verdict policy that combines their records (check/judges.h).
#include <string>

#include "absl/strings/str_cat.h"
#include "check/judges.h"

namespace spmdcheck::check {

// Defined next to each judge (check/oracle_judge.cc, check/round_trip_judge.cc,
// check/execution_judge.cc, check/lint_judge.cc, check/proof_judge.cc).
const Judge& OracleJudgeInstance();
const Judge& XlaExecutionsJudgeInstance();
const Judge& LintJudgeInstance();
const Judge& SmtProofsJudgeInstance();
const Judge& RoundTripJudgeInstance();

absl::Span<const Judge* const> Judges() {
  static const Judge* const kJudges[] = {&OracleJudgeInstance(), &RoundTripJudgeInstance(),
                                         &XlaExecutionsJudgeInstance(), &LintJudgeInstance(),
                                         &SmtProofsJudgeInstance()};
  return kJudges;
}

CheckOutcome JudgeProgramsAlone(const CorrectPartitioning& partitioning) {
  CheckOutcome outcome;
  for (const Judge* judge : Judges()) {
    if (judge->JudgesProgramsAlone()) judge->RunOnPrograms(partitioning, outcome);
  }
  return outcome;
}

const JudgeRecord* FindJudgeRecord(const CheckOutcome& outcome, absl::string_view name) {
  for (const JudgeRecord& record : outcome.judges) {
    if (record.judge == name) return &record;
  }
  return nullptr;
}

namespace {

// What the policy reads: the oracle's verdict and message, and XLA's two execution checks (null
// when the partitioner has no executables; `executed` false when they were not run).
struct Evidence {
  Verdict oracle = Verdict::kUnknown;
  std::string oracle_message;
  bool has_executables = false;
  bool executed = false;
  const ExecutionCheck* end_to_end = nullptr;
  const ExecutionCheck* interpreter = nullptr;
  // The round-trip judge's record (null when the partitioner received the module as sent).
  const JudgeRecord* round_trip = nullptr;
};

// One row of the policy: when it applies, the outcome it decides. Rows are tried in order; the
// first that applies decides.
struct PolicyRule {
  const char* name;
  bool (*applies)(const Evidence&);
  void (*decide)(const Evidence&, CheckOutcome&);
};

void Decide(CheckOutcome& outcome, CheckStatus status, Finding finding, std::string message) {
  outcome.status = status;
  outcome.finding = finding;
  outcome.message = std::move(message);
}

// The outcome when the module the partitioner received computes other values than the one sent.
void DecideRoundTripChangesMeaning(const JudgeRecord& round_trip, CheckOutcome& o) {
  Decide(o, CheckStatus::kUnsupported, Finding::kRoundTripChangesMeaning,
         absl::StrCat("round-trip-changes-meaning: the module XLA received computes other values "
                      "than the one sent (",
                      round_trip.detail,
                      "), so the partitioned module was judged against another program"));
}

constexpr PolicyRule kRules[] = {
    // No executables (ours, cmd:): the oracle is the judge.
    {"oracle-alone", [](const Evidence& e) { return !e.has_executables; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o,
              e.oracle == Verdict::kHolds   ? CheckStatus::kHolds
              : e.oracle == Verdict::kFails ? CheckStatus::kFails
                                            : CheckStatus::kUnsupported,
              Finding::kNone, e.oracle_message);
     }},
    // Executables not run (--no-execute): what the oracle sees is unconfirmed.
    {"not-executed", [](const Evidence& e) { return !e.executed; },
     [](const Evidence& e, CheckOutcome& o) {
       o.notes.push_back("XLA's executables not run (--no-execute): unconfirmed");
       if (e.oracle == Verdict::kFails) {
         Decide(o, CheckStatus::kUnsupported, Finding::kOracleOnly,
                absl::StrCat("oracle-only (XLA's execution not run): ", e.oracle_message));
       } else {
         Decide(o, e.oracle == Verdict::kHolds ? CheckStatus::kHolds : CheckStatus::kUnsupported,
                Finding::kNone, e.oracle_message);
       }
     }},
    // XLA's two runs disagree and ours sides with the sharded one: a bug of XLA's single-device
    // compile, confirmed by XLA's runs disagreeing, but no claim against the partitioner.
    {"single-device-suspect",
     [](const Evidence& e) {
       return e.end_to_end->verdict == Verdict::kFails &&
              e.end_to_end->sharded_agrees_with_interpreter;
     },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(
           o, CheckStatus::kFails, Finding::kSingleDeviceSuspect,
           absl::StrCat(
               "XLA's sharded executable differs from its ", e.end_to_end->reference, ": ",
               e.end_to_end->detail, "; our interpreter computes what the sharded run does (",
               e.interpreter->verdict == Verdict::kFails ? e.interpreter->detail : "on that trial",
               "): XLA's single-device compile is the suspect, not the partitioner"));
     }},
    // XLA's own execution shows it: the only way to `fails` against XLA.
    {"confirmed-by-xla", [](const Evidence& e) { return e.end_to_end->verdict == Verdict::kFails; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o, CheckStatus::kFails, Finding::kConfirmedByXla,
              absl::StrCat("XLA's sharded executable differs from its ", e.end_to_end->reference,
                           ": ", e.end_to_end->detail));
       if (e.oracle == Verdict::kHolds) {
         o.notes.push_back(
             "our oracle finds the module after spmd-partitioning correct: the difference comes "
             "from a later pass or the runtime, not from the partitioner");
       }
     }},
    {"reads-input-padding", [](const Evidence& e) { return e.end_to_end->padding_dependent; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o, CheckStatus::kUnsupported, Finding::kReadsInputPadding,
              absl::StrCat("reads-input-padding: XLA's sharded executable differs from its ",
                           e.end_to_end->reference, " (", e.end_to_end->detail,
                           "): whether XLA may rely on the padding of uneven input shards is not "
                           "a contract spmdcheck knows, so this is no bug claim"));
     }},
    // What XLA received is not what was sent (our interpreter tells them apart): that explains
    // a disagreement with XLA on the global program, and no `holds` stands over it.
    {"round-trip-changes-meaning",
     [](const Evidence& e) {
       return e.round_trip != nullptr && e.round_trip->verdict == Verdict::kFails;
     },
     [](const Evidence& e, CheckOutcome& o) { DecideRoundTripChangesMeaning(*e.round_trip, o); }},
    // Our interpreter and XLA disagree on the global program: the oracle cannot be trusted.
    {"oracle-disagrees",
     [](const Evidence& e) { return e.interpreter->verdict == Verdict::kFails; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o, CheckStatus::kUnsupported, Finding::kOracleDisagrees,
              absl::StrCat("oracle-disagrees: our interpreter and XLA compute the global program "
                           "differently (",
                           e.interpreter->detail, "); the oracle's verdict (",
                           VerdictName(e.oracle), ") cannot be trusted until that is resolved"));
     }},
    // Only our oracle sees a difference: ours to investigate, never an XLA bug.
    {"oracle-only", [](const Evidence& e) { return e.oracle == Verdict::kFails; },
     [](const Evidence& e, CheckOutcome& o) {
       const ExecutionCheck& x = *e.end_to_end;
       Decide(o, CheckStatus::kUnsupported, Finding::kOracleOnly,
              x.verdict == Verdict::kHolds
                  ? absl::StrCat("oracle-only: our oracle finds ", e.oracle_message,
                                 ", but XLA's sharded executable agrees with its ", x.reference,
                                 " on ", x.trials_run,
                                 " trials (the oracle's failing inputs first); not an XLA bug "
                                 "until XLA's execution shows it (investigate ours)")
                  : absl::StrCat("oracle-only (XLA's execution inconclusive: ", x.detail,
                                 "): our oracle finds ", e.oracle_message));
     }},
    {"oracle-unknown", [](const Evidence& e) { return e.oracle == Verdict::kUnknown; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o, CheckStatus::kUnsupported, Finding::kNone, e.oracle_message);
       if (e.end_to_end->verdict == Verdict::kHolds) {
         o.notes.push_back(
             absl::StrCat("XLA's sharded executable agrees with its ", e.end_to_end->reference));
       }
     }},
    {"holds", [](const Evidence&) { return true; },
     [](const Evidence& e, CheckOutcome& o) {
       Decide(o, CheckStatus::kHolds, Finding::kNone, "");
       if (e.end_to_end->verdict != Verdict::kHolds) {
         o.notes.push_back(absl::StrCat("XLA end to end not checked: ", e.end_to_end->detail));
       }
     }},
};

// The judges the rules do not read, after them: round-trip (below), and those that do not
// compare values, which decide nothing of their own:
//  * lint: a proved cheaper chain is a cost (a wasteful finding), never a miscompile: a note;
//  * smt-proofs: a refuted collective is a proof against the partitioning, so the status never
//    holds over it (unknown, `proof-disagrees`, for the oracle's and the proof's owners to
//    settle); with a fail it is a note. Their unknowns change nothing.
void ApplyJudgesAfterTheRules(CheckOutcome& outcome) {
  // round-trip: the route to the partitioner changed the program's values, so what was judged
  // is not the user's program: no `holds` over it (unknown, to investigate); with any other
  // status, a note.
  if (const JudgeRecord* route = FindJudgeRecord(outcome, "round-trip");
      route != nullptr && route->verdict == Verdict::kFails &&
      outcome.finding != Finding::kRoundTripChangesMeaning) {
    if (outcome.status == CheckStatus::kHolds) {
      DecideRoundTripChangesMeaning(*route, outcome);
    } else {
      outcome.notes.push_back(absl::StrCat(
          "the module XLA received computes other values than the one sent: ", route->detail));
    }
  }
  if (const JudgeRecord* lint = FindJudgeRecord(outcome, "lint");
      lint != nullptr && lint->verdict == Verdict::kFails) {
    outcome.notes.push_back(absl::StrCat("lint (a cost, not a miscompile): ", lint->detail));
  }
  const JudgeRecord* proofs = FindJudgeRecord(outcome, "smt-proofs");
  if (proofs == nullptr || proofs->verdict != Verdict::kFails) return;
  if (outcome.status == CheckStatus::kHolds) {
    Decide(outcome, CheckStatus::kUnsupported, Finding::kNone,
           absl::StrCat("proof-disagrees: the oracle finds the partitioning correct, but Z3 "
                        "refutes a collective: ",
                        proofs->detail));
  } else {
    outcome.notes.push_back(absl::StrCat("smt-proofs: ", proofs->detail));
  }
}

}  // namespace

void ApplyVerdictPolicy(CheckOutcome& outcome) {
  Evidence evidence;
  if (const JudgeRecord* oracle = FindJudgeRecord(outcome, "oracle")) {
    evidence.oracle = oracle->verdict;
    evidence.oracle_message = oracle->detail;
  }
  evidence.round_trip = FindJudgeRecord(outcome, "round-trip");
  const JudgeRecord* executions = FindJudgeRecord(outcome, "xla-end-to-end");
  evidence.has_executables = executions != nullptr;
  evidence.executed = executions != nullptr && executions->ran;
  if (evidence.executed) {
    evidence.end_to_end = &*outcome.xla_end_to_end;
    evidence.interpreter = &*outcome.interpreter_vs_xla;
  }
  for (const PolicyRule& rule : kRules) {
    if (rule.applies(evidence)) {
      rule.decide(evidence, outcome);
      break;
    }
  }
  ApplyJudgesAfterTheRules(outcome);
}

}  // namespace spmdcheck::check
