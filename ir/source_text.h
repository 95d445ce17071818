// SourceText: a file's text with line lookup, for messages of the form
// `FILE:LINE:COL: error: MESSAGE` followed by the offending line and a caret. The line index is
// built on the first lookup.
#ifndef SPMDCHECK_IR_SOURCE_TEXT_H_
#define SPMDCHECK_IR_SOURCE_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace spmdcheck {

class SourceText {
 public:
  SourceText(std::string path, absl::string_view text);

  const std::string& path() const { return path_; }
  absl::string_view text() const { return text_; }

  // 1-based line and column of byte `offset`.
  int64_t LineOf(size_t offset) const;
  int64_t ColumnOf(size_t offset) const;
  // Text of 1-based `line` without its newline.
  absl::string_view Line(int64_t line) const;

  // `PATH:LINE:COL: error: MESSAGE\n<line>\n<caret>` for a byte offset.
  std::string FormatError(size_t offset, absl::string_view message) const;
  // Same for a line/column pair.
  std::string FormatErrorAt(int64_t line, int64_t column, absl::string_view message) const;
  // `PATH:LINE:COL: error: MESSAGE` alone (the first line of FormatError), for messages that are
  // folded into another one.
  std::string FormatErrorLine(size_t offset, absl::string_view message) const;

 private:
  // `PATH:LINE:COL: error: MESSAGE`.
  std::string ErrorLine(int64_t line, int64_t column, absl::string_view message) const;
  // Builds line_starts_ on first use (a successful parse never needs it). Not thread-safe.
  const std::vector<size_t>& LineStarts() const;

  std::string path_;
  absl::string_view text_;
  mutable std::vector<size_t> line_starts_;  // Empty until LineStarts().
};

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_SOURCE_TEXT_H_
