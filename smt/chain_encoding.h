// The data movement of a chain of instructions of a partitioned module as a function from a
// (device, local index) to what that device holds there: a global input element, a sum of such
// (reductions), or a constant. One evaluator, written once over a domain:
//  - Z3Domain: device and index are Z3 integers, inputs are uninterpreted functions from the
//    global index to a real, so a formula over it covers every device, index and input value;
//  - ConcreteDomain: device and index are numbers, and the value is the exact linear combination
//    of input elements it holds (used to print counterexamples, to double-check them, and as the
//    brute-force baseline).
// Collective groups and iota tile assignments are encoded with constant div/mod (never
// expanded); explicit groups, pairs and tables as lookups.
#ifndef SPMDCHECK_SMT_CHAIN_ENCODING_H_
#define SPMDCHECK_SMT_CHAIN_ENCODING_H_

#include <z3++.h>

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "ir/hlo_module.h"
#include "smt/chain_model.h"

namespace spmdcheck::smt {

// An element of a chain input: input key index and global index.
struct SourceElement {
  int64_t input = 0;
  std::vector<int64_t> index;
  bool operator==(const SourceElement&) const = default;
  // Member by member, as a defaulted <=> would; written out because clang-tidy 14 takes the 0
  // that a defaulted <=> compares each member's ordering with for a null pointer
  // (modernize-use-nullptr, llvm-project#53961).
  std::strong_ordering operator<=>(const SourceElement& other) const {
    if (input != other.input) return input <=> other.input;
    return index <=> other.index;
  }
};

// What a device holds at one position: sum of coefficient * element, plus a constant.
struct SourceSum {
  std::map<SourceElement, double> terms;
  double constant = 0;
  bool operator==(const SourceSum&) const = default;
};

// `param[0,1,0]`, `0`, `param[0] + param[1]`, `2*x[3] + 1`.
std::string SourceSumText(const SourceSum& sum, absl::Span<const std::string> input_names);

// Numbers, and values as exact source sums.
class ConcreteDomain {
 public:
  using Int = int64_t;
  using Bool = bool;
  using Data = SourceSum;
  static constexpr bool kSymbolic = false;

  // Input keys are shared between the evaluators of two modules.
  int64_t InputId(const std::string& key);
  const std::vector<std::string>& input_keys() const { return keys_; }

  Int IntVal(int64_t v) const { return v; }
  Data DataVal(double v) const {
    Data d;
    d.constant = v;
    return d;
  }
  static Int IteInt(Bool c, Int a, Int b) { return c ? a : b; }
  static Int Div(Int a, int64_t b) {
    Int q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  }
  static Int Mod(Int a, int64_t b) { return a - Div(a, b) * b; }
  static Int Lookup(Int key, absl::Span<const int64_t> table) {
    if (table.empty()) return -1;
    return key >= 0 && key < static_cast<Int>(table.size()) - 1 ? table[key] : table.back();
  }
  Data LookupData(Int key, absl::Span<const double> table) const {
    if (table.empty()) return DataVal(0);
    return DataVal(key >= 0 && key < static_cast<Int>(table.size()) - 1 ? table[key]
                                                                        : table.back());
  }
  Data Input(int64_t input, const std::vector<Int>& global_index) const {
    Data d;
    d.terms[SourceElement{input, global_index}] = 1;
    return d;
  }
  static Data Add(Data a, const Data& b);
  static Data Scale(Data a, double factor);
  static Data Negate(const Data& a) { return Scale(a, -1); }
  // Product where at most one side has terms.
  static Data Multiply(const Data& a, const Data& b);
  Data FromInt(Int v) const { return DataVal(static_cast<double>(v)); }
  static Bool Truth(Int v) { return v != 0; }

  template <typename F, typename G>
  static auto Choose(Bool c, F&& on_true, G&& on_false) {
    return c ? on_true() : on_false();
  }

 private:
  std::vector<std::string> keys_;
};

// Z3 terms over one context: integers for devices and indices, reals for values.
class Z3Domain {
 public:
  using Int = z3::expr;
  using Bool = z3::expr;
  using Data = z3::expr;
  static constexpr bool kSymbolic = true;

  explicit Z3Domain(z3::context& ctx) : ctx_(ctx) {}
  z3::context& ctx() { return ctx_; }

  // One uninterpreted function per input key (global index -> real).
  int64_t InputId(const std::string& key, int64_t rank);
  const std::vector<std::string>& input_keys() const { return keys_; }

  Int IntVal(int64_t v) const { return ctx_.int_val(v); }
  Data DataVal(double v) const;
  Int Div(const Int& a, int64_t b) const;
  Int Mod(const Int& a, int64_t b) const;
  Int Lookup(const Int& key, absl::Span<const int64_t> table) const;
  Data LookupData(const Int& key, absl::Span<const double> table) const;
  Data Input(int64_t input, const std::vector<Int>& global_index) const;
  static Data Add(const Data& a, const Data& b) { return a + b; }
  Data Scale(const Data& a, double factor) const { return a * DataVal(factor); }
  static Data Negate(const Data& a) { return -a; }
  static Data Multiply(const Data& a, const Data& b) { return a * b; }
  static Data FromInt(const Int& v) { return z3::to_real(v); }
  Bool Truth(const Int& v) const { return v != ctx_.int_val(0); }

