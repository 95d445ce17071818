#include "fuzz/sdy_program_gen.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/mesh.h"

namespace spmdcheck::fuzz {
namespace {

// Mesh axes and (sub-)axis references as ir/mesh.h has them (`"x":(pre_size)size`).
using Axis = MeshAxis;
using AxisRef = MeshAxisRef;

struct DimSharding {
  std::vector<AxisRef> axes;
  bool open = false;
  int priority = -1;
};

struct Sharding {
  std::vector<DimSharding> dims;
  std::vector<AxisRef> unreduced;
};

struct Value {
  std::string name;
  std::vector<int64_t> shape;
};

int64_t Product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

std::string TensorType(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "tensor<f32>";
  return absl::StrCat("tensor<", absl::StrJoin(shape, "x"), "xf32>");
}

class Generator {
 public:
  Generator(uint64_t seed, const SdyProgramOptions& options) : rng_(seed), options_(options) {}

  SdyProgram Run() {
    MakeMesh();
    const int64_t params = Uniform(1, 3);
    for (int64_t i = 0; i < params; ++i) AddParameter(RandomShape());
    const int64_t ops = Uniform(2, std::max<int64_t>(2, options_.max_ops));
    for (int64_t i = 0; i < ops; ++i) AddOp();
    return Finish();
  }

