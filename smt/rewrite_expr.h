// RwExpr: the small term language the rewrite catalog states its rules in. A
// term is an integer (an index, a device coordinate, a size) or an element
// value: an application of a global input X_k(device coordinates..., local
// index...) — an uninterpreted function, so a proof covers every input — or
// sums, scalings and selections of such. Terms are shared DAGs built with
// constant folding; they lower to Z3 (LowerToZ3) or evaluate concretely
// (EvalInt for integers, EvalElem for elements, giving a linear form over input
// applications, which is the exact meaning of an element for every input at
// once).
#ifndef SPMDCHECK_SMT_REWRITE_EXPR_H_
#define SPMDCHECK_SMT_REWRITE_EXPR_H_

#include <z3++.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace spmdcheck::smt::rw {

enum class Op {
  kConst,  // Integer constant (also element 0 / boolean 0/1).
  kVar,    // Named integer variable (device coordinate, index, symbolic size).
  kAdd,
  kSub,
  kMul,
  kDiv,  // Euclidean (as Z3): divisor > 0 assumed.
  kMod,
  kIte,  // args: condition, then, else.
  kEq,   // Booleans are terms too.
  kLt,
  kLe,
  kAnd,
  kOr,
  kNot,
  kInput,  // X_input(args...).
};

struct Node;
using Expr = std::shared_ptr<const Node>;

struct Node {
  Op op = Op::kConst;
  int64_t value = 0;  // kConst.
  std::string name;   // kVar.
  int input = 0;      // kInput.
  bool is_bool = false;
  bool has_input = false;  // An element term (depends on inputs).
  std::vector<Expr> args;
  // When set: the term is known to lie in [0, bound) (a bounded variable, a modulo, or a
  // row-major combination of bounded digits). Used to simplify div/mod structurally.
  Expr bound;
};

Expr Const(int64_t v);
Expr Bool(bool b);
Expr Var(const std::string& name);
// A variable known to lie in [0, bound); the caller must assert that range.
Expr BoundedVar(const std::string& name, const Expr& bound);
// Structural equality (pointer, equal constants, same variable, or same op on equal args).
bool Same(const Expr& a, const Expr& b);
Expr Input(int input, std::vector<Expr> args);
Expr Add(const Expr& a, const Expr& b);
Expr Sub(const Expr& a, const Expr& b);
Expr Mul(const Expr& a, const Expr& b);
Expr Div(const Expr& a, const Expr& b);
Expr Mod(const Expr& a, const Expr& b);
Expr Ite(const Expr& c, const Expr& a, const Expr& b);
Expr Eq(const Expr& a, const Expr& b);
Expr Lt(const Expr& a, const Expr& b);
Expr Le(const Expr& a, const Expr& b);
Expr And(const Expr& a, const Expr& b);
Expr Or(const Expr& a, const Expr& b);
Expr Not(const Expr& a);
Expr Ne(const Expr& a, const Expr& b);
// lo <= x < hi.
Expr InRange(const Expr& x, const Expr& lo, const Expr& hi);
// The constant value, if `e` is one.
bool IsConst(const Expr& e, int64_t* value = nullptr);
// Row-major linearisation of digits over sizes, in Horner form ((d0*s1 + d1)*s2 + d2).
//
// Division and modulo simplify structurally, for symbolic divisors d > 0 (Euclidean):
// (X*d + B) div d = X + B div d, (X*d + B) mod d = B mod d, and r div d = 0, r mod d = r
// when r is known to lie in [0, d).
Expr RowMajor(absl::Span<const Expr> digits, absl::Span<const Expr> sizes);
// Product of sizes.
Expr Product(absl::Span<const Expr> sizes);
// Lookup table keyed 0..n-1 (if-then-else chain; out-of-range keys give the
// last value).
Expr Table(const Expr& key, absl::Span<const int64_t> values);

// Lowering to Z3 over Int (booleans to Bool). Inputs become uninterpreted
// functions X<k> over Int^arity -> Int; variables become Int constants of the
// same name. Memoised per node.
class Z3Lowering {
 public:
  explicit Z3Lowering(z3::context& ctx) : ctx_(ctx) {}
  z3::expr Lower(const Expr& e);
  z3::expr VarExpr(const std::string& name) { return ctx_.int_const(name.c_str()); }

 private:
  z3::context& ctx_;
  absl::flat_hash_map<const Node*, z3::expr> memo_;
  std::vector<Expr> keep_;  // Keeps memoised nodes alive (the memo is keyed by address).
  std::map<std::pair<int, size_t>, z3::func_decl> inputs_;
};

using Env = std::map<std::string, int64_t>;

// Integer (or boolean 0/1) value of a term without inputs; error for unbound
// variables.
absl::StatusOr<int64_t> EvalInt(const Expr& e, const Env& env);

// An element as a linear form: sum of coefficient * X_input(args) plus a
// constant.
struct LinearForm {
  std::map<std::pair<int, std::vector<int64_t>>, int64_t> terms;
  int64_t constant = 0;
  bool operator==(const LinearForm& other) const {
    return terms == other.terms && constant == other.constant;
  }
  bool operator!=(const LinearForm& other) const { return !(*this == other); }
  // e.g. `X0(1,0,3) + X0(1,1,3)` or `0`.
  std::string ToString() const;
  // The value on concrete inputs: value(input, args).
  template <typename F>
  int64_t Evaluate(F value) const {
    int64_t sum = constant;
    for (const auto& [key, coefficient] : terms) sum += coefficient * value(key.first, key.second);
    return sum;
  }
};
absl::StatusOr<LinearForm> EvalElem(const Expr& e, const Env& env);

}  // namespace spmdcheck::smt::rw

#endif  // SPMDCHECK_SMT_REWRITE_EXPR_H_