  template <typename F, typename G>
  static z3::expr Choose(const Bool& c, F&& on_true, G&& on_false) {
    const z3::expr s = c.simplify();
    if (s.is_true()) return on_true();
    if (s.is_false()) return on_false();
    return z3::ite(c, on_true(), on_false());
  }
  static Int IteInt(const Bool& c, const Int& a, const Int& b) {
    const z3::expr s = c.simplify();
    if (s.is_true()) return a;
    if (s.is_false()) return b;
    return z3::ite(c, a, b);
  }
  // The value of `e` when it simplifies to an integer numeral.
  static std::optional<int64_t> Numeral(const z3::expr& e);

 private:
  z3::context& ctx_;
  std::vector<std::string> keys_;
  std::vector<z3::func_decl> functions_;
};

// Evaluates a ChainModel in a domain. `Data` of an instruction at (device, local index).
template <typename D>
class ChainEvaluator {
 public:
  using Int = typename D::Int;
  using Bool = typename D::Bool;
  using Data = typename D::Data;

  // `input_ids[i]` is the domain's id for model input i.
  ChainEvaluator(const ChainModel& model, D& domain, std::vector<int64_t> input_ids)
      : model_(model), dom_(domain), input_ids_(std::move(input_ids)) {}

  Data EvalData(const HloInstruction* h, const Int& device, const std::vector<Int>& index);

  // Limits the number of instruction evaluations (each all-reduce member, all-gather position
  // case and select branch counts); past it, evaluation stops early and exhausted() is true, and
  // what was built must not be used. Negative: no limit.
  void set_budget(int64_t evaluations) {
    budget_ = evaluations;
    exhausted_ = false;
  }
  bool exhausted() const { return exhausted_; }
  Int EvalInt(const HloInstruction* h, const Int& device, const std::vector<Int>& index);

  // Tile index along the data dims of `device` under a layout (replicated: empty).
  std::vector<Int> TileIndex(const ShardingLayout& layout, const Int& device);
  // Global index of local `index` on `device` under a layout.
  std::vector<Int> GlobalIndex(const ShardingLayout& layout, absl::Span<const int64_t> local_dims,
                               const Int& device, const std::vector<Int>& index);
  // Applies the global steps backwards: index in the last step's result -> input global index.
  std::vector<Int> InputIndexOf(absl::Span<const GlobalStep> steps, std::vector<Int> index);

 private:
  template <bool kData>
  using Value = std::conditional_t<kData, Data, Int>;
  template <bool kData>
  Value<kData> Eval(const HloInstruction* h, const Int& device, const std::vector<Int>& index);
  // Eval by op family: ops that read one operand at a mapped index (copy, convert, reshape,
  // transpose, broadcast, slice, dynamic-slice); ops that choose an operand by position (pad,
  // concatenate, dynamic-update-slice, select); arithmetic, constants and iota; collectives
  // (data only); integer-only ops (index values).
  template <bool kData>
  Value<kData> EvalIndexMapping(const HloInstruction* h, const Int& device,
                                const std::vector<Int>& index);
  template <bool kData>
  Value<kData> EvalPiecewise(const HloInstruction* h, const Int& device,
                             const std::vector<Int>& index);
  template <bool kData>
  Value<kData> EvalArithmetic(const HloInstruction* h, const InstructionFacts& facts,
                              const Int& device, const std::vector<Int>& index);
  Data EvalCollective(const HloInstruction* h, const InstructionFacts& facts, const Int& device,
                      const std::vector<Int>& index);
  Int EvalIntegerOp(const HloInstruction* h, const Int& device, const std::vector<Int>& index);
  template <bool kData>
  Value<kData> Zero() {
    if constexpr (kData) {
      return dom_.DataVal(0);
    } else {
      return dom_.IntVal(0);
    }
  }
  template <bool kData, typename F, typename G>
  Value<kData> Choose(const Bool& c, F&& on_true, G&& on_false) {
    if constexpr (kData) {
      return D::Choose(c, std::forward<F>(on_true), std::forward<G>(on_false));
    } else {
      if constexpr (D::kSymbolic) {
        return D::Choose(c, std::forward<F>(on_true), std::forward<G>(on_false));
      } else {
        return c ? on_true() : on_false();
      }
    }
  }
  Int Linear(const std::vector<Int>& index, absl::Span<const int64_t> dims);
  std::vector<Int> Digits(const Int& linear, absl::Span<const int64_t> dims);
  // The operand index of a row-major reshape from `operand_dims` to `result_dims`.
  std::vector<Int> ReshapeIndex(const std::vector<Int>& index,
                                absl::Span<const int64_t> result_dims,
                                absl::Span<const int64_t> operand_dims);
  Int IotaLinearOf(const IotaTileAssignment& iota, const Int& device);
  Int IotaDeviceAt(const IotaTileAssignment& iota, const Int& linear);
  Int GroupOf(const DeviceGroups& g, const Int& device);
  Int PositionOf(const DeviceGroups& g, const Int& device);
  Int Member(const DeviceGroups& g, const Int& group, const Int& position);
  Int Clamp(const Int& v, int64_t lo, int64_t hi);
  // The operand at the group member in `position` of `group`.
  Data FromMember(const DeviceGroups& g, const Int& group, const Int& position,
                  const HloInstruction* operand, const std::vector<Int>& at);
  Int BoolToInt(const Bool& b) { return D::IteInt(b, dom_.IntVal(1), dom_.IntVal(0)); }

  const ChainModel& model_;
  D& dom_;
  std::vector<int64_t> input_ids_;
  int64_t budget_ = -1;
  bool exhausted_ = false;
};

extern template class ChainEvaluator<ConcreteDomain>;
extern template class ChainEvaluator<Z3Domain>;

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_CHAIN_ENCODING_H_
