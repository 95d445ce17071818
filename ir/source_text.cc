#include "ir/source_text.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status.h"

namespace spmdcheck {

SourceText::SourceText(std::string path, absl::string_view text)
    : path_(path.empty() ? "<input>" : std::move(path)), text_(text) {}

const std::vector<size_t>& SourceText::LineStarts() const {
  if (line_starts_.empty()) {
    line_starts_.push_back(0);
    const char* const begin = text_.data();
    const char* const end = begin + text_.size();
    for (const char* p = begin; p < end;) {
      const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
      if (nl == nullptr) break;
      p = static_cast<const char*>(nl) + 1;
      line_starts_.push_back(static_cast<size_t>(p - begin));
    }
  }
  return line_starts_;
}

int64_t SourceText::LineOf(size_t offset) const {
  const std::vector<size_t>& starts = LineStarts();
  auto it = std::upper_bound(starts.begin(), starts.end(), offset);
  return static_cast<int64_t>(it - starts.begin());
}

int64_t SourceText::ColumnOf(size_t offset) const {
  const int64_t line = LineOf(offset);
  return static_cast<int64_t>(offset - line_starts_[line - 1]) + 1;
}

absl::string_view SourceText::Line(int64_t line) const {
  if (line == 1 && line_starts_.empty()) {
    // The first line without building the index (the parser reads it for `// num_devices=`).
    size_t end = text_.find('\n');
    if (end == absl::string_view::npos) end = text_.size();
    if (end > 0 && text_[end - 1] == '\r') --end;
    return text_.substr(0, end);
  }
  const std::vector<size_t>& starts = LineStarts();
  if (line < 1 || line > static_cast<int64_t>(starts.size())) return {};
  const size_t start = starts[line - 1];
  size_t end = line < static_cast<int64_t>(starts.size()) ? starts[line] - 1 : text_.size();
  if (end > start && text_[end - 1] == '\r') --end;
  return text_.substr(start, end - start);
}

std::string SourceText::FormatError(size_t offset, absl::string_view message) const {
  offset = std::min(offset, text_.size());
  return FormatErrorAt(LineOf(offset), ColumnOf(offset), message);
}

std::string SourceText::FormatErrorLine(size_t offset, absl::string_view message) const {
  offset = std::min(offset, text_.size());
  return ErrorLine(LineOf(offset), ColumnOf(offset), message);
}

std::string SourceText::ErrorLine(int64_t line, int64_t column, absl::string_view message) const {
  return absl::StrCat(base::SourceLocation(path_, line, column), ": error: ", message);
}

std::string SourceText::FormatErrorAt(int64_t line, int64_t column,
                                      absl::string_view message) const {
  std::string out = ErrorLine(line, column, message);
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
