// Every Z3 call of the proofs runs behind a guard: a z3::exception (an internal error, an
// allocation Z3 refuses under its memory limit, an integer too big for int64 in a model) or an
// allocation failure becomes `unknown` with the reason, never a crash. Z3's memory is capped
// process-wide (SetZ3MemoryLimitMb; default 8192 MB, or $SPMDCHECK_Z3_MEMORY_MB): past it Z3
// answers `unknown` ("out of memory") or throws, and both become `unknown`.
#ifndef SPMDCHECK_SMT_Z3_GUARD_H_
#define SPMDCHECK_SMT_Z3_GUARD_H_

#include <z3++.h>

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "smt/proof_result.h"

namespace spmdcheck::smt {

// Z3's process-wide memory cap in MB (0: none). Applied before the next guarded proof.
void SetZ3MemoryLimitMb(int64_t megabytes);
int64_t Z3MemoryLimitMb();

// Applies the memory cap once per change (called by the guards). Returns false (and the reason)
// when Z3's memory is already too close to the cap to create a context: Z3 cannot report a
// failed context creation (the C++ API dereferences it), so a proof is not started then.
bool ApplyZ3Limits(std::string* reason);

// The value of Z3's "timeout" parameter for a timeout of `timeout_ms`: at least
// kMinZ3TimeoutMs. Debian's Z3 (4.8.12) sometimes deadlocks in its timer when it fires within a
// millisecond or two of a check starting (`prove sharding ... --timeout-ms 1` hung about 1 run in
// 40; never in 200 runs at 10-20 ms), so shorter timeouts are raised to this.
inline constexpr int64_t kMinZ3TimeoutMs = 20;
inline unsigned Z3TimeoutParam(int64_t timeout_ms) {
  return static_cast<unsigned>(timeout_ms < kMinZ3TimeoutMs      ? kMinZ3TimeoutMs
                               : timeout_ms > (int64_t{1} << 30) ? (int64_t{1} << 30)
                                                                 : timeout_ms);
}

// `unknown: Z3 failed (<what>): <message>`.
std::string Z3FailureReason(absl::string_view what, absl::string_view message);

// The reason Z3 gave for `unknown`, worded for users: a timeout, the memory cap, a resource limit.
std::string Z3UnknownReason(absl::string_view reason_unknown);

// Runs `body` (returning a ProofResult); exceptions from Z3 or allocation become Unknown naming
// `what` (the proof that failed).
template <typename F>
ProofResult GuardZ3(absl::string_view what, F&& body) {
  std::string room;
  if (!ApplyZ3Limits(&room)) return ProofResult::Unknown(room);
  try {
    return std::forward<F>(body)();
  } catch (const z3::exception& e) {
    return ProofResult::Unknown(Z3FailureReason(what, e.msg()));
  } catch (const std::bad_alloc&) {
    return ProofResult::Unknown(Z3FailureReason(what, "out of memory"));
  }
}

// The same for bodies returning something else: nullopt and `reason` set on failure.
template <typename T, typename F>
std::optional<T> GuardZ3Value(absl::string_view what, std::string* reason, F&& body) {
  if (!ApplyZ3Limits(reason)) return std::nullopt;
  try {
    return std::optional<T>(std::forward<F>(body)());
  } catch (const z3::exception& e) {
    *reason = Z3FailureReason(what, e.msg());
  } catch (const std::bad_alloc&) {
    *reason = Z3FailureReason(what, "out of memory");
  }
  return std::nullopt;
}

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_Z3_GUARD_H_
