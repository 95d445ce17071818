// Small helpers shared by the op-family files: row-major index iteration, recognising the
// common scalar reducers (so kernels can skip calling a computation per element), and messages.
#ifndef SPMDCHECK_ORACLE_KERNEL_UTIL_H_
#define SPMDCHECK_ORACLE_KERNEL_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ir/hlo_module.h"

namespace spmdcheck::oracle {

// Calls fn(index) for every multi-index of `dims` in row-major order (last dim fastest); `index`
// is a reused buffer. Nothing is called when a dim is 0; once for rank 0.
template <typename Fn>
void ForEachIndex(absl::Span<const int64_t> dims, Fn&& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    fn(absl::Span<const int64_t>(index));
    int64_t k = static_cast<int64_t>(dims.size()) - 1;
    for (; k >= 0; --k) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

// The scalar binary computations XLA programs use as reducers and combiners.
enum class ReducerKind { kOther, kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr, kXor };

// Recognises `ROOT r = op(p0, p1)` over two scalar parameters (in either operand order for the
// commutative ops; kOther when anything else, including a tuple reducer).
ReducerKind MatchBinaryReducer(const HloComputation& computation);

// "NAME (OPCODE): MESSAGE" for errors about an instruction.
inline absl::Status InstructionError(const HloInstruction& instruction, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(
      instruction.name(), " (", HloOpcodeString(instruction.opcode()), "): ", message));
}
inline absl::Status Unsupported(const HloInstruction& instruction, absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat(instruction.name(), ": ", what, " is not supported by the interpreter"));
}

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_KERNEL_UTIL_H_
