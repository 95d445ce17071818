// Where the shared reference material (conformance modules, the seed case, the spec) is, for
// tests and benchmarks: $SPMDCHECK_SHARED_DIR when set, else <source root>/../shared (compiled
// in as SPMDCHECK_DEFAULT_SHARED_DIR by the `spmdcheck_shared_dir` CMake target). Tests that need
// it skip with SPMDCHECK_SKIP_WITHOUT_SHARED when it is absent; benchmarks print
// MissingSharedMessage and skip their cases.
#ifndef SPMDCHECK_TESTS_SHARED_DIR_H_
#define SPMDCHECK_TESTS_SHARED_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#ifndef SPMDCHECK_DEFAULT_SHARED_DIR
#error "link the spmdcheck_shared_dir target (it defines SPMDCHECK_DEFAULT_SHARED_DIR)"
#endif

namespace spmdcheck::test_support {

// The shared dir: $SPMDCHECK_SHARED_DIR when set and not empty, else <source root>/../shared.
inline std::string SharedDir() {
  const char* env = std::getenv("SPMDCHECK_SHARED_DIR");
  if (env != nullptr && *env != '\0') return env;
  return SPMDCHECK_DEFAULT_SHARED_DIR;
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
