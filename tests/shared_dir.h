// Where the checkout (tests/data, corpus/) and the shared reference material (conformance
// modules, the seed case, the spec) are, for tests and benchmarks, found at run time from the
// binary's place in the build tree (ir/data_dir.h), so that nothing about the checkout is compiled
// in: $SPMDCHECK_SHARED_DIR when set, else <checkout>/../shared. Tests that need it skip with
// SPMDCHECK_SKIP_WITHOUT_SHARED when it is absent; benchmarks print MissingSharedMessage and skip
// their cases.
#ifndef SPMDCHECK_TESTS_SHARED_DIR_H_
#define SPMDCHECK_TESTS_SHARED_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "ir/data_dir.h"

namespace spmdcheck::test_support {

// The checkout the test binary was built from (build/share/spmdcheck, a link CMake makes).
inline std::string SourceDir() { return SpmdcheckDataDir(); }

// `relative` (e.g. "tests/data/x.hlo") under the checkout.
inline std::string SourcePath(std::string_view relative) {
  return (std::filesystem::path(SourceDir()) / std::filesystem::path(relative)).string();
}

// The shared dir: $SPMDCHECK_SHARED_DIR when set and not empty, else <checkout>/../shared.
inline std::string SharedDir() {
  const char* env = std::getenv("SPMDCHECK_SHARED_DIR");
  if (env != nullptr && *env != '\0') return env;
  return (std::filesystem::path(SourceDir()).parent_path() / "shared").string();
}

// `relative` (e.g. "cases/seed-scatter/pre.hlo") under the shared dir; the dir itself for "".
inline std::string SharedPath(std::string_view relative = "") {
  if (relative.empty()) return SharedDir();
  return (std::filesystem::path(SharedDir()) / std::filesystem::path(relative)).string();
}

// True when `relative` exists under the shared dir.
inline bool HaveShared(std::string_view relative = "") {
  std::error_code error;
  return std::filesystem::exists(SharedPath(relative), error);
}

// Why a test or benchmark needing `relative` does not run.
inline std::string MissingSharedMessage(std::string_view relative = "") {
  return "skipped: " + SharedPath(relative) +
         " is absent (the shared reference material: check it out beside the source root as "
         "../shared, or point SPMDCHECK_SHARED_DIR at it)";
}

}  // namespace spmdcheck::test_support

// Skips the running gtest test when `relative` is absent under the shared dir.
#define SPMDCHECK_SKIP_WITHOUT_SHARED(relative)                                  \
  do {                                                                           \
    if (!::spmdcheck::test_support::HaveShared(relative)) {                      \
      GTEST_SKIP() << ::spmdcheck::test_support::MissingSharedMessage(relative); \
    }                                                                            \
  } while (0)

#endif  // SPMDCHECK_TESTS_SHARED_DIR_H_
