// Equivalence of a global program and a partitioned one (or of two partitioned programs) on N
// simulated devices: every device gets its own shard of random global inputs, both programs run,
// and every device's result must equal its shard of the global result (every replica checked).
#ifndef SPMDCHECK_ORACLE_EQUIVALENCE_H_
#define SPMDCHECK_ORACLE_EQUIVALENCE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/hlo_module.h"
#include "ir/verdict.h"
#include "oracle/sharded_values.h"

namespace spmdcheck::oracle {

struct EquivOptions {
  int64_t num_partitions = 0;  // 0: the partitioned module's num_partitions.
  int64_t replica_count = 0;   // 0: the partitioned module's replica_count.
  int64_t trials = 3;
  uint64_t seed = 1;
  bool float_inputs = false;
  // Feed every partition the same shard (device 0's). Exists to demonstrate why that check is
  // unsound; the report says so.
  bool same_input_everywhere = false;
  // The first module is known to be the global program (the check pipeline, pass bisection):
  // never guess "partitioned vs partitioned" from a signature that happens to match (a dim of
  // size 1 split over 2 devices keeps its local shape). A program whose parameters and result
  // are all manual is still compared device by device: it has no global view.
  bool first_is_global = false;
  int64_t max_elements_per_array = int64_t{1} << 28;
  // Loops still running at this time stop the check with an unknown verdict (EngineOptions).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // The partitioned module's source text, for `// holds=NAME [sharding={...}]` comments that name
  // the global value an instruction holds (optional; without them, values are matched by name).
  std::string partitioned_source;
  // Claims given by the caller: partitioned instruction name -> the global instruction whose
  // value it holds and the sharding it holds it under (e.g. read from XLA's metadata). They
  // come before comments and same-name matching. `global` may name one leaf of a tuple value by
  // its path, `sort.3{1}` (`{1}{0}` for nested tuples): the sharding is then that leaf's.
  struct HeldValue {
    std::string global;
    HloSharding sharding;
    // A value the instruction may hold (a full copy XLA made of a source op for a consumer):
    // checked like a claim, but only when it is right on every device does it count (the
    // search for the makers of a later wrong value stops there); wrong, it is no divergence.
    bool tentative = false;
  };
  std::map<std::string, HeldValue> claims;
  // Claims for the computations the entry calls (a while body's instructions, checked on every
  // trip): computation name -> instruction name -> held value.
  std::map<std::string, std::map<std::string, HeldValue>> called_claims;
};

// Where a partitioned program first leaves the value its `sharding=` annotation promises.
struct Divergence {
  std::string instruction;  // In the partitioned program.
  SourceLocation location;
  std::string holds;       // The global value it should hold (name in the global program).
  std::string holds_leaf;  // Of a tuple value, the leaf it should hold ("{1}"); else empty.
  std::string sharding;
  int64_t device = 0;
  ElementMismatch mismatch;
  int64_t devices_wrong = 0;
  // Where the wrong value was made: the instructions of the partitioned program that feed the
  // diverging one without a claim of their own (its operands, theirs, ..., stopping at claimed
  // values, which were checked before it, and at parameters), the diverging one last, in program
  // order; less those that also fed a claimed value found right before it (a partition offset
  // or constant shared by two handlers made a right value there). One of them computed the first
  // wrong value: the root cause (check/signature.h).
  struct Suspect {
    std::string name;
    HloOpcode opcode;
  };
  std::vector<Suspect> suspects;
};

struct EquivReport {
  Verdict verdict = Verdict::kUnknown;
  std::string mode;  // "global vs partitioned" or "partitioned vs partitioned"
  int64_t num_devices = 0;
  int64_t trials_run = 0;
  uint64_t seed = 0;
  int64_t failing_trial = -1;
  // The first wrong device and element of the result, and every wrong device.
  int64_t device = -1;
  ElementMismatch mismatch;
  std::vector<int64_t> wrong_devices;
  std::optional<Divergence> first_divergence;
  // The divergences after the first, in program order (at most kMaxLaterDivergences). Most are
  // the first one's wrong value flowing on; one that is not in its cone is a second wrong value
  // (XLA's execution may confirm only that one: check/signature.cc).
  static constexpr int kMaxLaterDivergences = 16;
  std::vector<Divergence> later_divergences;
  // Annotated instructions of the partitioned program checked against the global values they
  // hold (on the failing trial, or on trial 0 when the verdict is holds).
  int64_t annotations_checked = 0;
  std::vector<std::string> notes;  // Tolerance, unsound settings, what was not checked.
  std::string unknown_reason;
};

absl::StatusOr<EquivReport> CheckEquivalence(const HloModule& first, const HloModule& second,
                                             const EquivOptions& options);

// One divergence in a line: "NAME (line L) should hold G under S; wrong on ...".
std::string FormatDivergence(const Divergence& divergence);

// Human-readable report (what the CLI prints).
std::string FormatEquivReport(const EquivReport& report);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_EQUIVALENCE_H_