 private:
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t Uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(0, static_cast<int64_t>(v.size()) - 1))];
  }
  std::string Fresh() { return absl::StrCat("%v", next_id_++); }
  int64_t AxisSize(const AxisRef& ref) const {
    return ref.size == 0 ? axes_[ref.axis].size : ref.size;
  }

  void MakeMesh() {
    std::vector<int64_t> counts;
    for (int64_t n : {2, 4, 8}) {
      if (n <= options_.max_devices) counts.push_back(n);
    }
    if (counts.empty()) counts.push_back(2);
    devices_ = Pick(counts);
    std::vector<std::vector<int64_t>> factorings;
    if (devices_ == 2) factorings = {{2}};
    if (devices_ == 4) factorings = {{4}, {2, 2}};
    if (devices_ == 8) factorings = {{8}, {2, 4}, {4, 2}, {2, 2, 2}};
    const std::vector<int64_t>& sizes = Pick(factorings);
    static const std::vector<std::vector<std::string>> kNames = {
        {"x", "y", "z"}, {"data", "model", "expert"}, {"a", "b", "c"}};
    const std::vector<std::string>& names = Pick(kNames);
    for (size_t i = 0; i < sizes.size(); ++i) axes_.push_back({names[i], sizes[i]});
  }

  std::vector<int64_t> RandomShape() {
    static const std::vector<int64_t> kDims = {2, 3, 4, 6, 8, 12, 16};
    const int64_t rank = Uniform(1, 3);
    std::vector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = Pick(kDims);
      while (Product(shape) * d > 256 && d > 2) d /= 2;
      shape.push_back(d);
    }
    return shape;
  }

  // A sharding of `shape`. `even`: every dim divisible by its axes (manual computations);
  // open dims and priorities when allowed.
  Sharding RandomSharding(const std::vector<int64_t>& shape, bool even, bool allow_open,
                          bool allow_priority, bool allow_subaxes) {
    Sharding s;
    s.dims.resize(shape.size());
    if (shape.empty()) return s;
    std::vector<int64_t> product(shape.size(), 1);
    auto place = [&](const AxisRef& ref, int64_t dim) {
      const int64_t size = AxisSize(ref);
      const int64_t total = product[dim] * size;
      if (shape[dim] < total) return false;  // More shards than elements: not placed.
      if (even && shape[dim] % total != 0) return false;
      s.dims[dim].axes.push_back(ref);
      product[dim] = total;
      if (shape[dim] % total != 0) constructs_.insert("uneven");
      return true;
    };
    std::vector<int> order(axes_.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    for (int axis : order) {
      const int64_t size = axes_[axis].size;
      if (size < 2) continue;
      if (allow_subaxes && size >= 4 && Chance(0.15)) {
        // Two sub-axes of one axis on two different dims (or one of them unused).
        const AxisRef major{axis, 1, 2}, minor{axis, 2, size / 2};
        int64_t used_dim = -1;
        for (const AxisRef& ref : {major, minor}) {
          if (!Chance(0.7)) continue;
          const int64_t dim = Uniform(0, static_cast<int64_t>(shape.size()) - 1);
          if (dim == used_dim) continue;
          if (place(ref, dim)) {
            used_dim = dim;
            constructs_.insert("sub-axis");
          }
        }
        continue;
      }
      if (!Chance(0.55)) continue;
      place(AxisRef{axis, 1, 0}, Uniform(0, static_cast<int64_t>(shape.size()) - 1));
    }
    for (DimSharding& dim : s.dims) {
      if (allow_open && Chance(0.2)) {
        dim.open = true;
        constructs_.insert("open-dim");
      }
      if (allow_priority && !dim.axes.empty() && Chance(0.1)) {
        dim.priority = static_cast<int>(Uniform(0, 1));
        constructs_.insert("priority");
      }
    }
    return s;
  }

  std::string RefText(const AxisRef& ref) const {
    std::string text = absl::StrCat("\"", axes_[ref.axis].name, "\"");
    if (ref.size != 0) absl::StrAppend(&text, ":(", ref.pre_size, ")", ref.size);
    return text;
  }

  // `<@mesh, [{"x", ?}p1, {}]>` (with `, unreduced={...}`).
  std::string ShardingText(const Sharding& s) const {
    std::vector<std::string> dims;
    for (const DimSharding& dim : s.dims) {
      std::vector<std::string> parts;
      for (const AxisRef& ref : dim.axes) parts.push_back(RefText(ref));
      if (dim.open) parts.push_back("?");
      std::string text = absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
      if (dim.priority >= 0) absl::StrAppend(&text, "p", dim.priority);
      dims.push_back(std::move(text));
    }
    std::string text = absl::StrCat("<@mesh, [", absl::StrJoin(dims, ", "), "]");
    if (!s.unreduced.empty()) {
      std::vector<std::string> refs;
      for (const AxisRef& ref : s.unreduced) refs.push_back(RefText(ref));
      absl::StrAppend(&text, ", unreduced={", absl::StrJoin(refs, ", "), "}");
    }
    return text + ">";
  }

  Value AddParameter(std::vector<int64_t> shape) {
    Value v{absl::StrCat("%arg", params_.size()), std::move(shape)};
    std::string decl = absl::StrCat(v.name, ": ", TensorType(v.shape));
    if (Chance(0.8)) {
      absl::StrAppend(&decl, " {sdy.sharding = #sdy.sharding",
                      ShardingText(RandomSharding(v.shape, false, true, true, true)), "}");
    } else {
      constructs_.insert("unsharded-parameter");
    }
    params_.push_back(std::move(decl));
    pool_.push_back(v);
    return v;
  }

  // A value of the pool, recent ones more likely.
  Value Operand() {
    const int64_t n = static_cast<int64_t>(pool_.size());
    if (n > 1 && Chance(0.6))
      return pool_[static_cast<size_t>(Uniform(std::max<int64_t>(0, n - 3), n - 1))];
    return pool_[static_cast<size_t>(Uniform(0, n - 1))];
  }

  // Another value of the same shape, or nullptr.
  const Value* SameShape(const Value& v) {
    std::vector<const Value*> same;
    for (const Value& other : pool_) {
      if (other.name != v.name && other.shape == v.shape) same.push_back(&other);
    }
    return same.empty()
               ? nullptr
               : same[static_cast<size_t>(Uniform(0, static_cast<int64_t>(same.size()) - 1))];
  }

  Value Emit(std::string* lines, const std::string& indent, const std::string& op_text,
             std::vector<int64_t> shape) {
    Value v{Fresh(), std::move(shape)};
    absl::StrAppend(lines, indent, v.name, " = ", op_text, "\n");
    return v;
  }

  std::string Unary(const std::string& indent, std::string* lines, const Value& a, Value* out) {
    static const std::vector<std::string> kOps = {"negate", "abs", "tanh", "sine", "cosine"};
    *out = Emit(lines, indent,
                absl::StrCat("stablehlo.", Pick(kOps), " ", a.name, " : ", TensorType(a.shape)),
                a.shape);
    return out->name;
  }

  void AddOp() {
    const Value a = Operand();
    static const std::vector<std::pair<std::string, int>> kWeights = {
        {"unary", 3},   {"binary", 3},     {"dot", 3},     {"reduce", 2}, {"transpose", 1},
        {"reshape", 1}, {"constraint", 3}, {"reshard", 2}, {"group", 2},  {"manual", 4}};
    int total = 0;
    for (const auto& [name, w] : kWeights) total += w;
    int pick = static_cast<int>(Uniform(0, total - 1));
    std::string kind;
    for (const auto& [name, w] : kWeights) {
      if (pick < w) {
        kind = name;
        break;
      }
      pick -= w;
    }
    const std::string ind = "    ";
    if (kind == "unary") {
      Value out;
      Unary(ind, &body_, a, &out);
      pool_.push_back(out);
    } else if (kind == "binary") {
      static const std::vector<std::string> kOps = {"add", "multiply", "subtract", "maximum"};
      const Value* b = SameShape(a);
      pool_.push_back(
          Emit(&body_, ind,
               absl::StrCat("stablehlo.", Pick(kOps), " ", a.name, ", ",
                            b != nullptr ? b->name : a.name, " : ", TensorType(a.shape)),
               a.shape));
    } else if (kind == "dot") {
      AddDot(a);
    } else if (kind == "reduce") {
      if (a.shape.empty()) return;
      const int64_t dim = Uniform(0, static_cast<int64_t>(a.shape.size()) - 1);
      std::vector<int64_t> shape = a.shape;
      shape.erase(shape.begin() + dim);
      const std::string zero = Fresh();
      absl::StrAppend(&body_, ind, zero,
                      " = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n");
      pool_.push_back(
          Emit(&body_, ind,
               absl::StrCat("stablehlo.reduce(", a.name, " init: ", zero,
                            ") applies stablehlo.add across dimensions = [", dim, "] : (",
                            TensorType(a.shape), ", tensor<f32>) -> ", TensorType(shape)),
               shape));
    } else if (kind == "transpose") {
      if (a.shape.size() < 2) return;
      std::vector<int64_t> perm(a.shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng_);
      std::vector<int64_t> shape;
      for (int64_t p : perm) shape.push_back(a.shape[p]);
      pool_.push_back(
          Emit(&body_, ind,
               absl::StrCat("stablehlo.transpose ", a.name, ", dims = [", absl::StrJoin(perm, ", "),
                            "] : (", TensorType(a.shape), ") -> ", TensorType(shape)),
               shape));
    } else if (kind == "reshape") {
      std::vector<int64_t> shape = a.shape;
      if (shape.size() >= 2 && Chance(0.5)) {
        const size_t d = static_cast<size_t>(Uniform(0, static_cast<int64_t>(shape.size()) - 2));
        shape[d] *= shape[d + 1];
        shape.erase(shape.begin() + static_cast<int64_t>(d) + 1);
      } else {
        const size_t d = static_cast<size_t>(Uniform(0, static_cast<int64_t>(shape.size()) - 1));
        if (shape.empty() || shape[d] % 2 != 0 || shape.size() >= 3) return;
        shape[d] /= 2;
        shape.insert(shape.begin() + static_cast<int64_t>(d), 2);
      }
      pool_.push_back(Emit(&body_, ind,
                           absl::StrCat("stablehlo.reshape ", a.name, " : (", TensorType(a.shape),
                                        ") -> ", TensorType(shape)),
                           shape));
    } else if (kind == "constraint") {
      constructs_.insert("constraint");
      pool_.push_back(
          Emit(&body_, ind,
               absl::StrCat("sdy.sharding_constraint ", a.name, " ",
                            ShardingText(RandomSharding(a.shape, false, true, false, true)), " : ",
                            TensorType(a.shape)),
               a.shape));
    } else if (kind == "reshard") {
      // jax.sharding.reshard in explicit mode: jax 0.12 lowers it to a constraint with every
      // dim closed (XLA's import of jax modules refuses the sdy.reshard op itself).
      constructs_.insert("reshard");
      pool_.push_back(
          Emit(&body_, ind,
               absl::StrCat("sdy.sharding_constraint ", a.name, " ",
                            ShardingText(RandomSharding(a.shape, false, false, false, true)), " : ",
                            TensorType(a.shape)),
               a.shape));
    } else if (kind == "group") {
      const Value* b = SameShape(a);
      if (b == nullptr) return;
      constructs_.insert("sharding-group");
      const int group = next_group_++;
      for (const Value* v : {&a, b}) {
        absl::StrAppend(&body_, ind, "sdy.sharding_group ", v->name, " group_id=", group, " : ",
                        TensorType(v->shape), "\n");
      }
    } else if (kind == "manual") {
      AddManual(a);
    }
  }

  // lhs [m, k] x rhs [k, n] (rhs a new parameter); sometimes in jax's unreduced pattern: both
  // operands constrained to split the contracting dim over an axis, the product kept unreduced
  // over it, then reduced by the next constraint.
  void AddDot(Value lhs) {
    const std::string ind = "    ";
    if (lhs.shape.size() != 2) {
      std::vector<int64_t> shape = {Pick(std::vector<int64_t>{4, 8}),
                                    Pick(std::vector<int64_t>{4, 8, 16})};
      lhs = AddParameter(shape);
    }
    const int64_t m = lhs.shape[0], k = lhs.shape[1];
    const int64_t n = Pick(std::vector<int64_t>{2, 4, 8});
    Value rhs = AddParameter({k, n});
    std::vector<int> unreduced_axes;
    for (size_t i = 0; i < axes_.size(); ++i) {
      if (axes_[i].size > 1 && k % axes_[i].size == 0)
        unreduced_axes.push_back(static_cast<int>(i));
    }
    const bool unreduced = !unreduced_axes.empty() && Chance(0.15);
    int axis = -1;
    if (unreduced) {
      axis = Pick(unreduced_axes);
      constructs_.insert("unreduced");
      Sharding l;
      l.dims.resize(2);
      l.dims[1].axes.push_back({axis, 1, 0});
      Sharding r;
      r.dims.resize(2);
      r.dims[0].axes.push_back({axis, 1, 0});
      lhs = Emit(&body_, ind,
                 absl::StrCat("sdy.sharding_constraint ", lhs.name, " ", ShardingText(l), " : ",
                              TensorType(lhs.shape)),
                 lhs.shape);
      rhs = Emit(&body_, ind,
                 absl::StrCat("sdy.sharding_constraint ", rhs.name, " ", ShardingText(r), " : ",
                              TensorType(rhs.shape)),
                 rhs.shape);
    }
    Value product = Emit(&body_, ind,
                         absl::StrCat("stablehlo.dot_general ", lhs.name, ", ", rhs.name,
                                      ", contracting_dims = [1] x [0] : (", TensorType(lhs.shape),
                                      ", ", TensorType(rhs.shape), ") -> ", TensorType({m, n})),
                         {m, n});
    if (unreduced) {
      Sharding u;
      u.dims.resize(2);
      u.unreduced.push_back({axis, 1, 0});
      product = Emit(&body_, ind,
                     absl::StrCat("sdy.sharding_constraint ", product.name, " ", ShardingText(u),
                                  " : ", TensorType(product.shape)),
                     product.shape);
      Sharding reduced;
      reduced.dims.resize(2);
      product = Emit(&body_, ind,
                     absl::StrCat("sdy.sharding_constraint ", product.name, " ",
                                  ShardingText(reduced), " : ", TensorType(product.shape)),
                     product.shape);
    }
    pool_.push_back(product);
  }

  std::string ReplicaGroups(const std::vector<int>& axes) const {
    std::vector<std::string> refs;
    for (int axis : axes) {
      refs.push_back(absl::StrCat("#stablehlo.axis_ref<name = \"", axes_[axis].name, "\">"));
    }
    return absl::StrCat("#stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = [",
                        absl::StrJoin(refs, ", "), "]>");
  }

  // A shard_map: the operand's manual axes split dims that they divide; inside, elementwise ops
  // and collectives; out_shardings name every manual axis along which the result still varies.
  void AddManual(const Value& a) {
    std::vector<int> sized;
    for (size_t i = 0; i < axes_.size(); ++i) {
      if (axes_[i].size > 1) sized.push_back(static_cast<int>(i));
    }
    if (sized.empty()) return;
    std::vector<int> manual;
    const bool all = sized.size() == 1 || Chance(0.5);
    if (all) {
      manual = sized;
    } else {
      manual = {Pick(sized)};
    }
    const bool partial = manual.size() < sized.size();
    constructs_.insert(partial ? "manual-partial" : "manual");
    // Where each manual axis goes on the operand (dims it divides), or nowhere (replicated).
    std::vector<std::vector<int>> dim_axes(a.shape.size());
    std::vector<int64_t> local = a.shape;
    for (int axis : manual) {
      if (a.shape.empty() || !Chance(0.75)) continue;
      const int64_t dim = Uniform(0, static_cast<int64_t>(a.shape.size()) - 1);
      if (local[dim] % axes_[axis].size != 0) continue;
      local[dim] /= axes_[axis].size;
      dim_axes[dim].push_back(axis);
    }
    const Value* second = Chance(0.3) ? SameShape(a) : nullptr;
    auto sharding_of = [&](const std::vector<std::vector<int>>& placed) {
      Sharding s;
      s.dims.resize(placed.size());
      for (size_t d = 0; d < placed.size(); ++d) {
        for (int axis : placed[d]) s.dims[d].axes.push_back({axis, 1, 0});
        s.dims[d].open = partial;  // as jax writes a partially manual shard_map
      }
      return s;
    };
    const std::string in_sharding = ShardingText(sharding_of(dim_axes));
    const std::string ind = "      ";
    std::string body;
    std::vector<std::string> args;
    const std::string arg0 = absl::StrCat("%m", next_id_++);
    args.push_back(absl::StrCat(arg0, ": ", TensorType(local)));
    Value x{arg0, local};
    if (second != nullptr) {
      const std::string arg1 = absl::StrCat("%m", next_id_++);
      args.push_back(absl::StrCat(arg1, ": ", TensorType(local)));
      x = Emit(&body, ind,
               absl::StrCat("stablehlo.add ", arg0, ", ", arg1, " : ", TensorType(local)), local);
    }
    std::vector<std::vector<int>> out_axes = dim_axes;
    const int64_t steps = Uniform(1, 3);
    for (int64_t step = 0; step < steps; ++step) {
      const int64_t what = Uniform(0, 3);
      if (what == 0) {
        Value out;
        Unary(ind, &body, x, &out);
        x = out;
      } else if (what == 1) {
        // psum over some manual axes.
        std::vector<int> over;
        for (int axis : manual) {
          if (Chance(0.6)) over.push_back(axis);
        }
        if (over.empty()) over.push_back(Pick(manual));
        constructs_.insert("all-reduce");
        const std::string r0 = Fresh(), r1 = Fresh(), r2 = Fresh();
        const std::string type = TensorType(x.shape);
        Value out{Fresh(), x.shape};
        absl::StrAppend(&body, ind, out.name, " = \"stablehlo.all_reduce\"(", x.name,
                        ") <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, "
                        "replica_groups = ",
                        ReplicaGroups(over), ", use_global_device_ids}> ({\n", ind, "^bb0(", r0,
                        ": tensor<f32>, ", r1, ": tensor<f32>):\n", ind, "  ", r2,
                        " = stablehlo.add ", r0, ", ", r1, " : tensor<f32>\n", ind,
                        "  stablehlo.return ", r2, " : tensor<f32>\n", ind, "}) : (", type, ") -> ",
                        type, "\n");
        x = out;
      } else if (what == 2 && !partial) {
        // all_gather over the one axis that splits a dim: the result is whole along it.
        std::vector<int64_t> dims;
        for (size_t d = 0; d < out_axes.size(); ++d) {
          if (out_axes[d].size() == 1) dims.push_back(static_cast<int64_t>(d));
        }
        if (dims.empty()) continue;
        const int64_t d = Pick(dims);
        const int axis = out_axes[d][0];
        std::vector<int64_t> shape = x.shape;
        shape[d] *= axes_[axis].size;
        constructs_.insert("all-gather");
        x = Emit(&body, ind,
                 absl::StrCat("\"stablehlo.all_gather\"(", x.name, ") <{all_gather_dim = ", d,
                              " : i64, channel_handle = #stablehlo.channel_handle<handle = 1, "
                              "type = 1>, replica_groups = ",
                              ReplicaGroups({axis}), ", use_global_device_ids}> : (",
                              TensorType(x.shape), ") -> ", TensorType(shape)),
                 shape);
        out_axes[d].clear();
      } else if (what == 3 && !partial) {
        // ppermute: a cyclic shift along one manual axis (device ids of the iota mesh).
        const int axis = Pick(manual);
        int64_t stride = 1;
        for (size_t i = static_cast<size_t>(axis) + 1; i < axes_.size(); ++i)
          stride *= axes_[i].size;
        const int64_t size = axes_[axis].size;
        std::vector<std::string> pairs;
        for (int64_t device = 0; device < devices_; ++device) {
          const int64_t coordinate = (device / stride) % size;
          const int64_t target = device + (((coordinate + 1) % size) - coordinate) * stride;
          pairs.push_back(absl::StrCat("[", device, ", ", target, "]"));
        }
        constructs_.insert("collective-permute");
        x = Emit(&body, ind,
                 absl::StrCat("\"stablehlo.collective_permute\"(", x.name,
                              ") <{channel_handle = #stablehlo.channel_handle<handle = 1, "
                              "type = 1>, source_target_pairs = dense<[",
                              absl::StrJoin(pairs, ", "), "]> : tensor<", devices_, "x2xi64>}> : (",
                              TensorType(x.shape), ") -> ", TensorType(x.shape)),
                 x.shape);
      }
    }
    absl::StrAppend(&body, ind, "sdy.return ", x.name, " : ", TensorType(x.shape), "\n");
    std::vector<int64_t> global = x.shape;
    for (size_t d = 0; d < out_axes.size(); ++d) {
      for (int axis : out_axes[d]) global[d] *= axes_[axis].size;
    }
    std::vector<std::string> names;
    for (int axis : manual) names.push_back(absl::StrCat("\"", axes_[axis].name, "\""));
    std::string operands = a.name, operand_types = TensorType(a.shape), in_shardings = in_sharding;
    if (second != nullptr) {
      absl::StrAppend(&operands, ", ", second->name);
      absl::StrAppend(&operand_types, ", ", TensorType(a.shape));
      absl::StrAppend(&in_shardings, ", ", in_sharding);
    }
    const Value out{Fresh(), global};
    absl::StrAppend(&body_, "    ", out.name, " = sdy.manual_computation(", operands,
                    ") in_shardings=[", in_shardings, "] out_shardings=[",
                    ShardingText(sharding_of(out_axes)), "] manual_axes={",
                    absl::StrJoin(names, ", "), "} (", absl::StrJoin(args, ", "), ") {\n", body,
                    "    } : (", operand_types, ") -> ", TensorType(global), "\n");
    pool_.push_back(out);
  }

  SdyProgram Finish() {
    // One or two results: the last value and sometimes another.
    std::vector<Value> results = {pool_.back()};
    if (pool_.size() > 1 && Chance(0.3)) results.push_back(pool_[pool_.size() - 2]);
    std::vector<std::string> result_decls, names, types;
    for (const Value& r : results) {
      std::string decl = TensorType(r.shape);
      if (Chance(0.6)) {
        absl::StrAppend(&decl, " {sdy.sharding = #sdy.sharding",
                        ShardingText(RandomSharding(r.shape, false, Chance(0.1), false, true)),
                        "}");
      } else {
        constructs_.insert("unsharded-result");
      }
      result_decls.push_back(std::move(decl));
      names.push_back(r.name);
      types.push_back(TensorType(r.shape));
    }
    std::vector<std::string> mesh_axes, stablehlo_axes;
    for (const Axis& axis : axes_) {
      mesh_axes.push_back(absl::StrCat("\"", axis.name, "\"=", axis.size));
      stablehlo_axes.push_back(
          absl::StrCat("{name = \"", axis.name, "\", size = ", axis.size, " : i64}"));
    }
    SdyProgram program;
    program.num_devices = devices_;
    program.text = absl::StrCat(
        "module @jit_fuzz attributes {mhlo.num_partitions = ", devices_,
        " : i32, mhlo.num_replicas = 1 : i32} {\n  sdy.mesh @mesh = <[",
        absl::StrJoin(mesh_axes, ", "), "]> {stablehlo.mesh = {axes = [",
        absl::StrJoin(stablehlo_axes, ", "), "]}}\n  func.func public @main(",
        absl::StrJoin(params_, ", "), ") -> (", absl::StrJoin(result_decls, ", "), ") {\n", body_,
        "    return ", absl::StrJoin(names, ", "), " : ", absl::StrJoin(types, ", "), "\n  }\n}\n");
    program.constructs = std::move(constructs_);
    return program;
  }

  std::mt19937_64 rng_;
  SdyProgramOptions options_;
  int64_t devices_ = 2;
  std::vector<Axis> axes_;
  std::vector<Value> pool_;
  std::vector<std::string> params_;
  std::string body_;
  int next_id_ = 0;
  int next_group_ = 0;
  std::set<std::string> constructs_;
};

}  // namespace

SdyProgram GenerateSdyProgram(uint64_t seed, const SdyProgramOptions& options) {
  return Generator(seed, options).Run();
}

}  // namespace spmdcheck::fuzz
