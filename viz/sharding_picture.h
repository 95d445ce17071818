// Pictures of a sharding, like jax.debug.visualize_array_sharding but for every HloSharding
// (transposed iotas, partial replication, manual subgroups, any rank, tuples): the array cut
// into its tiles, each tile coloured by its first device and labelled with every device holding
// it (replicas) and its index ranges, and the device mesh with its axes, each device coloured
// the same way. SVG alone, or a self-contained HTML page that adds a device table and
// highlights a device's tiles on hover. Elements carry data-devices / data-device / data-range
// attributes so that tests (and scripts) can read the picture.
#ifndef SPMDCHECK_VIZ_SHARDING_PICTURE_H_
#define SPMDCHECK_VIZ_SHARDING_PICTURE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/mesh.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace spmdcheck::viz {

// Limits of a picture: beyond them the text form (`sharding show`) is the one to read.
inline constexpr int64_t kMaxPictureDevices = 4096;
inline constexpr int64_t kMaxPictureTiles = 4096;

struct ShardingPictureOptions {
  // Devices of shardings without a tile assignment ({replicated}, {manual}); 0: not listed.
  int64_t num_devices = 0;
  // The mesh drawn (its device order and axis names); default: MeshForSharding.
  std::optional<Mesh> mesh;
};

// An SVG document. Errors: a sharding that does not fit the shape, pictures over the limits.
absl::StatusOr<std::string> ShardingSvg(const HloSharding& sharding, const Shape& shape,
                                        const ShardingPictureOptions& options = {});

// A self-contained HTML page: the sharding's text, the picture, the mesh, a table of what each
// device holds.
absl::StatusOr<std::string> ShardingHtml(const HloSharding& sharding, const Shape& shape,
                                         const ShardingPictureOptions& options = {});

}  // namespace spmdcheck::viz

#endif  // SPMDCHECK_VIZ_SHARDING_PICTURE_H_
