#include "oracle/sharded_values.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/tile_assignment.h"
#include "oracle/kernel_util.h"

namespace spmdcheck::oracle {
namespace {

void FillPoison(Literal& literal) {
  const PrimitiveType type = literal.shape().element_type();
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (IsFloatingType(type) || IsComplexType(type)) {
      literal.SetDouble(i, std::nan(""));
    } else if (type == PrimitiveType::kPred) {
      literal.SetBits(i, 1);
    } else {
      literal.SetBits(i, WrapToType(type, 0x5A5A5A5A5A5A5A5Aull));
    }
  }
}

absl::StatusOr<Literal> ShardOfArray(const Literal& global, const HloSharding& sharding,
                                     int64_t device, PaddingFill padding) {
  const Shape& shape = global.shape();
  switch (sharding.kind()) {
    case HloSharding::Kind::kReplicated:
    case HloSharding::Kind::kUnknown:
    case HloSharding::Kind::kUnreduced:
      return global;
    case HloSharding::Kind::kMaximal:
      if (device == sharding.MaximalDevice()) return global;
      return PoisonLike(shape);
    case HloSharding::Kind::kManual:
      return absl::UnimplementedError(
          "a manual sharding has no global view: its shards cannot be derived");
    case HloSharding::Kind::kTuple:
      return absl::InvalidArgumentError("tuple sharding on an array value");
    case HloSharding::Kind::kTiled:
      break;
  }
  if (sharding.HasManualSubgroup()) {
    return absl::UnimplementedError("manual subgroups have no global view");
  }
  std::optional<std::vector<ShardRange>> ranges = sharding.RangesForDevice(shape, device);
  if (!ranges.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device, " holds no tile of sharding ", sharding.ToString(false)));
  }
  Literal local = padding == PaddingFill::kPoison ? PoisonLike(sharding.TileShape(shape))
                                                  : Literal(sharding.TileShape(shape));
  const int64_t width = global.element_byte_width();
  std::vector<int64_t> valid(shape.rank());
  for (int64_t k = 0; k < shape.rank(); ++k) valid[k] = (*ranges)[k].limit - (*ranges)[k].start;
  std::vector<int64_t> source(shape.rank());
  ForEachIndex(valid, [&](absl::Span<const int64_t> q) {
    for (int64_t k = 0; k < shape.rank(); ++k) source[k] = (*ranges)[k].start + q[k];
    std::memcpy(local.raw_data() + LinearIndex(local.shape().dimensions(), q) * width,
                global.raw_data() + LinearIndex(shape.dimensions(), source) * width,
                static_cast<size_t>(width));
  });
  return local;
}

bool ElementsEqual(const Literal& a, int64_t i, const Literal& b, int64_t j,
                   const Tolerance& tolerance) {
  const PrimitiveType type = a.shape().element_type();
  if (IsComplexType(type)) {
    const std::complex<double> x = a.GetComplex(i);
    const std::complex<double> y = b.GetComplex(j);
    if (x == y) return true;
    if (std::isnan(x.real()) || std::isnan(x.imag()) || std::isnan(y.real()) ||
        std::isnan(y.imag())) {
      return false;
    }
    // Within tolerance of the value's magnitude (FFTs mix the parts).
    return std::abs(x - y) <= tolerance.absolute + tolerance.relative * std::abs(x);
  }
  if (IsFloatingType(type)) {
    const double x = a.GetDouble(i);
    const double y = b.GetDouble(j);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    if (x == y) return true;  // Also equates -0 and +0 (all-reduce sums turn -0 into +0).
    return std::fabs(x - y) <= tolerance.absolute + tolerance.relative * std::fabs(x);
  }
  return a.GetBits(i) == b.GetBits(j);
}

// `tolerance` for the elements of one array leaf: its absolute part scaled by the largest finite
// magnitude in `reference` (at least 1). A sum's rounding error is relative to its terms, not to
// its value: where terms cancel, the result is small and its error is not; the leaf's largest
// value stands in for the terms' magnitude (a float pipeline whose dot of tanh values cancels
// to 0.0128 was 7.9e-6 off, above 64 ulps of the result, far below 64 ulps of its terms).
Tolerance ScaledToLeaf(const Tolerance& tolerance, const Literal& reference) {
  if (tolerance.absolute <= 0 || !tolerance.absolute_scales_with_magnitude) return tolerance;
  const PrimitiveType type = reference.shape().element_type();
  if (!IsFloatingType(type) && !IsComplexType(type)) return tolerance;
  double largest = 1;
  for (int64_t i = 0; i < reference.element_count(); ++i) {
    const double m =
        IsComplexType(type) ? std::abs(reference.GetComplex(i)) : std::fabs(reference.GetDouble(i));
    if (std::isfinite(m)) largest = std::max(largest, m);
  }
  Tolerance out = tolerance;
  out.absolute *= largest;
  return out;
}

