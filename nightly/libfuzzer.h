// libFuzzer as the nightly job runs it: the flags of each target (as scripts/fuzz-smoke), and
// what its output says — throughput and coverage from the status lines, and, for a crash input,
// its kind and a signature deduplicated by the top stack frames.
#ifndef SPMDCHECK_NIGHTLY_LIBFUZZER_H_
#define SPMDCHECK_NIGHTLY_LIBFUZZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace spmdcheck::nightly {

// The last values libFuzzer printed (status lines `#N ... cov: C ft: F corp: K ... exec/s: E`,
// fork mode's `#N: cov: C ft: F corp: K exec/s E ...`, and `stat::` lines); -1 when absent.
struct LibFuzzerStats {
  int64_t execs = -1;
  int64_t coverage = -1;
  int64_t features = -1;
  int64_t corpus = -1;
  double execs_per_second = -1;
};
LibFuzzerStats ParseLibFuzzerStats(absl::string_view log);

// What a crash log says: the kind (`heap-buffer-overflow`, `SEGV`, `leak`, `ubsan`,
// `invariant`, `timeout`, `oom`, `deadly-signal`, `crash`), the top frames of the first stack
// (sanitizer, libFuzzer and libc frames left out) and a short hash of kind and frames.
struct CrashInfo {
  std::string kind;
  std::vector<std::string> frames;  // Function names, innermost first, at most 3.
  std::string hash;                 // 8 hex digits; empty when there is no stack.
  std::string summary;              // The line that says what happened.
};
CrashInfo ParseCrash(absl::string_view log);
// `libfuzzer.<target>.<kind>[.<hash>]`.
std::string LibFuzzerSignature(const std::string& target, const CrashInfo& crash);
// The kind an artifact's file name says (crash-, leak-, timeout-, oom-, slow-unit-), or "".
std::string ArtifactKind(absl::string_view file_name);

// The flags of a target: the [libfuzzer] section of fuzz/targets/<target>.options (OSS-Fuzz's
// file) when there is one, else those of scripts/fuzz-smoke; and its dictionary.
std::vector<std::string> LibFuzzerTargetFlags(const std::string& target,
                                              const std::string& source_dir);
// The libFuzzer targets of the project (fuzz/CMakeLists.txt), in order.
const std::vector<std::string>& LibFuzzerTargets();

}  // namespace spmdcheck::nightly

#endif  // SPMDCHECK_NIGHTLY_LIBFUZZER_H_
