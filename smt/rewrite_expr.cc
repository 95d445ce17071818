#include "smt/rewrite_expr.h"

#include <z3++.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck::smt::rw {
namespace {

Expr Make(Op op, std::vector<Expr> args, bool is_bool) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->is_bool = is_bool;
  for (const Expr& a : args) node->has_input = node->has_input || a->has_input;
  node->args = std::move(args);
  return node;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  // Euclidean division for b > 0 (as Z3): remainder in [0, b).
  int64_t q = a / b;
  if (a % b < 0) --q;
  return q;
}

int64_t EuclidMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r < 0) r += b;
  return r;
}

}  // namespace

Expr Const(int64_t v) {
  auto node = std::make_shared<Node>();
  node->op = Op::kConst;
  node->value = v;
  return node;
}

Expr Bool(bool b) {
  auto node = std::make_shared<Node>();
  node->op = Op::kConst;
  node->value = b ? 1 : 0;
  node->is_bool = true;
  return node;
}

Expr Var(const std::string& name) {
  auto node = std::make_shared<Node>();
  node->op = Op::kVar;
  node->name = name;
  return node;
}

Expr BoundedVar(const std::string& name, const Expr& bound) {
  auto node = std::make_shared<Node>();
  node->op = Op::kVar;
  node->name = name;
  node->bound = bound;
  return node;
}

namespace {

bool SameAt(const Expr& a, const Expr& b, int depth) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr || a->op != b->op || depth <= 0) return false;
  switch (a->op) {
    case Op::kConst:
      return a->value == b->value && a->is_bool == b->is_bool;
    case Op::kVar:
      return a->name == b->name;
    case Op::kInput:
      if (a->input != b->input) return false;
      break;
    default:
      break;
  }
  if (a->args.size() != b->args.size()) return false;
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!SameAt(a->args[i], b->args[i], depth - 1)) return false;
  }
  return true;
}

// x / c as a term when x is structurally a multiple of c (x = p*c, c*p, or p*(...c...)), else
// null.
Expr FactorOut(const Expr& x, const Expr& c, int depth) {
  if (Same(x, c)) return Const(1);
  if (x->op != Op::kMul || depth <= 0) return nullptr;
  if (Same(x->args[1], c)) return x->args[0];
  if (Same(x->args[0], c)) return x->args[1];
  if (Expr q = FactorOut(x->args[1], c, depth - 1)) return Mul(x->args[0], q);
  if (Expr q = FactorOut(x->args[0], c, depth - 1)) return Mul(q, x->args[1]);
  return nullptr;
}

// True when e is known to lie in [0, d).
bool BelowDivisor(const Expr& e, const Expr& d) {
  int64_t v = 0, dv = 0;
  if (IsConst(e, &v) && IsConst(d, &dv)) return v >= 0 && v < dv;
  if (IsConst(e, &v) && v == 0) return true;
  return e->bound != nullptr && Same(e->bound, d);
}

}  // namespace

bool Same(const Expr& a, const Expr& b) { return SameAt(a, b, 12); }

Expr Input(int input, std::vector<Expr> args) {
  auto node = std::make_shared<Node>();
  node->op = Op::kInput;
  node->input = input;
  node->args = std::move(args);
  node->has_input = true;
  return node;
}

bool IsConst(const Expr& e, int64_t* value) {
  if (e->op != Op::kConst) return false;
  if (value != nullptr) *value = e->value;
  return true;
}