// Element equality within `tolerance` between an expected array leaf and an actual one; the
// magnitude-scaled tolerance is computed on the first element that misses the plain one (most
// leaves never do).
class LeafComparator {
 public:
  LeafComparator(const Literal& expected, const Literal& actual, const Tolerance& tolerance)
      : expected_(expected), actual_(actual), tolerance_(tolerance) {}

  bool Equal(int64_t expected_index, int64_t actual_index) {
    if (ElementsEqual(expected_, expected_index, actual_, actual_index, tolerance_)) return true;
    if (!tolerance_.absolute_scales_with_magnitude) return false;
    if (!scaled_.has_value()) scaled_ = ScaledToLeaf(tolerance_, expected_);
    return ElementsEqual(expected_, expected_index, actual_, actual_index, *scaled_);
  }

 private:
  const Literal& expected_;
  const Literal& actual_;
  const Tolerance& tolerance_;
  std::optional<Tolerance> scaled_;
};

// Calls fn(leaf literal, leaf path) for every array leaf of a (possibly nested) tuple.
void ForEachLeaf(const Literal& literal, const std::string& path,
                 const std::function<void(const Literal&, const std::string&)>& fn) {
  if (!literal.shape().IsTuple()) {
    fn(literal, path);
    return;
  }
  for (int64_t i = 0; i < literal.tuple_size(); ++i) {
    ForEachLeaf(literal.tuple_elements()[i], absl::StrCat(path, "{", i, "}"), fn);
  }
}

}  // namespace

Literal PoisonLike(const Shape& shape) {
  Literal literal(shape);
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes()) elements.push_back(PoisonLike(element));
    return Literal::Tuple(std::move(elements));
  }
  if (shape.IsArray()) FillPoison(literal);
  return literal;
}

absl::StatusOr<Literal> ShardOf(const Literal& global, const HloSharding& sharding, int64_t device,
                                PaddingFill padding) {
  if (!global.shape().IsTuple()) return ShardOfArray(global, sharding, device, padding);
  // Tuple: per-leaf shardings (a tuple sharding lists leaves in order), or one for every leaf.
  std::vector<const Literal*> leaves;
  std::function<void(const Literal&)> collect = [&](const Literal& l) {
    if (l.shape().IsTuple()) {
      for (const Literal& e : l.tuple_elements()) collect(e);
    } else {
      leaves.push_back(&l);
    }
  };
  collect(global);
  if (sharding.IsTuple() && sharding.tuple_elements().size() != leaves.size()) {
    return absl::InvalidArgumentError("tuple sharding does not match the value's leaves");
  }
  size_t next = 0;
  std::function<absl::StatusOr<Literal>(const Literal&)> build =
      [&](const Literal& l) -> absl::StatusOr<Literal> {
    if (!l.shape().IsTuple()) {
      const HloSharding& leaf_sharding =
          sharding.IsTuple() ? sharding.tuple_elements()[next] : sharding;
      ++next;
      return ShardOfArray(l, leaf_sharding, device, padding);
    }
    std::vector<Literal> elements;
    for (const Literal& e : l.tuple_elements()) {
      absl::StatusOr<Literal> element = build(e);
      if (!element.ok()) return element.status();
      elements.push_back(*std::move(element));
    }
    return Literal::Tuple(std::move(elements));
  };
  return build(global);
}

