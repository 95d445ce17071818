// Shared helpers for the libFuzzer targets (header only, not part of spmdcheck_fuzz).
#ifndef SPMDCHECK_FUZZ_TARGETS_FUZZ_COMMON_H_
#define SPMDCHECK_FUZZ_TARGETS_FUZZ_COMMON_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace spmdcheck::fuzz_targets {

// Inputs above this size are ignored to keep executions fast.
inline constexpr size_t kMaxFuzzInputBytes = size_t{64} << 10;

// A broken invariant: print what differed and abort so libFuzzer records the input.
[[noreturn]] inline void FuzzFail(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "FUZZ INVARIANT BROKEN: %s\n--- first ---\n%s\n--- second ---\n%s\n", what,
               a.c_str(), b.c_str());
  std::abort();
}

}  // namespace spmdcheck::fuzz_targets

#endif  // SPMDCHECK_FUZZ_TARGETS_FUZZ_COMMON_H_
