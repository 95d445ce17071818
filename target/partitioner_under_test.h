// The partitioner under test: the seam every check, fuzz case and reduction goes through. One
// small interface (a global module and a partition count in; the partitioned module and what
// the partitioner says about itself out), with failures mapped onto verdicts. Implementations:
// `reference` (ours), `xla` (XLA's GSPMD path through the jaxlib worker), `shardy` (XLA's Shardy
// path), `cmd:COMMAND` (any executable; see docs/partitioners.md for the contract).
#ifndef SPMDCHECK_TARGET_PARTITIONER_UNDER_TEST_H_
#define SPMDCHECK_TARGET_PARTITIONER_UNDER_TEST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "analysis/partition_stats.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "ir/sharding.h"

namespace spmdcheck::target {

// How a partitioning attempt ended. Everything but kOk carries a message.
enum class PartitionStatus {
  kOk,
  kRejected,     // The partitioner refused the module (XLA's message, or the command's).
  kUnsupported,  // It cannot partition it (an op, a sharding form): verdict unknown.
  kUnavailable,  // The partitioner is not there (no jax, no command): verdict unknown.
  kCrash,        // It crashed, failed internally, or produced invalid HLO.
  kTimeout,      // It did not finish in time (killed).
};
const char* PartitionStatusName(PartitionStatus status);

// What the partitioner reports about itself.
struct PartitionerSelfReport {
  std::string name;     // "reference", "xla (GSPMD)", "shardy", "cmd:..."
  std::string version;  // "jax 0.10.2, jaxlib 0.10.2"; the build for ours.
  double seconds = 0;   // Time to partition (XLA: the whole compile).
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // Facts worth printing (e.g. what Shardy's import did).
};

// An executable XLA keeps for a partitioned module (only partitioners that can run programs).
class Executable {
 public:
  virtual ~Executable() = default;
  // arguments[i][d]: device d's local value of parameter i. Returns outputs[leaf][d].
  virtual absl::StatusOr<std::vector<std::vector<Literal>>> Run(
      const std::vector<std::vector<Literal>>& arguments) = 0;
  virtual int64_t num_devices() const = 0;
};

// A module as one of the partitioner's passes left it (XLA: a dump of `--xla_dump_hlo_pass_re`).
struct PassDump {
  std::string file;  // XLA's dump file name: module_0002.NAME.0012.PIPELINE.after_PASS....txt
  std::string text;
};

struct PartitionOutput {
  PartitionStatus status = PartitionStatus::kCrash;
  std::string message;  // Why, for every status but kOk (the stderr tail for crashes).
  std::unique_ptr<HloModule> partitioned;
  std::string partitioned_text;  // As the partitioner wrote it (for repros and dumps).
  // The global module the partitioner actually received, when it is not the one given (XLA:
  // after the HLO -> StableHLO -> HLO round trip). Null: the module given.
  std::unique_ptr<HloModule> received;
  std::string received_text;
  // The global module with every sharding chosen (after propagation), when reported.
  std::unique_ptr<HloModule> propagated;
  std::string final_text;  // After the partitioner's later passes (XLA's optimised module).
  // The shardings the partitioner settled on for the entry parameters and the result (XLA may
  // choose where the module leaves them open, or change them: Shardy pads for divisibility).
  // Empty: the global module's own annotations stand.
  std::vector<HloSharding> parameter_shardings;
  std::vector<HloSharding> output_shardings;  // One per result leaf.
  analysis::PartitionStats stats;             // The reference partitioner's handler counts.
  // What instructions of `partitioned` hold, by name: the global value and its sharding (the
  // reference partitioner's reshard steps), checked by the oracle one by one.
  std::map<std::string, std::pair<std::string, HloSharding>> claims;
  // The same for the other computations: computation name -> instruction name -> held value.
  std::map<std::string, std::map<std::string, std::pair<std::string, HloSharding>>> called_claims;
  // When asked for (XlaPartitioner::set_dump_passes): the module after every pass that changed
  // it, from the one after spmd-partitioning to the optimised one, in pass order.
  std::vector<PassDump> pass_dumps;
  PartitionerSelfReport report;
  std::shared_ptr<Executable> executable;  // Null when the partitioner cannot run programs.
};

// What a partitioner can do. Tools, campaigns and the nightly job ask these, never its name.
struct PartitionerCapabilities {
  // Runs in this process, deterministic and cheap (thousands of cases per second, no worker or
  // command to start): its self-report holds nothing but a timing.
  bool in_process = false;
  // The default time budget for reducing one of its findings (`fuzz --reduce-seconds`): longer
  // for a partitioner that compiles for seconds at every reduction step.
  double reduce_seconds = 10;
  // Takes an injected bug in its spec (`reference+bug=NAME`, `--inject-bug NAME`).
  bool injected_bugs = false;
  // Reports per-handler counts (PartitionOutput::stats) for `--stats`.
  bool handler_stats = false;
  // Plans its collectives with the planner the collective lint searches with
  // (partitioner/planner.h): the lint finds nothing cheaper in its output by construction.
  bool lint_planner = false;
  // Part of XLA: its findings are triaged against corpus/xla-findings/known.json and tried on
  // the other jaxlibs of the version matrix (check/version_matrix.h).
  bool xla_findings = false;
  // Needs at least this many devices to partition anything.
  int64_t min_devices = 1;
  // Imports only programs whose shardings share one mesh (Shardy): campaigns draw more of them.
  bool prefers_one_mesh = false;
  // Compiles sdy-level programs (as jax lowers them for Shardy) the way jax.jit does.
  bool compiles_sdy_programs = false;
};

// An optional capability: the partitioner can keep the module after each of its passes
// (PartitionOutput::pass_dumps), for pass bisection (check/pass_bisection.h).
class PassDumping {
 public:
  virtual ~PassDumping() = default;
  // Dump every pass's output on the following Partition calls (slower).
  virtual void set_dump_passes(bool on) = 0;
};

// An optional capability: XLA driven through jaxlib, whose findings a standalone jax script
// reproduces (check/repro_script.h).
class JaxReproducible {
 public:
  virtual ~JaxReproducible() = default;
  // Partitions with Shardy (else GSPMD).
  virtual bool shardy() const = 0;
  // The StableHLO text XLA compiles for `global` (Shardy: with its shardings imported as sdy
  // shardings).
  virtual absl::StatusOr<std::string> StableHloText(const HloModule& global,
                                                    int64_t num_partitions) = 0;
  // "jax 0.12.0.1, jaxlib 0.12.0.1" once its worker started; empty before.
  virtual std::string versions() const = 0;
};

class PartitionerUnderTest {
 public:
  virtual ~PartitionerUnderTest() = default;
  // The partitioner's name (`reference`, `xla`, `shardy`, `cmd:...`): what reports, summaries,
  // signatures and the known-findings triage key it by. An injected bug is not part of it.
  virtual std::string spec() const = 0;
  // The whole spec it was made from, injected bug included (`reference+bug=NAME`): what makes
  // the same partitioner again (MakePartitioner) and what `reproduce:` lines print
  // (ReproducePartitionerFlags).
  virtual std::string full_spec() const { return spec(); }
  // Default: nothing beyond the interface (as for `cmd:`).
  virtual PartitionerCapabilities capabilities() const { return {}; }
  // Null when it cannot dump its passes.
  virtual PassDumping* pass_dumping() { return nullptr; }
  // Null when no jax script can reproduce its findings.
  virtual JaxReproducible* jax_reproducible() { return nullptr; }
  // Errors only for misuse (a module without an entry); every way the partitioner itself can
  // fail is a PartitionOutput status.
  virtual absl::StatusOr<PartitionOutput> Partition(const HloModule& global,
                                                    int64_t num_partitions) = 0;
  // Runs `global` unpartitioned on one device of the same backend, for a differential check of
  // the partitioned executable (XLA's single-device compile). Unimplemented when not available.
  virtual absl::StatusOr<std::vector<Literal>> RunGlobal(const HloModule& global,
                                                         const std::vector<Literal>& arguments);
  // What the last RunGlobal ran, for reports: "single-device run", or the reference run a
  // partitioner uses for programs with no one-device meaning (manual computations).
  virtual std::string GlobalRunName() const { return "single-device run"; }
  // Whether the partitioner compiles `global.jax_source()` (the StableHLO jax lowered) rather
  // than the module itself: then the check must not change the module (no shape shrinking),
  // since what the partitioner receives would no longer be what is judged.
  virtual bool UsesJaxSource(const HloModule& /*global*/) const { return false; }
  // Reads a program written at jax's level (StableHLO with the sdy dialect or mhlo.sharding, as
  // jax lowers it) as a module this partitioner can compile the way jax.jit does
  // (UsesJaxSource). Unimplemented for partitioners that cannot read StableHLO.
  virtual absl::StatusOr<std::unique_ptr<HloModule>> ImportJaxProgram(const std::string& text,
                                                                      const std::string& name) {
    (void)text;
    return absl::UnimplementedError(absl::StrCat(spec(), " does not read StableHLO (", name, ")"));
  }
  // Whether output our verifier rejects is the partitioner's fault (a crash). XLA says no: its
  // dumps are XLA's own text, so a rejection more likely is a gap of our parser or verifier.
  virtual bool InvalidOutputIsItsFault() const { return true; }
  // Seconds its own runtime has spent compiling and executing so far, as it measures them (XLA:
  // jaxlib's compiles and executions timed inside the worker, without the protocol around
  // them); 0 for partitioners that do not report it. Campaigns take differences of it to tell
  // XLA's time from ours.
  virtual double RuntimeSeconds() const { return 0; }
};

struct TargetOptions {
  // XLA: the python of a virtual environment with jax (default: found as documented in
  // docs/partitioners.md), the worker script, timeouts, recycling.
  std::string python;  // Empty: DefaultXlaPython() (SPMDCHECK_XLA_VENV, SPMDCHECK_XLA_PYTHON).
  std::string worker_script;
  double compile_timeout_seconds = 120;
  int64_t recycle_after = 1000;
  double command_timeout_seconds = 120;  // cmd:
};

// The spec the CLI uses when none is given: spmdcheck's own partitioner.
inline constexpr char kDefaultPartitionerSpec[] = "reference";
// Whether `spec` (PartitionerUnderTest::spec()) is spmdcheck's own partitioner: its signatures
// carry no partitioner prefix and name the op its step claims localise (check/signature.h).
bool IsReferenceSpec(absl::string_view spec);

// One spec taken apart: `reference+bug=NAME` is {"reference", "NAME"}; `cmd:` specs are taken
// whole (their command may hold anything).
struct PartitionerSpec {
  std::string name;        // `reference`, `xla`, `gspmd`, `shardy`, `cmd:COMMAND`.
  std::string inject_bug;  // Empty: none.
  std::string ToString() const;
};
// InvalidArgument for an unknown partitioner, a `+` suffix other than `bug=NAME`, an unknown
// bug, or a bug for a partitioner without injected bugs.
absl::StatusOr<PartitionerSpec> ParsePartitionerSpec(absl::string_view spec);
// What a spec's partitioner can do, without making it (campaigns choose their generators by it).
absl::StatusOr<PartitionerCapabilities> CapabilitiesOfSpec(absl::string_view spec);
// Whether any spec of a list (`xla,shardy`) has a capability; false for a list that does not
// parse.
bool AnySpecCan(absl::string_view specs, bool PartitionerCapabilities::*capability);
// The largest reduce_seconds of a spec list's partitioners (10 for a list that does not parse).
double ReduceSecondsOf(absl::string_view specs);
// `--inject-bug NAME`, the shorthand: the spec list with `+bug=NAME` on each of its specs.
// InvalidArgument when one of them has no injected bugs ("... not of xla") or another bug.
absl::StatusOr<std::string> WithInjectedBug(absl::string_view specs, absl::string_view bug);
// A bug a partitioner with injected bugs (PartitionerCapabilities::injected_bugs) can be given,
// `+bug=NAME`: what `fuzz --list-bugs` prints.
struct InjectableBug {
  std::string name;
  std::string description;  // What it breaks.
};
// Every injectable bug, in a stable order.
std::vector<InjectableBug> InjectableBugs();
bool IsInjectableBug(absl::string_view name);
// The injected bug of a spec list (the first, `reference+bug=NAME`); empty: none.
std::string InjectedBugOf(absl::string_view specs);
// The spec list without its injected bugs (`reference+bug=NAME,xla` -> `reference,xla`).
std::string WithoutInjectedBugs(absl::string_view specs);
// The flags that make a command line use `full_spec`: none for the default spec, `--inject-bug
// NAME` for the default spec with a bug (the shorthand), else `--partitioner SPEC` (each with a
// leading space; SPEC passed through `quote` when given).
std::string ReproducePartitionerFlags(absl::string_view full_spec,
                                      std::string (*quote)(const std::string&) = nullptr);
// How an issue title names the partitioner of a spec: "GSPMD", "Shardy", "spmdcheck's
// reference partitioner", else the spec.
std::string PartitionerTitle(absl::string_view spec);
// Our own partitioner (no injected bug), e.g. as a baseline for XLA's collective cost.
std::unique_ptr<PartitionerUnderTest> MakeOurPartitioner();

// One partitioner from its spec. InvalidArgument for an unknown spec; an XLA partitioner whose
// worker cannot start is still made (its outputs are kUnavailable with the reason).
absl::StatusOr<std::unique_ptr<PartitionerUnderTest>> MakePartitioner(absl::string_view spec,
                                                                      const TargetOptions& options);
// Several at once (`xla,shardy`); `xla` and `shardy` share one XLA worker.
absl::StatusOr<std::vector<std::unique_ptr<PartitionerUnderTest>>> MakePartitioners(
    absl::string_view specs, const TargetOptions& options);
// `xla,shardy` -> both, in order; a `cmd:` spec takes the rest of the string (commas included).
absl::StatusOr<std::vector<std::string>> SplitPartitionerSpecs(absl::string_view specs);
// Whether `spec` is one of XLA's partitioners (`xla`, `gspmd`, `shardy`).
bool IsXlaSpec(absl::string_view spec);

}  // namespace spmdcheck::target

#endif  // SPMDCHECK_TARGET_PARTITIONER_UNDER_TEST_H_
