// Lexer: a cursor over HLO text that skips whitespace and comments (`/* */`, `//`) and reads
// the context-dependent tokens of the HLO grammar (names, integers, numbers, strings, and raw
// balanced attribute values). The parser decides which token it expects next.
#ifndef SPMDCHECK_IR_LEXER_H_
#define SPMDCHECK_IR_LEXER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spmdcheck {

class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}

  absl::string_view text() const { return text_; }
  size_t pos() const { return pos_; }
  void set_pos(size_t pos) { pos_ = pos; }

  // Skips whitespace and comments. An unterminated `/*` moves to the end and is remembered.
  void SkipSpace() {
    // Fast path: already at a significant character (anything above ' ' but '/').
    if (pos_ < text_.size()) {
      const char c = text_.data()[pos_];
      if (static_cast<unsigned char>(c) > ' ' && c != '/') return;
    }
    SkipSpaceSlow();
  }
  size_t unterminated_comment() const { return unterminated_comment_; }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  // Next significant character (after SkipSpace), or '\0' at the end.
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_.data()[pos_] : '\0';
  }
  // Character at pos()+offset without skipping anything, or '\0'.
  char PeekRaw(size_t offset = 0) const {
    return pos_ + offset < text_.size() ? text_.data()[pos_ + offset] : '\0';
  }
  bool TryConsume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  // Consumes `s` if the text continues with it (after SkipSpace).
  bool TryConsume(absl::string_view s);
  // Consumes `word` only when it is a whole identifier.
  bool TryConsumeKeyword(absl::string_view word);

  // A name: `%`? [A-Za-z_][A-Za-z0-9_.-]*. Returned without the `%`; empty if none.
  absl::string_view PeekName();
  absl::string_view ConsumeName();
  // An identifier without `%` (same charset).
  absl::string_view ConsumeIdentifier();
  // -?[0-9]+ into int64; nullopt when absent. Sets `overflow` when out of range.
  std::optional<int64_t> ConsumeInt(bool* overflow = nullptr);
  // A numeric literal token: ints, decimals with exponent, inf, -inf, nan, -nan, nan(0x..),
  // true, false. Empty when none.
  absl::string_view ConsumeNumberToken();
  // A "..." or '...' string with C escapes; returns the unescaped value. Error if unterminated.
  absl::StatusOr<std::string> ConsumeString();
  // The raw text of one attribute value: everything up to (not including) a ',' or a closer
  // at nesting depth 0, with (), [], {} balanced and strings respected. Fails on unbalanced
  // brackets, on nesting deeper than `max_depth`, or at the end of the text.
  absl::StatusOr<absl::string_view> ScanBalancedValue(int max_depth);

 private:
  void SkipSpaceSlow();

  // Read as text_.data()[i] where i is already bounds-checked: Debian's hardened
  // absl::string_view::operator[] is an out-of-line call, ~4% of a parse under ASan.
  absl::string_view text_;
  size_t pos_ = 0;
  size_t unterminated_comment_ = std::string::npos;
};

namespace lexer_internal {
// Bit 0: name start ([A-Za-z_]); bit 1: name character ([A-Za-z0-9_.-]).
inline constexpr struct CharClasses {
  unsigned char bits[256] = {};
  constexpr CharClasses() {
    for (int c = 'a'; c <= 'z'; ++c) bits[c] = 3;
    for (int c = 'A'; c <= 'Z'; ++c) bits[c] = 3;
    for (int c = '0'; c <= '9'; ++c) bits[c] = 2;
    bits[static_cast<unsigned char>('_')] = 3;
    bits[static_cast<unsigned char>('.')] = 2;
    bits[static_cast<unsigned char>('-')] = 2;
  }
} kCharClasses;
}  // namespace lexer_internal

inline bool IsNameStart(char c) {
  return (lexer_internal::kCharClasses.bits[static_cast<unsigned char>(c)] & 1) != 0;
}
inline bool IsNameChar(char c) {
  return (lexer_internal::kCharClasses.bits[static_cast<unsigned char>(c)] & 2) != 0;
}

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_LEXER_H_