Expr Add(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  const bool ca = IsConst(a, &x), cb = IsConst(b, &y);
  if (ca && cb) return Const(x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  Expr sum = Make(Op::kAdd, {a, b}, false);
  // x*s + r with x in [0, B) and r in [0, s) lies in [0, B*s).
  if (a->op == Op::kMul && a->args[0]->bound != nullptr && BelowDivisor(b, a->args[1])) {
    std::const_pointer_cast<Node>(sum)->bound = Mul(a->args[0]->bound, a->args[1]);
  }
  return sum;
}

Expr Sub(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  const bool ca = IsConst(a, &x), cb = IsConst(b, &y);
  if (ca && cb) return Const(x - y);
  if (cb && y == 0) return a;
  if (a == b) return Const(0);
  return Make(Op::kSub, {a, b}, false);
}

Expr Mul(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  const bool ca = IsConst(a, &x), cb = IsConst(b, &y);
  if (ca && cb) return Const(x * y);
  if ((ca && x == 0) || (cb && y == 0)) return Const(0);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  return Make(Op::kMul, {a, b}, false);
}

Expr Div(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  const bool ca = IsConst(a, &x), cb = IsConst(b, &y);
  if (ca && cb && y > 0) return Const(FloorDiv(x, y));
  if (cb && y == 1) return a;
  if (ca && x == 0) return Const(0);
  if (!cb || y > 0) {
    if (BelowDivisor(a, b)) return Const(0);
    if (Expr q = FactorOut(a, b, 8)) return q;
    if (a->op == Op::kAdd) {
      if (Expr q = FactorOut(a->args[0], b, 8)) return Add(q, Div(a->args[1], b));
      if (Expr q = FactorOut(a->args[1], b, 8)) return Add(q, Div(a->args[0], b));
    }
  }
  return Make(Op::kDiv, {a, b}, false);
}

Expr Mod(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  const bool ca = IsConst(a, &x), cb = IsConst(b, &y);
  if (ca && cb && y > 0) return Const(EuclidMod(x, y));
  if (cb && y == 1) return Const(0);
  if (ca && x == 0) return Const(0);
  if (!cb || y > 0) {
    if (BelowDivisor(a, b)) return a;
    if (FactorOut(a, b, 8) != nullptr) return Const(0);
    if (a->op == Op::kAdd) {
      if (FactorOut(a->args[0], b, 8) != nullptr) return Mod(a->args[1], b);
      if (FactorOut(a->args[1], b, 8) != nullptr) return Mod(a->args[0], b);
    }
  }
  Expr m = Make(Op::kMod, {a, b}, false);
  std::const_pointer_cast<Node>(m)->bound = b;
  return m;
}

Expr Ite(const Expr& c, const Expr& a, const Expr& b) {
  int64_t x = 0;
  if (IsConst(c, &x)) return x != 0 ? a : b;
  if (a == b) return a;
  return Make(Op::kIte, {c, a, b}, a->is_bool);
}

Expr Eq(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (IsConst(a, &x) && IsConst(b, &y)) return Bool(x == y);
  if (a == b) return Bool(true);
  return Make(Op::kEq, {a, b}, true);
}

Expr Lt(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (IsConst(a, &x) && IsConst(b, &y)) return Bool(x < y);
  if (a == b) return Bool(false);
  return Make(Op::kLt, {a, b}, true);
}

Expr Le(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (IsConst(a, &x) && IsConst(b, &y)) return Bool(x <= y);
  if (a == b) return Bool(true);
  return Make(Op::kLe, {a, b}, true);
}

Expr And(const Expr& a, const Expr& b) {
  int64_t x = 0;
  if (IsConst(a, &x)) return x != 0 ? b : Bool(false);
  if (IsConst(b, &x)) return x != 0 ? a : Bool(false);
  return Make(Op::kAnd, {a, b}, true);
}

Expr Or(const Expr& a, const Expr& b) {
  int64_t x = 0;
  if (IsConst(a, &x)) return x != 0 ? Bool(true) : b;
  if (IsConst(b, &x)) return x != 0 ? Bool(true) : a;
  return Make(Op::kOr, {a, b}, true);
}

Expr Not(const Expr& a) {
  int64_t x = 0;
  if (IsConst(a, &x)) return Bool(x == 0);
  return Make(Op::kNot, {a}, true);
}

Expr Ne(const Expr& a, const Expr& b) { return Not(Eq(a, b)); }

Expr InRange(const Expr& x, const Expr& lo, const Expr& hi) { return And(Le(lo, x), Lt(x, hi)); }

Expr RowMajor(absl::Span<const Expr> digits, absl::Span<const Expr> sizes) {
  if (digits.empty()) return Const(0);
  Expr acc = digits[0];
  for (size_t k = 1; k < digits.size(); ++k) acc = Add(Mul(acc, sizes[k]), digits[k]);
  return acc;
}

Expr Product(absl::Span<const Expr> sizes) {
  Expr p = Const(1);
  for (const Expr& s : sizes) p = Mul(p, s);
  return p;
}

Expr Table(const Expr& key, absl::Span<const int64_t> values) {
  if (values.empty()) return Const(-1);
  int64_t k = 0;
  if (IsConst(key, &k)) {
    return Const(k >= 0 && k < static_cast<int64_t>(values.size()) ? values[k] : values.back());
  }
  Expr result = Const(values.back());
  for (size_t i = values.size() - 1; i-- > 0;) {
    result = Ite(Eq(key, Const(static_cast<int64_t>(i))), Const(values[i]), result);
  }
  return result;
}

z3::expr Z3Lowering::Lower(const Expr& e) {
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second;
  std::vector<z3::expr> a;
  for (const Expr& arg : e->args) a.push_back(Lower(arg));
  z3::expr result = ctx_.int_val(static_cast<int64_t>(0));
  switch (e->op) {
    case Op::kConst:
      result = e->is_bool ? ctx_.bool_val(e->value != 0) : ctx_.int_val(e->value);
      break;
    case Op::kVar:
      result = ctx_.int_const(e->name.c_str());
      break;
    case Op::kAdd:
      result = a[0] + a[1];
      break;
    case Op::kSub:
      result = a[0] - a[1];
      break;
    case Op::kMul:
      result = a[0] * a[1];
      break;
    case Op::kDiv:
      result = a[0] / a[1];
      break;
    case Op::kMod:
      result = z3::mod(a[0], a[1]);
      break;
    case Op::kIte:
      result = z3::ite(a[0], a[1], a[2]);
      break;
    case Op::kEq:
      result = a[0] == a[1];
      break;
    case Op::kLt:
      result = a[0] < a[1];
      break;
    case Op::kLe:
      result = a[0] <= a[1];
      break;
    case Op::kAnd:
      result = a[0] && a[1];
      break;
    case Op::kOr:
      result = a[0] || a[1];
      break;
    case Op::kNot:
      result = !a[0];
      break;
    case Op::kInput: {
      const std::pair<int, size_t> key(e->input, e->args.size());
      auto f = inputs_.find(key);
      if (f == inputs_.end()) {
        z3::sort_vector domain(ctx_);
        for (size_t i = 0; i < e->args.size(); ++i) domain.push_back(ctx_.int_sort());
        f = inputs_
                .emplace(key,
                         ctx_.function(absl::StrCat("X", e->input, "_", e->args.size()).c_str(),
                                       domain, ctx_.int_sort()))
                .first;
      }
      z3::expr_vector args(ctx_);
      for (const z3::expr& x : a) args.push_back(x);
      result = f->second(args);
      break;
    }
  }
  memo_.emplace(e.get(), result);
  keep_.push_back(e);
  return result;
}

namespace {

class Evaluator {
 public:
  explicit Evaluator(const Env& env) : env_(env) {}

  absl::StatusOr<int64_t> Int(const Expr& e) {
    if (e->has_input) return absl::InvalidArgumentError("an element term used as an integer");
    auto it = ints_.find(e.get());
    if (it != ints_.end()) return it->second;
    std::vector<int64_t> a;
    if (e->op != Op::kIte) {
      for (const Expr& arg : e->args) {
        absl::StatusOr<int64_t> v = Int(arg);
        if (!v.ok()) return v.status();
        a.push_back(*v);
      }
    }
    int64_t r = 0;
    switch (e->op) {
      case Op::kConst:
        r = e->value;
        break;
      case Op::kVar: {
        auto v = env_.find(e->name);
        if (v == env_.end()) return absl::InvalidArgumentError(absl::StrCat("unbound ", e->name));
        r = v->second;
        break;
      }
      case Op::kAdd:
        r = a[0] + a[1];
        break;
      case Op::kSub:
        r = a[0] - a[1];
        break;
      case Op::kMul:
        r = a[0] * a[1];
        break;
      case Op::kDiv:
        if (a[1] <= 0) return absl::InvalidArgumentError("division by a non-positive value");
        r = FloorDiv(a[0], a[1]);
        break;
      case Op::kMod:
        if (a[1] <= 0) return absl::InvalidArgumentError("modulo by a non-positive value");
        r = EuclidMod(a[0], a[1]);
        break;
      case Op::kIte: {
        absl::StatusOr<int64_t> c = Int(e->args[0]);
        if (!c.ok()) return c.status();
        absl::StatusOr<int64_t> v = Int(e->args[*c != 0 ? 1 : 2]);
        if (!v.ok()) return v.status();
        r = *v;
        break;
      }
      case Op::kEq:
        r = a[0] == a[1];
        break;
      case Op::kLt:
        r = a[0] < a[1];
        break;
      case Op::kLe:
        r = a[0] <= a[1];
        break;
      case Op::kAnd:
        r = a[0] != 0 && a[1] != 0;
        break;
      case Op::kOr:
        r = a[0] != 0 || a[1] != 0;
        break;
      case Op::kNot:
        r = a[0] == 0;
        break;
      case Op::kInput:
        return absl::InvalidArgumentError("an input used as an integer");
    }
    ints_.emplace(e.get(), r);
    return r;
  }

  absl::StatusOr<LinearForm> Elem(const Expr& e) {
    if (!e->has_input) {
      absl::StatusOr<int64_t> v = Int(e);
      if (!v.ok()) return v.status();
      LinearForm f;
      f.constant = *v;
      return f;
    }
    switch (e->op) {
      case Op::kInput: {
        std::vector<int64_t> args;
        for (const Expr& arg : e->args) {
          absl::StatusOr<int64_t> v = Int(arg);
          if (!v.ok()) return v.status();
          args.push_back(*v);
        }
        LinearForm f;
        f.terms[{e->input, std::move(args)}] = 1;
        return f;
      }
      case Op::kAdd:
      case Op::kSub: {
        absl::StatusOr<LinearForm> x = Elem(e->args[0]);
        if (!x.ok()) return x.status();
        absl::StatusOr<LinearForm> y = Elem(e->args[1]);
        if (!y.ok()) return y.status();
        const int64_t sign = e->op == Op::kAdd ? 1 : -1;
        LinearForm f = *std::move(x);
        f.constant += sign * y->constant;
        for (const auto& [key, c] : y->terms) {
          int64_t& slot = f.terms[key];
          slot += sign * c;
          if (slot == 0) f.terms.erase(key);
        }
        return f;
      }
      case Op::kMul: {
        const bool left_is_elem = e->args[0]->has_input;
        if (e->args[0]->has_input && e->args[1]->has_input) {
          return absl::InvalidArgumentError("product of two elements is not linear");
        }
        absl::StatusOr<LinearForm> x = Elem(e->args[left_is_elem ? 0 : 1]);
        if (!x.ok()) return x.status();
        absl::StatusOr<int64_t> k = Int(e->args[left_is_elem ? 1 : 0]);
        if (!k.ok()) return k.status();
        LinearForm f;
        if (*k == 0) return f;
        f.constant = x->constant * *k;
        for (const auto& [key, c] : x->terms) f.terms[key] = c * *k;
        return f;
      }
      case Op::kIte: {
        absl::StatusOr<int64_t> c = Int(e->args[0]);
        if (!c.ok()) return c.status();
        return Elem(e->args[*c != 0 ? 1 : 2]);
      }
      default:
        return absl::InvalidArgumentError("unsupported element term");
    }
  }

 private:
  const Env& env_;
  absl::flat_hash_map<const Node*, int64_t> ints_;
};

}  // namespace

absl::StatusOr<int64_t> EvalInt(const Expr& e, const Env& env) {
  Evaluator ev(env);
  return ev.Int(e);
}

absl::StatusOr<LinearForm> EvalElem(const Expr& e, const Env& env) {
  Evaluator ev(env);
  return ev.Elem(e);
}

std::string LinearForm::ToString() const {
  std::vector<std::string> parts;
  for (const auto& [key, c] : terms) {
    std::string t = absl::StrCat("X", key.first, "(", absl::StrJoin(key.second, ","), ")");
    if (c != 1) t = absl::StrCat(c, "*", t);
    parts.push_back(t);
  }
  if (constant != 0 || parts.empty()) parts.push_back(absl::StrCat(constant));
  return absl::StrJoin(parts, " + ");
}

}  // namespace spmdcheck::smt::rw
