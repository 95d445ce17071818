#include "smt/tile_encoding.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace spmdcheck::smt {

z3::expr RowMajor(z3::context& ctx, absl::Span<const z3::expr> digits,
                  absl::Span<const int64_t> sizes) {
  z3::expr sum = ctx.int_val(static_cast<int64_t>(0));
  int64_t stride = 1;
  for (size_t k = digits.size(); k-- > 0;) {
    sum = sum + digits[k] * ctx.int_val(stride);
    stride *= sizes[k];
  }
  return sum;
}

z3::expr TableLookup(z3::context& ctx, const z3::expr& key, absl::Span<const int64_t> values) {
  if (values.empty()) return ctx.int_val(static_cast<int64_t>(-1));
  z3::expr result = ctx.int_val(values.back());
  for (size_t i = values.size() - 1; i-- > 0;) {
    result = z3::ite(key == ctx.int_val(static_cast<int64_t>(i)), ctx.int_val(values[i]), result);
  }
  return result;
}

int64_t ModelInt(const z3::model& model, const z3::expr& e) {
  return model.eval(e, true).get_numeral_int64();
}

namespace {

z3::expr Bounded(z3::context& ctx, const z3::expr& v, int64_t size) {
  return v >= ctx.int_val(static_cast<int64_t>(0)) && v < ctx.int_val(size);
}

}  // namespace

TileEncoding EncodeTileAssignment(z3::context& ctx, const TileAssignment& tiles,
                                  const std::string& prefix, bool with_index) {
  z3::expr_vector constraints(ctx);
  std::vector<z3::expr> index;
  z3::expr linear = ctx.int_const(absl::StrCat(prefix, "lin").c_str());
  z3::expr device = ctx.int_val(static_cast<int64_t>(0));
  if (tiles.is_iota()) {
    const IotaTileAssignment& iota = *tiles.iota();
    const absl::Span<const int64_t> reshape = iota.reshape_dims();
    const absl::Span<const int64_t> perm = iota.perm();
    std::vector<z3::expr> r;
    for (size_t j = 0; j < reshape.size(); ++j) {
      r.push_back(ctx.int_const(absl::StrCat(prefix, "r", j).c_str()));
      constraints.push_back(Bounded(ctx, r.back(), reshape[j]));
    }
    device = RowMajor(ctx, r, reshape);
    std::vector<z3::expr> transposed;
    std::vector<int64_t> transposed_sizes;
    for (int64_t p : perm) {
      transposed.push_back(r[p]);
      transposed_sizes.push_back(reshape[p]);
    }
    constraints.push_back(linear == RowMajor(ctx, transposed, transposed_sizes));
  } else {
    constraints.push_back(Bounded(ctx, linear, tiles.num_elements()));
    const std::vector<int64_t> devices = tiles.Devices();
    device = TableLookup(ctx, linear, devices);
  }
  if (with_index) {
    for (int64_t i = 0; i < tiles.num_dimensions(); ++i) {
      index.push_back(ctx.int_const(absl::StrCat(prefix, "t", i).c_str()));
      constraints.push_back(Bounded(ctx, index.back(), tiles.dim(i)));
    }
    constraints.push_back(linear == RowMajor(ctx, index, tiles.dims()));
  }
  return TileEncoding{linear, std::move(index), device, constraints};
}

z3::expr DeviceOccurs(z3::context& ctx, const TileAssignment& tiles, const z3::expr& d) {
  if (tiles.is_iota()) {
    return d >= ctx.int_val(static_cast<int64_t>(0)) && d < ctx.int_val(tiles.num_elements());
  }
  z3::expr_vector options(ctx);
  for (int64_t v : tiles.Devices()) options.push_back(d == ctx.int_val(v));
  return z3::mk_or(options);
}

}  // namespace spmdcheck::smt
