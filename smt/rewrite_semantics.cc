#include "smt/rewrite_semantics.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace spmdcheck::smt::rw {
namespace {

std::string FirstError(const Dist& a, const Dist& b) { return a.error.empty() ? b.error : a.error; }

std::string AxesText(const std::vector<int>& axes) {
  return absl::StrCat("axes{", absl::StrJoin(axes, ","), "}");
}

// Digits of p over `sizes` (row-major).
std::vector<Expr> Digits(const Expr& p, const std::vector<Expr>& sizes) {
  std::vector<Expr> digits(sizes.size());
  Expr rest = p;
  for (size_t k = sizes.size(); k-- > 0;) {
    digits[k] = k == 0 ? rest : Mod(rest, sizes[k]);
    rest = Div(rest, sizes[k]);
  }
  return digits;
}

}  // namespace

Device MeshModel::FromId(const Expr& id) const { return Digits(id, sizes); }

Groups AxisGroups(const MeshModel& mesh, const std::vector<int>& axes) {
  std::vector<Expr> sizes;
  for (int a : axes) sizes.push_back(mesh.sizes[a]);
  Groups g;
  g.size = Product(sizes);
  g.position = [axes, sizes](const Device& d) {
    std::vector<Expr> coords;
    for (int a : axes) coords.push_back(d[a]);
    return RowMajor(coords, sizes);
  };
  g.member = [axes, sizes](const Device& d, const Expr& p) {
    std::vector<Expr> digits = Digits(p, sizes);
    Device m = d;
    for (size_t k = 0; k < axes.size(); ++k) m[axes[k]] = digits[k];
    return m;
  };
  g.text = AxesText(axes);
  return g;
}

Groups ExplicitGroups(const MeshModel& mesh, const std::vector<std::vector<int64_t>>& groups) {
  int64_t n = 0;
  IsConst(mesh.NumDevices(), &n);
  std::vector<int64_t> group_of(static_cast<size_t>(n), 0), position_of(static_cast<size_t>(n), 0);
  std::vector<int64_t> members;
  const int64_t size = groups.empty() ? 0 : static_cast<int64_t>(groups[0].size());
  std::vector<std::string> texts;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (size_t p = 0; p < groups[gi].size(); ++p) {
      const int64_t d = groups[gi][p];
      if (d >= 0 && d < n) {
        group_of[d] = static_cast<int64_t>(gi);
        position_of[d] = static_cast<int64_t>(p);
      }
      members.push_back(d);
    }
    texts.push_back(absl::StrCat("{", absl::StrJoin(groups[gi], ","), "}"));
  }
  Groups g;
  g.size = Const(size);
  g.position = [mesh, position_of](const Device& d) { return Table(mesh.Id(d), position_of); };
  g.member = [mesh, group_of, members, size](const Device& d, const Expr& p) {
    return mesh.FromId(Table(Add(Mul(Table(mesh.Id(d), group_of), Const(size)), p), members));
  };
  g.text = absl::StrCat("{", absl::StrJoin(texts, ","), "}");
  return g;
}

Pairs ShiftPairs(const MeshModel& mesh, int axis, int64_t shift, bool cyclic) {
  Pairs p;
  const Expr n = mesh.sizes[axis];
  if (cyclic) {
    p.has_source = [](const Device&) { return Bool(true); };
    p.source = [axis, shift, n](const Device& d) {
      Device s = d;
      // (c - shift) mod n, kept non-negative for |shift| <= n.
      s[axis] = Mod(Add(Sub(d[axis], Const(shift)), n), n);
      return s;
    };
  } else {
    p.has_source = [axis, shift, n](const Device& d) {
      const Expr from = Sub(d[axis], Const(shift));
      return InRange(from, Const(0), n);
    };
    p.source = [axis, shift](const Device& d) {
      Device s = d;
      s[axis] = Sub(d[axis], Const(shift));
      return s;
    };
  }
  p.text = absl::StrCat(cyclic ? "cyclic " : "", "shift ", shift, " along axis ", axis);
  return p;
}

Pairs ExplicitPairs(const MeshModel& mesh, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  Pairs p;
  p.has_source = [mesh, pairs](const Device& d) {
    const Expr id = mesh.Id(d);
    Expr any = Bool(false);
    for (const auto& [s, t] : pairs) any = Or(any, Eq(id, Const(t)));
    return any;
  };
  p.source = [mesh, pairs](const Device& d) {
    const Expr id = mesh.Id(d);
    Expr source = Const(0);
    for (size_t k = pairs.size(); k-- > 0;) {
      source = Ite(Eq(id, Const(pairs[k].second)), Const(pairs[k].first), source);
    }
    return mesh.FromId(source);
  };
  std::vector<std::string> texts;
  for (const auto& [s, t] : pairs) texts.push_back(absl::StrCat("{", s, ",", t, "}"));
  p.text = absl::StrCat("{", absl::StrJoin(texts, ","), "}");
  return p;
}

