// TileEncoding: a TileAssignment as linear integer arithmetic over a symbolic tile position.
// An iota `[dims]<=[R]T(perm)` is encoded without expanding it: device digits r_j in [0, R_j),
// device = sum r_j * stride_j, tile linear index = the digits in transposed order linearised,
// and (optionally) tile index digits t_i in [0, dims_i) with the same linear index. An explicit
// device list is encoded as a table (an if-then-else chain over the linear index).
#ifndef SPMDCHECK_SMT_TILE_ENCODING_H_
#define SPMDCHECK_SMT_TILE_ENCODING_H_

#include <z3++.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "ir/tile_assignment.h"

namespace spmdcheck::smt {

struct TileEncoding {
  z3::expr linear;              // Row-major linear tile position, in [0, num_elements).
  std::vector<z3::expr> index;  // Tile index digits (empty unless requested).
  z3::expr device;              // Device at that position.
  z3::expr_vector constraints;  // Must be asserted for the above to mean what they say.
};

// Fresh variables named `<prefix>...`. With `with_index`, also the tile multi-index digits.
TileEncoding EncodeTileAssignment(z3::context& ctx, const TileAssignment& tiles,
                                  const std::string& prefix, bool with_index);

// True iff device `d` occurs in the assignment (iota: 0 <= d < N; explicit: d is listed).
z3::expr DeviceOccurs(z3::context& ctx, const TileAssignment& tiles, const z3::expr& d);

// sum digits[i] * stride_i, row-major over `sizes`.
z3::expr RowMajor(z3::context& ctx, absl::Span<const z3::expr> digits,
                  absl::Span<const int64_t> sizes);

// A table lookup: the value at `key` of `values` (keys 0..n-1), as an if-then-else chain.
z3::expr TableLookup(z3::context& ctx, const z3::expr& key, absl::Span<const int64_t> values);

// Integer value of `e` in `model` (model completion on).
int64_t ModelInt(const z3::model& model, const z3::expr& e);

}  // namespace spmdcheck::smt

#endif  // SPMDCHECK_SMT_TILE_ENCODING_H_
