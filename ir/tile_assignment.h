// TileAssignment: an N-dimensional array of device ids, held either as a compact iota
// (`[dims]<=[reshape_dims]T(perm)`) or as an explicit row-major list. Queries on an iota
// (device at a tile, tile of a device) are closed-form and never expand the array.
#ifndef SPMDCHECK_IR_TILE_ASSIGNMENT_H_
#define SPMDCHECK_IR_TILE_ASSIGNMENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace spmdcheck {

// The iota `[dims]<=[reshape_dims]T(perm)`: the sequence 0..N-1 viewed row-major with shape
// reshape_dims, transposed so that output axis i is input axis perm[i] (NumPy convention),
// flattened and viewed with shape dims. Always held in canonical form: reshape dims of size 1
// dropped and runs of consecutive perm entries merged (XLA's CanonicalizeIotaDims).
class IotaTileAssignment {
 public:
  // Validates that prod(dims) == prod(reshape_dims) and that perm is a permutation.
  static absl::StatusOr<IotaTileAssignment> Create(absl::Span<const int64_t> dims,
                                                   absl::Span<const int64_t> reshape_dims,
                                                   absl::Span<const int64_t> perm);
  // The plain iota 0..N-1 viewed with shape dims.
  static IotaTileAssignment Plain(absl::Span<const int64_t> dims);

  absl::Span<const int64_t> dims() const { return dims_; }
  absl::Span<const int64_t> reshape_dims() const { return reshape_dims_; }
  absl::Span<const int64_t> perm() const { return perm_; }
  int64_t num_elements() const { return num_elements_; }

  // Device at row-major linear tile position `linear`.
  int64_t ValueAtLinear(int64_t linear) const;
  // Row-major linear tile position of `device` (a value in [0, N)).
  int64_t LinearIndexOf(int64_t device) const;

  // `[dims]<=[reshape]` plus `T(perm)` when the reshape has more than one dim.
  std::string ToString() const;

  bool operator==(const IotaTileAssignment& other) const = default;

 private:
  // Ranks up to kInlineRank are held without allocating (parsers build many small iotas).
  static constexpr size_t kInlineRank = 4;
  using Dims = absl::InlinedVector<int64_t, kInlineRank>;

  IotaTileAssignment() = default;
  Dims dims_;
  Dims reshape_dims_;
  Dims perm_;
  Dims transposed_dims_;  // reshape_dims_[perm_[i]]
  Dims reshape_strides_;  // Row-major strides of reshape_dims_.
  int64_t num_elements_ = 1;
};

class TileAssignment {
 public:
  // A 1-element assignment holding device 0.
  TileAssignment();
  // Plain iota over `dims`.
  explicit TileAssignment(IotaTileAssignment iota);
  static TileAssignment Iota(absl::Span<const int64_t> dims) {
    return TileAssignment(IotaTileAssignment::Plain(dims));
  }
  static absl::StatusOr<TileAssignment> Iota(absl::Span<const int64_t> dims,
                                             absl::Span<const int64_t> reshape_dims,
                                             absl::Span<const int64_t> perm);
  // An explicit row-major device list; devices.size() must equal prod(dims).
  static absl::StatusOr<TileAssignment> Explicit(absl::Span<const int64_t> dims,
                                                 std::vector<int64_t> devices);

  absl::Span<const int64_t> dims() const { return dims_; }
  int64_t num_dimensions() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t i) const { return dims_[i]; }
  int64_t num_elements() const { return num_elements_; }

  // True when held as an iota (no array is stored).
  bool is_iota() const { return iota_ != nullptr; }
  // The iota, or nullptr when the assignment is an explicit list.
  const IotaTileAssignment* iota() const { return iota_.get(); }

  int64_t DeviceAt(absl::Span<const int64_t> tile_index) const;
  int64_t DeviceAtLinear(int64_t linear) const;
  // Tile index of `device`, or nullopt when the device does not occur. Iota: closed form.
  // Explicit: a device->position map built once at construction.
  std::optional<std::vector<int64_t>> TileIndexOf(int64_t device) const;
  std::optional<int64_t> LinearIndexOf(int64_t device) const;
  // Largest device id + 1 (N for an iota).
  int64_t DeviceBound() const { return device_bound_; }
  // True when every device occurs at most once (always true for an iota).
  bool DevicesDistinct() const { return devices_distinct_; }

  // Row-major device list (materialises an iota).
  std::vector<int64_t> Devices() const;

  // Same device order, new dims (prod must match; checked by the caller).
  TileAssignment Reshape(absl::Span<const int64_t> new_dims) const;
  // Result dim i = this dim perm[i].
  TileAssignment Transpose(absl::Span<const int64_t> perm) const;

  // The same assignment held as an iota when its device array is one, else itself.
  TileAssignment Canonical() const;
  // The iota describing this device array, when there is one.
  std::optional<IotaTileAssignment> AsIota() const;

  // Text without the `devices=` prefix: `[2,2]<=[4]` or `[2,2]0,2,1,3`, in the form held.
  std::string ToString() const;

  // Same dims and same device at every position (compares values, not forms).
  bool operator==(const TileAssignment& other) const;

 private:
  absl::InlinedVector<int64_t, 4> dims_;
  int64_t num_elements_ = 1;
  // Immutable and shared between copies (copying an assignment allocates only dims_).
  std::shared_ptr<const IotaTileAssignment> iota_;
  std::shared_ptr<const std::vector<int64_t>> devices_;  // Set iff !iota_.
  std::shared_ptr<const absl::flat_hash_map<int64_t, int64_t>> position_of_;
  int64_t device_bound_ = 1;
  bool devices_distinct_ = true;
};

// Finds reshape dims and perm such that `devices` (a flattened array of N elements) equals the
// iota `[N]<=[reshape]T(perm)`; nullopt when it is not such an iota.
std::optional<IotaTileAssignment> DetectIota(absl::Span<const int64_t> dims,
                                             absl::Span<const int64_t> devices);

// Row-major linear index <-> multi-index helpers.
int64_t LinearIndex(absl::Span<const int64_t> dims, absl::Span<const int64_t> index);
std::vector<int64_t> MultiIndex(absl::Span<const int64_t> dims, int64_t linear);

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_TILE_ASSIGNMENT_H_
