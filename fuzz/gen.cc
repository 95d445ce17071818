#include "fuzz/gen.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/tile_assignment.h"

namespace spmdcheck {

void showValue(const Shape& shape, std::ostream& os) { os << shape.ToString(); }
void showValue(const Mesh& mesh, std::ostream& os) { os << mesh.ToString(); }
void showValue(const HloSharding& sharding, std::ostream& os) { os << sharding.ToString(); }
void showValue(const ReplicaGroups& groups, std::ostream& os) { os << groups.ToString(); }

namespace fuzz {
namespace {

using rc::Gen;
namespace gen = rc::gen;

// Generators are built to be valid by construction; a failure here is a bug in this file or in
// the IR factories, so it stops loudly instead of silently producing something else.
template <typename T>
T Must(absl::StatusOr<T> v, const char* what) {
  if (!v.ok()) {
    std::fprintf(stderr, "spmdcheck::fuzz generator bug (%s): %s\n", what,
                 std::string(v.status().message()).c_str());
    std::abort();
  }
  return *std::move(v);
}

// Uniform in [lo, hi) at every size (inRange alone scales with the size); shrinks towards lo.
template <typename T>
Gen<T> Uniform(T lo, T hi) {
  return gen::resize(100, gen::inRange<T>(lo, hi));
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  }
  if (n > 1) out.push_back(n);
  if (out.empty()) out.push_back(1);
  return out;
}

std::vector<int64_t> Permute(const std::vector<int64_t>& v, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  out.reserve(perm.size());
  for (int64_t i : perm) out.push_back(v[i]);
  return out;
}

// A transposed iota over `dims`: reshape = the prime factors of prod(dims) in the order
// `factor_order`, transposed by `perm` (both permutations of the factor list).
TileAssignment TransposedIota(const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& factor_order,
                              const std::vector<int64_t>& perm) {
  const std::vector<int64_t> reshape = Permute(PrimeFactors(Product(dims)), factor_order);
  return Must(TileAssignment::Iota(dims, reshape, perm), "transposed iota");
}

// A device array of shape `dims` (product = the mesh's device count): an explicit random
// permutation, a transposed iota, or the mesh's own device order reshaped.
Gen<TileAssignment> GenDeviceArray(const std::vector<int64_t>& dims, const Mesh& mesh) {
  const int64_t n = Product(dims);
  const int64_t factors = static_cast<int64_t>(PrimeFactors(n).size());
  return gen::mapcat(Uniform<int>(0, 3), [=](int form) -> Gen<TileAssignment> {
    switch (form) {
      case 0:  // Mesh order (shrinks here first: simplest).
        return gen::just(mesh.devices().Reshape(dims));
      case 1:
        return gen::map(gen::pair(GenPermutation(factors), GenPermutation(factors)),
                        [dims](const std::pair<std::vector<int64_t>, std::vector<int64_t>>& p) {
                          return TransposedIota(dims, p.first, p.second);
                        });
      default:
        return gen::map(GenPermutation(n), [dims](std::vector<int64_t> devices) {
          return Must(TileAssignment::Explicit(dims, std::move(devices)), "explicit devices");
        });
    }
  });
}

Gen<int64_t> GenDim() {
  return gen::weightedOneOf<int64_t>({{1, gen::just<int64_t>(0)},
                                      {6, gen::just<int64_t>(1)},
                                      {14, Uniform<int64_t>(2, 9)},
                                      {5, Uniform<int64_t>(9, 40)}});
}

Gen<int64_t> GenAxisSize() {
  return gen::weightedElement<int64_t>(
      {{3, 1}, {8, 2}, {4, 3}, {6, 4}, {2, 5}, {2, 6}, {1, 7}, {4, 8}, {1, 16}, {1, 32}});
}

// Array sharding via Mesh::ShardingFor: axis a goes to array dim target[a] (-1 = unused, giving
// replication), axes of one dim ordered by `order`.
Gen<HloSharding> GenMeshSharding(const Shape& shape, const Mesh& mesh) {
  const int64_t rank = shape.rank();
  const int64_t num_axes = static_cast<int64_t>(mesh.axes().size());
  return gen::map(
      gen::pair(gen::container<std::vector<int64_t>>(num_axes, Uniform<int64_t>(-1, rank)),
                GenPermutation(num_axes)),
      [mesh, rank](const std::pair<std::vector<int64_t>, std::vector<int64_t>>& p) {
        std::vector<std::vector<std::string>> dim_axes(rank);
        for (int64_t a : p.second) {
          if (p.first[a] >= 0) dim_axes[p.first[a]].push_back(mesh.axes()[a].name);
        }
        return Must(mesh.ShardingFor(dim_axes), "Mesh::ShardingFor");
      });
}

// Random tile dims whose product divides the device count; the rest of the devices go to a
// trailing replicated / manual / {manual, replicated} group (or into the last data dim).
Gen<HloSharding> GenTileDimsSharding(const Shape& shape, const Mesh& mesh) {
  const int64_t rank = shape.rank();
  const int64_t n = mesh.num_devices();
  return gen::mapcat(
      gen::tuple(gen::container<std::vector<int64_t>>(rank, Uniform<int64_t>(0, 1000)),
                 Uniform<int>(0, 5), Uniform<int64_t>(0, 1000)),
      [=](const std::tuple<std::vector<int64_t>, int, int64_t>& t) -> Gen<HloSharding> {
        const auto& [picks, form_in, pick2] = t;
        int form = form_in;
        std::vector<int64_t> tile;
        int64_t remaining = n;
        for (int64_t pick : picks) {
          const std::vector<int64_t> divs = Divisors(remaining);
          const int64_t d = divs[pick % static_cast<int64_t>(divs.size())];
          tile.push_back(d);
          remaining /= d;
        }
        if (form == 0 && remaining > 1) {
          if (rank > 0) {
            tile.back() *= remaining;
            remaining = 1;
          } else {
            form = 1;
          }
        }
        std::vector<int64_t> dims = tile;
        std::vector<SubgroupType> types;
        switch (form) {
          case 0:
            break;
          case 1:
            dims.push_back(remaining);
            break;
          case 2:
            dims.push_back(remaining);
            types = {SubgroupType::kManual};
            break;
          default: {
            const std::vector<int64_t> divs = Divisors(remaining);
            const int64_t m = divs[pick2 % static_cast<int64_t>(divs.size())];
            dims.push_back(m);
            dims.push_back(remaining / m);
            types =
                form == 3
                    ? std::vector<SubgroupType>{SubgroupType::kManual, SubgroupType::kReplicated}
                    : std::vector<SubgroupType>{SubgroupType::kReplicated, SubgroupType::kManual};
            break;
          }
        }
        return gen::map(GenDeviceArray(dims, mesh), [form, types](const TileAssignment& ta) {
          if (form == 0) return HloSharding::Tile(ta);
          if (form == 1) return HloSharding::PartialTile(ta);
          return HloSharding::Subgroup(ta, types);
        });
      });
}

Gen<HloSharding> GenArraySharding(const Shape& shape, const Mesh& mesh) {
  return gen::weightedOneOf<HloSharding>(
      {{2, gen::just(HloSharding::Replicate())},
       {1, gen::map(Uniform<int64_t>(0, mesh.num_devices()),
                    [](int64_t d) { return HloSharding::AssignDevice(d); })},
       {1, gen::just(HloSharding::Manual())},
       {6, GenMeshSharding(shape, mesh)},
       {8, GenTileDimsSharding(shape, mesh)}});
}

// Only what the mesh itself expresses: no random tile dims or device orders, no manual.
Gen<HloSharding> GenOneMeshArraySharding(const Shape& shape, const Mesh& mesh) {
  return gen::weightedOneOf<HloSharding>(
      {{2, gen::just(HloSharding::Replicate())},
       {1, gen::map(Uniform<int64_t>(0, mesh.num_devices()),
                    [](int64_t d) { return HloSharding::AssignDevice(d); })},
       {10, GenMeshSharding(shape, mesh)}});
}

// Flat tuple shardings (one element per array leaf, nested tuples flattened) for tuple shapes.
Gen<HloSharding> GenShardingForLeaves(const Shape& shape, const Mesh& mesh,
                                      Gen<HloSharding> (*array_gen)(const Shape& shape,
                                                                    const Mesh& mesh)) {
  if (!shape.IsTuple()) return array_gen(shape, mesh);
  std::vector<Gen<HloSharding>> elements;
  std::vector<const Shape*> stack = {&shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (!s->IsTuple()) {
      elements.push_back(array_gen(*s, mesh));
      continue;
    }
    for (auto it = s->tuple_shapes().rbegin(); it != s->tuple_shapes().rend(); ++it) {
      stack.push_back(&*it);
    }
  }
  return gen::exec([elements] {
    std::vector<HloSharding> out;
    for (const auto& g : elements) out.push_back(*g);
    return HloSharding::Tuple(std::move(out));
  });
}

}  // namespace

Gen<std::vector<int64_t>> GenPermutation(int64_t n) {
  // Sort positions by random keys (stable): all-equal keys, the shrink target, give the identity.
  return gen::map(gen::container<std::vector<int64_t>>(n, Uniform<int64_t>(0, n + 1)),
                  [](const std::vector<int64_t>& keys) {
                    std::vector<int64_t> perm(keys.size());
                    std::iota(perm.begin(), perm.end(), 0);
                    std::stable_sort(perm.begin(), perm.end(),
                                     [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
                    return perm;
                  });
}

Gen<PrimitiveType> GenElementType() {
  return gen::element(
      PrimitiveType::kF32, PrimitiveType::kS32, PrimitiveType::kPred, PrimitiveType::kBF16,
      PrimitiveType::kF16, PrimitiveType::kF64, PrimitiveType::kS8, PrimitiveType::kS16,
      PrimitiveType::kS64, PrimitiveType::kU8, PrimitiveType::kU16, PrimitiveType::kU32,
      PrimitiveType::kU64, PrimitiveType::kS4, PrimitiveType::kU4, PrimitiveType::kS2,
      PrimitiveType::kU2, PrimitiveType::kC64, PrimitiveType::kC128, PrimitiveType::kF8E5M2,
      PrimitiveType::kF8E4M3FN, PrimitiveType::kF8E4M3B11FNUZ, PrimitiveType::kF8E5M2FNUZ,
      PrimitiveType::kF8E4M3FNUZ);
}

Gen<Shape> GenShape(int64_t max_rank) {
  return gen::mapcat(Uniform<int64_t>(0, max_rank + 1), [](int64_t rank) {
    return gen::map(
        gen::pair(GenElementType(), gen::container<std::vector<int64_t>>(rank, GenDim())),
        [](std::pair<PrimitiveType, std::vector<int64_t>> p) {
          std::vector<int64_t>& dims = p.second;
          while (Product(dims) > kMaxGenElements) {
            auto it = std::max_element(dims.begin(), dims.end());
            *it = (*it + 1) / 2;
          }
          return Shape::Array(p.first, dims);
        });
  });
}

Gen<Shape> GenTupleShape() {
  return gen::map(
      gen::pair(gen::mapcat(Uniform<int64_t>(0, 4),
                            [](int64_t count) {
                              return gen::container<std::vector<Shape>>(count, GenShape(3));
                            }),
                Uniform<int>(0, 6)),
      [](std::pair<std::vector<Shape>, int> p) {
        std::vector<Shape> elements = std::move(p.first);
        if (p.second == 0 && !elements.empty()) {  // Nest: the first element becomes a tuple.
          elements[0] = Shape::Tuple({elements[0], Shape::Scalar(PrimitiveType::kS32)});
        }
        return Shape::Tuple(std::move(elements));
      });
}

Gen<Shape> GenShapeOrTuple() {
  return gen::weightedOneOf<Shape>({{5, GenShape()}, {1, GenTupleShape()}});
}

Gen<Mesh> GenMesh() {
  return gen::mapcat(Uniform<int64_t>(1, 5), [](int64_t k) {
    return gen::mapcat(
        gen::container<std::vector<int64_t>>(k, GenAxisSize()), [k](std::vector<int64_t> sizes) {
          while (Product(sizes) > kMaxGenDevices) {
            auto it = std::max_element(sizes.begin(), sizes.end());
            *it /= 2;
          }
          return gen::map(
              gen::tuple(gen::arbitrary<bool>(), GenPermutation(k), GenPermutation(k)),
              [sizes, k](const std::tuple<bool, std::vector<int64_t>, std::vector<int64_t>>& t) {
                static const char* const kNames[] = {"x", "y", "z", "w"};
                std::vector<MeshAxis> axes;
                for (int64_t i = 0; i < k; ++i) axes.push_back({kNames[i], sizes[i]});
                std::optional<TileAssignment> devices;
                if (std::get<0>(t)) {  // Transposed iota: reshape = permuted sizes.
                  devices = Must(
                      TileAssignment::Iota(sizes, Permute(sizes, std::get<1>(t)), std::get<2>(t)),
                      "mesh iota");
                }
                return Must(Mesh::Create(std::move(axes), std::move(devices)), "Mesh::Create");
              });
        });
  });
}

Gen<HloSharding> GenShardingFor(const Shape& shape, const Mesh& mesh) {
  return GenShardingForLeaves(shape, mesh, GenArraySharding);
}

Gen<HloSharding> GenOneMeshShardingFor(const Shape& shape, const Mesh& mesh) {
  return GenShardingForLeaves(shape, mesh, GenOneMeshArraySharding);
}

Gen<ReplicaGroups> GenReplicaGroups(int64_t num_devices) {
  const std::vector<int64_t> divs = Divisors(num_devices);
  const int64_t factors = static_cast<int64_t>(PrimeFactors(num_devices).size());
  return gen::mapcat(
      gen::pair(gen::elementOf(divs), gen::arbitrary<bool>()),
      [=](std::pair<int64_t, bool> p) -> Gen<ReplicaGroups> {
        const int64_t size = p.first;
        const int64_t count = num_devices / size;
        if (p.second) {
          return gen::map(gen::pair(GenPermutation(factors), GenPermutation(factors)),
                          [=](const std::pair<std::vector<int64_t>, std::vector<int64_t>>& q) {
                            const std::vector<int64_t> reshape =
                                Permute(PrimeFactors(num_devices), q.first);
                            return ReplicaGroups(
                                Must(IotaTileAssignment::Create({count, size}, reshape, q.second),
                                     "replica group iota"));
                          });
        }
        return gen::map(GenPermutation(num_devices), [=](const std::vector<int64_t>& perm) {
          std::vector<std::vector<int64_t>> groups(count);
          for (int64_t i = 0; i < num_devices; ++i) groups[i / size].push_back(perm[i]);
          return ReplicaGroups(std::move(groups));
        });
      });
}

Gen<ShardingCase> GenShardingCase() {
  return gen::mapcat(gen::pair(GenShapeOrTuple(), GenMesh()), [](const std::pair<Shape, Mesh>& p) {
    return gen::map(GenShardingFor(p.first, p.second), [p](HloSharding s) {
      return ShardingCase{p.first, p.second, std::move(s)};
    });
  });
}

void showValue(const ShardingCase& c, std::ostream& os) {
  os << "shape=" << c.shape.ToString() << " mesh=" << c.mesh.ToString()
     << " sharding=" << c.sharding.ToString();
}

}  // namespace fuzz
}  // namespace spmdcheck