Dist InputValue(int input, int mesh_rank, std::vector<Expr> shape) {
  Dist v;
  v.shape = std::move(shape);
  v.at = [input, mesh_rank](const Device& d, const Index& i) {
    std::vector<Expr> args(d.begin(), d.begin() + mesh_rank);
    args.insert(args.end(), i.begin(), i.end());
    return Input(input, std::move(args));
  };
  return v;
}

Dist ReplicatedInput(int input, std::vector<Expr> shape) {
  Dist v;
  v.shape = std::move(shape);
  v.at = [input](const Device&, const Index& i) { return Input(input, i); };
  return v;
}

Dist Zeros(std::vector<Expr> shape) {
  Dist v;
  v.shape = std::move(shape);
  v.at = [](const Device&, const Index&) { return Const(0); };
  return v;
}

Dist AllGather(const Dist& v, const Groups& g, int dim) {
  Dist out;
  out.error = v.error;
  out.shape = v.shape;
  const Expr c = v.shape[dim];
  out.shape[dim] = Mul(g.size, c);
  out.at = [v, g, dim, c](const Device& d, const Index& i) {
    Index j = i;
    j[dim] = Mod(i[dim], c);
    return v.at(g.member(d, Div(i[dim], c)), j);
  };
  return out;
}

Dist AllReduce(const Dist& v, const Groups& g) {
  Dist out;
  out.shape = v.shape;
  out.error = v.error;
  int64_t n = 0;
  if (!IsConst(g.size, &n)) {
    out.error = "an all-reduce needs a constant group size (sum of n terms)";
    out.at = [](const Device&, const Index&) { return Const(0); };
    return out;
  }
  out.at = [v, g, n](const Device& d, const Index& i) {
    Expr sum = Const(0);
    for (int64_t p = 0; p < n; ++p) sum = Add(sum, v.at(g.member(d, Const(p)), i));
    return sum;
  };
  return out;
}

Dist ReduceScatter(const Dist& v, const Groups& g, int dim) {
  Dist out;
  out.shape = v.shape;
  out.error = v.error;
  int64_t n = 0, total = 0;
  if (!IsConst(g.size, &n) || !IsConst(v.shape[dim], &total) || n <= 0 || total % n != 0) {
    out.error =
        "a reduce-scatter needs constant sizes with the dim divisible "
        "by the group size";
    out.at = [](const Device&, const Index&) { return Const(0); };
    return out;
  }
  const int64_t block = total / n;
  out.shape[dim] = Const(block);
  out.at = [v, g, n, dim, block](const Device& d, const Index& i) {
    Index j = i;
    j[dim] = Add(Mul(g.position(d), Const(block)), i[dim]);
    Expr sum = Const(0);
    for (int64_t p = 0; p < n; ++p) sum = Add(sum, v.at(g.member(d, Const(p)), j));
    return sum;
  };
  return out;
}

Dist AllToAll(const Dist& v, const Groups& g, int split_dim, int concat_dim) {
  Dist out;
  out.error = v.error;
  out.shape = v.shape;
  // Chunk size along the split dim: C_split / n. When the shape is written as n
  // * c the division folds away; otherwise it stays a (possibly nonlinear)
  // division.
  const Expr total = v.shape[split_dim];
  Expr chunk = Div(total, g.size);
  if (total->op == Op::kMul && Same(total->args[0], g.size)) chunk = total->args[1];
  if (split_dim == concat_dim) {
    out.at = [v, g, split_dim, chunk](const Device& d, const Index& i) {
      // Position i along the dim: chunk from sender i / chunk, the sender's
      // chunk `my position`.
      Index j = i;
      j[split_dim] = Add(Mul(g.position(d), chunk), Mod(i[split_dim], chunk));
      return v.at(g.member(d, Div(i[split_dim], chunk)), j);
    };
    return out;
  }
  const Expr concat = v.shape[concat_dim];
  out.shape[split_dim] = chunk;
  out.shape[concat_dim] = Mul(g.size, concat);
  out.at = [v, g, split_dim, concat_dim, chunk, concat](const Device& d, const Index& i) {
    Index j = i;
    j[concat_dim] = Mod(i[concat_dim], concat);
    j[split_dim] = Add(Mul(g.position(d), chunk), i[split_dim]);
    return v.at(g.member(d, Div(i[concat_dim], concat)), j);
  };
  return out;
}

Dist CollectivePermute(const Dist& v, const Pairs& p) {
  Dist out;
  out.error = v.error;
  out.shape = v.shape;
  out.at = [v, p](const Device& d, const Index& i) {
    return Ite(p.has_source(d), v.at(p.source(d), i), Const(0));
  };
  return out;
}

