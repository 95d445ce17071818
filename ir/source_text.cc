#include "ir/source_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace spmdcheck {

SourceText::SourceText(std::string path, absl::string_view text)
    : path_(path.empty() ? "<input>" : std::move(path)), text_(text) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts_.push_back(i + 1);
  }
}

int64_t SourceText::LineOf(size_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  return static_cast<int64_t>(it - line_starts_.begin());
}

int64_t SourceText::ColumnOf(size_t offset) const {
  const int64_t line = LineOf(offset);
  return static_cast<int64_t>(offset - line_starts_[line - 1]) + 1;
}

absl::string_view SourceText::Line(int64_t line) const {
  if (line < 1 || line > static_cast<int64_t>(line_starts_.size())) return {};
  const size_t start = line_starts_[line - 1];
  size_t end = line < static_cast<int64_t>(line_starts_.size()) ? line_starts_[line] - 1
                                                                 : text_.size();
  if (end > start && text_[end - 1] == '\r') --end;
  return text_.substr(start, end - start);
}

std::string SourceText::FormatError(size_t offset, absl::string_view message) const {
  offset = std::min(offset, text_.size());
  return FormatErrorAt(LineOf(offset), ColumnOf(offset), message);
}

std::string SourceText::FormatErrorAt(int64_t line, int64_t column,
                                      absl::string_view message) const {
  std::string out = absl::StrCat(path_, ":", line, ":", column, ": error: ", message);
  absl::string_view text = Line(line);
  if (line >= 1) {
    // Long lines (real dumps have 10k-character lines) are shown as a window around the column.
    constexpr int64_t kWindow = 160;
    int64_t start = 0;
    if (static_cast<int64_t>(text.size()) > kWindow) {
      start = std::max<int64_t>(0, column - 1 - kWindow / 2);
      text = text.substr(start, kWindow);
    }
    std::string caret(static_cast<size_t>(std::max<int64_t>(0, column - 1 - start)), ' ');
    for (size_t i = 0; i < caret.size() && i < text.size(); ++i) {
      if (text[i] == '\t') caret[i] = '\t';
    }
    absl::StrAppend(&out, "\n", text, "\n", caret, "^");
  }
  return out;
}

}  // namespace spmdcheck