absl::StatusOr<std::optional<ElementMismatch>> CompareShard(const Literal& local,
                                                            const Literal& global,
                                                            const HloSharding& sharding,
                                                            int64_t device,
                                                            const Tolerance& tolerance) {
  std::vector<std::pair<const Literal*, std::string>> global_leaves, local_leaves;
  ForEachLeaf(global, "", [&](const Literal& l, const std::string& p) {
    global_leaves.push_back({&l, p});
  });
  ForEachLeaf(local, "", [&](const Literal& l, const std::string& p) {
    local_leaves.push_back({&l, p});
  });
  if (global_leaves.size() != local_leaves.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device, " holds ", local.shape().ToString(false),
                     " but the global value is ", global.shape().ToString(false)));
  }
  if (sharding.IsTuple() && sharding.tuple_elements().size() != global_leaves.size()) {
    return absl::InvalidArgumentError("tuple sharding does not match the value's leaves");
  }
  for (size_t leaf = 0; leaf < global_leaves.size(); ++leaf) {
    const Literal& g = *global_leaves[leaf].first;
    const Literal& l = *local_leaves[leaf].first;
    const HloSharding& s = sharding.IsTuple() ? sharding.tuple_elements()[leaf] : sharding;
    if (s.IsManual() || s.HasManualSubgroup()) {
      return absl::UnimplementedError("a manual sharding has no global view to compare with");
    }
    if (s.IsMaximal() && s.MaximalDevice() != device) continue;
    const Shape expected_shape = s.IsTiled() ? s.TileShape(g.shape()) : g.shape();
    if (!expected_shape.Compatible(l.shape())) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", device, " holds ", l.shape().ToString(false),
                       " but its shard of ", g.shape().ToString(false), " under ",
                       s.ToString(false), " is ", expected_shape.ToString(false)));
    }
    std::optional<std::vector<ShardRange>> ranges = s.RangesForDevice(g.shape(), device);
    if (!ranges.has_value()) continue;
    LeafComparator elements(g, l, tolerance);
    const int64_t rank = g.shape().rank();
    const int64_t width = g.element_byte_width();
    std::vector<int64_t> valid(rank);
    for (int64_t k = 0; k < rank; ++k) valid[k] = (*ranges)[k].limit - (*ranges)[k].start;
    std::optional<ElementMismatch> mismatch;
    std::vector<int64_t> source(rank);
    // Row by row (the last dim is contiguous in both), first mismatch in row-major order.
    std::vector<int64_t> rows = valid;
    const int64_t row_length = rank > 0 ? valid[rank - 1] : 1;
    if (rank > 0) rows[rank - 1] = row_length > 0 ? 1 : 0;
    ForEachIndex(rows, [&](absl::Span<const int64_t> row) {
      if (mismatch.has_value()) return;
      for (int64_t k = 0; k < rank; ++k) source[k] = (*ranges)[k].start + row[k];
      const int64_t g0 = LinearIndex(g.shape().dimensions(), source);
      const int64_t l0 = LinearIndex(l.shape().dimensions(), row);
      // Identical bytes are equal elements (the common case); element by element otherwise
      // (NaNs, -0 vs +0, tolerances).
      if (std::memcmp(g.raw_data() + g0 * width, l.raw_data() + l0 * width,
                      static_cast<size_t>(row_length * width)) == 0) {
        return;
      }
      for (int64_t j = 0; j < row_length; ++j) {
        if (elements.Equal(g0 + j, l0 + j)) continue;
        std::vector<int64_t> q(row.begin(), row.end());
        if (rank > 0) {
          q[rank - 1] += j;
          source[rank - 1] += j;
        }
        mismatch = ElementMismatch{source, std::move(q), g.ElementToString(g0 + j),
                                   l.ElementToString(l0 + j), global_leaves[leaf].second};
        return;
      }
    });
    if (mismatch.has_value()) return mismatch;
  }
  return std::optional<ElementMismatch>();
}

std::optional<ElementMismatch> CompareLiterals(const Literal& expected, const Literal& actual,
                                               const Tolerance& tolerance) {
  std::vector<std::pair<const Literal*, std::string>> e_leaves, a_leaves;
  ForEachLeaf(expected, "", [&](const Literal& l, const std::string& p) {
    e_leaves.push_back({&l, p});
  });
  ForEachLeaf(actual, "", [&](const Literal& l, const std::string& p) {
    a_leaves.push_back({&l, p});
  });
  for (size_t leaf = 0; leaf < e_leaves.size() && leaf < a_leaves.size(); ++leaf) {
    const Literal& e = *e_leaves[leaf].first;
    const Literal& a = *a_leaves[leaf].first;
    if (!e.shape().Compatible(a.shape())) {
      return ElementMismatch{
          {}, {}, e.shape().ToString(false), a.shape().ToString(false), e_leaves[leaf].second};
    }
    // Identical bytes are equal elements (the common case).
    if (e.element_count() > 0 &&
        std::memcmp(e.raw_data(), a.raw_data(),
                    static_cast<size_t>(e.element_count() * e.element_byte_width())) == 0) {
      continue;
    }
    LeafComparator elements(e, a, tolerance);
    for (int64_t i = 0; i < e.element_count(); ++i) {
      if (!elements.Equal(i, i)) {
        std::vector<int64_t> index = MultiIndex(e.shape().dimensions(), i);
        return ElementMismatch{index, index, e.ElementToString(i), a.ElementToString(i),
                               e_leaves[leaf].second};
      }
    }
  }
  if (e_leaves.size() != a_leaves.size()) {
    return ElementMismatch{
        {}, {}, expected.shape().ToString(false), actual.shape().ToString(false), ""};
  }
  return std::nullopt;
}

}  // namespace spmdcheck::oracle
