#include "ir/lexer.h"

#include <cctype>
#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace spmdcheck {

void Lexer::SkipSpaceSlow() {
  while (pos_ < text_.size()) {
    const char c = text_.data()[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '/' && PeekRaw(1) == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      if (end == absl::string_view::npos) {
        unterminated_comment_ = pos_;
        pos_ = text_.size();
      } else {
        pos_ = end + 2;
      }
    } else if (c == '/' && PeekRaw(1) == '/') {
      const size_t end = text_.find('\n', pos_);
      pos_ = end == absl::string_view::npos ? text_.size() : end + 1;
    } else {
      break;
    }
  }
}

bool Lexer::TryConsume(absl::string_view s) {
  SkipSpace();
  if (!absl::StartsWith(text_.substr(pos_), s)) return false;
  pos_ += s.size();
  return true;
}

bool Lexer::TryConsumeKeyword(absl::string_view word) {
  SkipSpace();
  if (!absl::StartsWith(text_.substr(pos_), word)) return false;
  if (IsNameChar(PeekRaw(word.size()))) return false;
  pos_ += word.size();
  return true;
}

absl::string_view Lexer::PeekName() {
  SkipSpace();
  size_t p = pos_;
  if (p < text_.size() && text_.data()[p] == '%') ++p;
  if (p >= text_.size() || !IsNameStart(text_.data()[p])) return {};
  size_t start = p;
  while (p < text_.size() && IsNameChar(text_.data()[p])) ++p;
  return text_.substr(start, p - start);
}

absl::string_view Lexer::ConsumeName() {
  absl::string_view name = PeekName();
  if (name.empty()) return name;
  pos_ = static_cast<size_t>(name.data() - text_.data()) + name.size();
  return name;
}

absl::string_view Lexer::ConsumeIdentifier() {
  SkipSpace();
  if (pos_ >= text_.size() || !IsNameStart(text_.data()[pos_])) return {};
  const size_t start = pos_;
  while (pos_ < text_.size() && IsNameChar(text_.data()[pos_])) ++pos_;
  return text_.substr(start, pos_ - start);
}

std::optional<int64_t> Lexer::ConsumeInt(bool* overflow) {
  SkipSpace();
  size_t p = pos_;
  if (p < text_.size() && text_.data()[p] == '-') ++p;
  const size_t digits = p;
  while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_.data()[p]))) ++p;
  if (p == digits) return std::nullopt;
  int64_t value = 0;
  auto result = std::from_chars(text_.data() + pos_, text_.data() + p, value);
  if (overflow != nullptr) *overflow = result.ec == std::errc::result_out_of_range;
  pos_ = p;
  return value;
}

absl::string_view Lexer::ConsumeNumberToken() {
  SkipSpace();
  const size_t start = pos_;
  size_t p = pos_;
  if (p < text_.size() && (text_.data()[p] == '-' || text_.data()[p] == '+')) ++p;
  absl::string_view rest = text_.substr(p);
  auto word = [&](absl::string_view w) {
    return absl::StartsWith(rest, w) &&
           !IsNameChar(p + w.size() < text_.size() ? text_.data()[p + w.size()] : '\0');
  };
  if (word("inf") || word("true") || word("false")) {
    p += word("inf") ? 3 : (word("true") ? 4 : 5);
  } else if (absl::StartsWith(rest, "nan")) {
    p += 3;
    if (p < text_.size() && text_.data()[p] == '(') {
      const size_t close = text_.find(')', p);
      if (close == absl::string_view::npos) return {};
      p = close + 1;
    }
  } else {
    const size_t digits = p;
    while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_.data()[p]))) ++p;
    if (p < text_.size() && text_.data()[p] == '.') {
      ++p;
      while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_.data()[p]))) ++p;
    }
    if (p == digits) return {};
    if (p < text_.size() && (text_.data()[p] == 'e' || text_.data()[p] == 'E')) {
      size_t q = p + 1;
      if (q < text_.size() && (text_.data()[q] == '-' || text_.data()[q] == '+')) ++q;
      const size_t exp_digits = q;
      while (q < text_.size() && std::isdigit(static_cast<unsigned char>(text_.data()[q]))) ++q;
      if (q > exp_digits) p = q;
    }
  }
  pos_ = p;
  return text_.substr(start, p - start);
}

absl::StatusOr<std::string> Lexer::ConsumeString() {
  SkipSpace();
  if (pos_ >= text_.size() || (text_.data()[pos_] != '"' && text_.data()[pos_] != '\'')) {
    return absl::InvalidArgumentError("expected a string");
  }
  const char quote = text_.data()[pos_];
  size_t p = pos_ + 1;
  std::string value;
  while (p < text_.size() && text_.data()[p] != quote) {
    char c = text_.data()[p++];
    if (c == '\\' && p < text_.size()) {
      const char e = text_.data()[p++];
      switch (e) {
        case 'n':
          c = '\n';
          break;
        case 't':
          c = '\t';
          break;
        default:
          c = e;
          break;
      }
    }
    value.push_back(c);
  }
  if (p >= text_.size()) return absl::InvalidArgumentError("unterminated string");
  pos_ = p + 1;
  return value;
}

absl::StatusOr<absl::string_view> Lexer::ScanBalancedValue(int max_depth) {
  SkipSpace();
  const size_t start = pos_;
  std::string stack;
  size_t p = pos_;
  while (p < text_.size()) {
    const char c = text_.data()[p];
    if (c == '"' || c == '\'') {
      size_t q = p + 1;
      while (q < text_.size() && text_.data()[q] != c) q += text_.data()[q] == '\\' ? 2 : 1;
      if (q >= text_.size()) {
        pos_ = p;
        return absl::InvalidArgumentError("unterminated string");
      }
      p = q + 1;
      continue;
    }
    if (c == '/' && p + 1 < text_.size() && text_.data()[p + 1] == '*' && stack.empty()) break;
    if (c == '(' || c == '[' || c == '{') {
      stack.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
      if (static_cast<int>(stack.size()) > max_depth) {
        pos_ = p;
        return absl::InvalidArgumentError(
            absl::StrCat("nesting deeper than ", max_depth, " levels"));
      }
    } else if (c == ')' || c == ']' || c == '}') {
      if (stack.empty()) break;
      if (stack.back() != c) {
        pos_ = p;
        return absl::InvalidArgumentError(absl::StrCat("expected '", std::string(1, stack.back()),
                                                       "' but found '", std::string(1, c), "'"));
      }
      stack.pop_back();
    } else if ((c == ',' || c == '\n') && stack.empty()) {
      break;
    }
    ++p;
  }
  if (!stack.empty()) {
    pos_ = p;
    return absl::InvalidArgumentError(
        absl::StrCat("unbalanced brackets: missing '", std::string(1, stack.back()), "'"));
  }
  size_t end = p;
  while (end > start && (text_.data()[end - 1] == ' ' || text_.data()[end - 1] == '\t' ||
                         text_.data()[end - 1] == '\r')) {
    --end;
  }
  pos_ = p;
  return text_.substr(start, end - start);
}

}  // namespace spmdcheck