Dist CollectiveBroadcast(const Dist& v, const Groups& g) {
  Dist out;
  out.error = v.error;
  out.shape = v.shape;
  out.at = [v, g](const Device& d, const Index& i) { return v.at(g.member(d, Const(0)), i); };
  return out;
}

Dist Plus(const Dist& a, const Dist& b) {
  Dist out;
  out.error = FirstError(a, b);
  out.shape = a.shape;
  out.at = [a, b](const Device& d, const Index& i) { return Add(a.at(d, i), b.at(d, i)); };
  return out;
}

Dist Scale(const Dist& a, const Expr& k) {
  Dist out;
  out.error = a.error;
  out.shape = a.shape;
  out.at = [a, k](const Device& d, const Index& i) { return Mul(a.at(d, i), k); };
  return out;
}

Dist Select(const std::function<Expr(const Device&)>& mask, const Dist& a, const Dist& b) {
  Dist out;
  out.error = FirstError(a, b);
  out.shape = a.shape;
  out.at = [mask, a, b](const Device& d, const Index& i) {
    return Ite(mask(d), a.at(d, i), b.at(d, i));
  };
  return out;
}

namespace {

// XLA clamps a dynamic-slice start to [0, dim - size]. A start p * size with p in [0, B) and
// dim == B * size is in range already (structurally known, also for symbolic sizes).
Expr ClampStart(const Expr& start, const Expr& dim, const Expr& size) {
  if (start->op == Op::kMul && Same(start->args[1], size) && start->args[0]->bound != nullptr &&
      dim->op == Op::kMul && Same(dim->args[1], size) &&
      Same(dim->args[0], start->args[0]->bound)) {
    return start;
  }
  const Expr hi = Sub(dim, size);
  return Ite(Lt(start, Const(0)), Const(0), Ite(Lt(hi, start), hi, start));
}

}  // namespace

Dist DynamicSlice(const Dist& v, int dim, const std::function<Expr(const Device&)>& offset,
                  const Expr& size) {
  Dist out;
  out.error = v.error;
  out.shape = v.shape;
  out.shape[dim] = size;
  const Expr total = v.shape[dim];
  out.at = [v, dim, offset, total, size](const Device& d, const Index& i) {
    Index j = i;
    j[dim] = Add(ClampStart(offset(d), total, size), i[dim]);
    return v.at(d, j);
  };
  return out;
}

Dist DynamicUpdateSlice(const Dist& base, const Dist& update, int dim,
                        const std::function<Expr(const Device&)>& offset) {
  Dist out;
  out.error = FirstError(base, update);
  out.shape = base.shape;
  const Expr size = update.shape[dim];
  const Expr total = base.shape[dim];
  out.at = [base, update, dim, offset, total, size](const Device& d, const Index& i) {
    const Expr start = ClampStart(offset(d), total, size);
    Index j = i;
    j[dim] = Sub(i[dim], start);
    return Ite(InRange(i[dim], start, Add(start, size)), update.at(d, j), base.at(d, i));
  };
  return out;
}

Dist Reshape(const Dist& v, std::vector<Expr> shape) {
  Dist out;
  out.error = v.error;
  out.shape = std::move(shape);
  const std::vector<Expr> new_shape = out.shape;
  out.at = [v, new_shape](const Device& d, const Index& i) {
    const Expr linear = RowMajor(i, new_shape);
    return v.at(d, Digits(linear, v.shape));
  };
  return out;
}

Dist Transpose(const Dist& v, const std::vector<int>& perm) {
  Dist out;
  out.error = v.error;
  for (int p : perm) out.shape.push_back(v.shape[p]);
  out.at = [v, perm](const Device& d, const Index& i) {
    Index j(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) j[perm[k]] = i[k];
    return v.at(d, j);
  };
  return out;
}

Dist Broadcast(const Dist& v, std::vector<Expr> shape, const std::vector<int>& dims) {
  Dist out;
  out.error = v.error;
  out.shape = std::move(shape);
  out.at = [v, dims](const Device& d, const Index& i) {
    Index j;
    for (int k : dims) j.push_back(i[k]);
    return v.at(d, j);
  };
  return out;
}

std::vector<std::pair<int64_t, int64_t>> ComposePairs(
    const std::vector<std::pair<int64_t, int64_t>>& first,
    const std::vector<std::pair<int64_t, int64_t>>& second) {
  std::vector<std::pair<int64_t, int64_t>> result;
  for (const auto& [s, m] : first) {
    for (const auto& [m2, t] : second) {
      if (m == m2) result.emplace_back(s, t);
    }
  }
  return result;
}

}  // namespace spmdcheck::smt::rw
