// Engine: runs a module on N simulated devices in lock step. Every instruction is evaluated for
// all devices before the next one, so collectives see every participant's operand at once and
// the run is deterministic. With N = 1 it is a plain interpreter of the global program.
//
// Values are shared between devices when they are identical by construction (a device-
// independent op on shared operands is computed once), and freed after their last use.
#ifndef SPMDCHECK_ORACLE_ENGINE_H_
#define SPMDCHECK_ORACLE_ENGINE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "ir/literal.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {

using ValueRef = std::shared_ptr<const Literal>;

struct EngineOptions {
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  uint64_t seed = 0;
  // A while loop running longer than this is stopped with absl::ResourceExhausted (unknown).
  int64_t max_while_iterations = 1'000'000;
  // Past this time a running loop stops with absl::DeadlineExceeded (unknown): a reducer's
  // candidate or a generated case must not keep a time-bounded campaign waiting.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Any array in the module larger than this is refused before running (ResourceExhausted).
  int64_t max_elements_per_array = int64_t{1} << 28;
};

// Called after each instruction of the entry computation and of the computations it runs as
// control flow (while bodies and conditions, calls, conditional branches: on every trip, with
// the devices that run it), with the value of every device (devices[i] holds values[i]); not
// inside the computations an op applies (a reduce's or a sort's). Used to localise where two
// programs diverge.
using Observer =
    std::function<void(const HloInstruction& instruction, absl::Span<const int64_t> devices,
                       absl::Span<const ValueRef> values)>;

class Engine {
 public:
  Engine(const HloModule& module, EngineOptions options,
         const OpRegistry& registry = OpRegistry::Default());

  int64_t num_devices() const { return options_.num_partitions * options_.replica_count; }

  // Checks up front that every op is supported and every array fits the budget:
  // Unimplemented naming the first unsupported op, ResourceExhausted naming the largest array.
  absl::Status CheckRunnable() const;

  // Runs the entry computation on every device; args[d][i] is parameter i of device d (d is the
  // flattened id replica * P + partition). Returns one result per device.
  absl::StatusOr<std::vector<Literal>> Run(std::vector<std::vector<Literal>> args);
  // Same, with arguments and results shared instead of copied (no per-run copies of inputs).
  absl::StatusOr<std::vector<ValueRef>> RunShared(std::vector<std::vector<ValueRef>> args);

  void set_observer(Observer observer) { observer_ = std::move(observer); }

 private:
  struct Frame;

  absl::StatusOr<std::vector<ValueRef>> RunComputation(const HloComputation& computation,
                                                       absl::Span<const int64_t> devices,
                                                       std::vector<std::vector<ValueRef>> args,
                                                       int depth, bool allow_collectives);
  absl::StatusOr<Literal> CallScalar(const HloComputation& computation, int64_t device,
                                     absl::Span<const Literal* const> args);
  EvalEnv EnvFor(int64_t device);
  // One instruction of a running computation on every device of the frame: `out` (one value per
  // device, sized by the caller) receives the results. Control flow, collectives and per-device
  // ops each have their own step.
  absl::Status EvalInstruction(Frame& frame, const HloInstruction& instruction,
                               std::vector<ValueRef>* out);
  absl::Status EvalCall(Frame& frame, const HloInstruction& instruction,
                        std::vector<ValueRef>* out);
  absl::Status EvalWhile(Frame& frame, const HloInstruction& instruction,
                         std::vector<ValueRef>* out);
  absl::Status EvalConditional(Frame& frame, const HloInstruction& instruction,
                               std::vector<ValueRef>* out);
  absl::Status EvalCollective(Frame& frame, const HloInstruction& instruction,
                              CollectiveHandler collective, std::vector<ValueRef>* out);
  absl::Status EvalOp(Frame& frame, const HloInstruction& instruction, std::vector<ValueRef>* out);

  const HloModule& module_;
  EngineOptions options_;
  const OpRegistry& registry_;
  Observer observer_;
};

// True for opcodes whose value depends on which device runs them.
bool IsDeviceDependent(HloOpcode opcode);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_ENGINE_H_
