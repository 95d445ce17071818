// Files a test reads or writes (fixtures under tests/data and corpus/, the shared reference
// material, files the test makes in a temporary directory), through base/file.h: a file that is
// missing or cannot be read or written fails the running test with base/file.h's error, which
// names the path and the reason, instead of reading as an empty string. Tests that treat a
// missing file as a reason to skip call base::ReadFile themselves.
#ifndef SPMDCHECK_TESTS_TEST_FILES_H_
#define SPMDCHECK_TESTS_TEST_FILES_H_

#include <source_location>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/file.h"
#include "gtest/gtest.h"

namespace spmdcheck::test_support {

// The whole file at `path`. When it cannot be read, the running test fails (non-fatally, at the
// caller's line) and the text is empty.
inline std::string ReadFileOrFail(const std::string& path,
                                  std::source_location caller = std::source_location::current()) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) {
    ADD_FAILURE_AT(caller.file_name(), caller.line()) << text.status();
    return "";
  }
  return *std::move(text);
}

// Creates or truncates the file at `path` (its directory must exist) and writes `text`. When it
// cannot be written, the running test fails (non-fatally, at the caller's line).
inline void WriteFileOrFail(const std::string& path, absl::string_view text,
                            std::source_location caller = std::source_location::current()) {
  const absl::Status written = base::WriteFile(path, text);
  if (!written.ok()) ADD_FAILURE_AT(caller.file_name(), caller.line()) << written;
}

}  // namespace spmdcheck::test_support

#endif  // SPMDCHECK_TESTS_TEST_FILES_H_
