// TileAssignment / IotaTileAssignment: the worked examples of the spec (§2.2) against device lists
// written out by hand, iota canonicalisation (§2.1), closed-form queries on a 65536-device iota,
// and properties over random iotas.
#include "ir/tile_assignment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace spmdcheck {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

TileAssignment MustIota(std::vector<int64_t> dims, std::vector<int64_t> reshape,
                        std::vector<int64_t> perm) {
  absl::StatusOr<TileAssignment> t = TileAssignment::Iota(dims, reshape, perm);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : TileAssignment();
}

// --- Test-local reference helpers (independent of the library's helpers). -------------------

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::vector<int64_t> Digits(absl::Span<const int64_t> radix, int64_t value) {
  std::vector<int64_t> out(radix.size());
  for (size_t k = radix.size(); k-- > 0;) {
    out[k] = value % radix[k];
    value /= radix[k];
  }
  return out;
}

int64_t Undigits(const std::vector<int64_t>& radix, const std::vector<int64_t>& digits) {
  int64_t v = 0;
  for (size_t k = 0; k < radix.size(); ++k) v = v * radix[k] + digits[k];
  return v;
}

// NumPy: np.arange(N).reshape(reshape).transpose(perm).flatten().
std::vector<int64_t> ReferenceIota(const std::vector<int64_t>& reshape,
                                   const std::vector<int64_t>& perm) {
  std::vector<int64_t> transposed(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) transposed[i] = reshape[perm[i]];
  const int64_t n = Product(reshape);
  std::vector<int64_t> out(n);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<int64_t> tindex = Digits(transposed, t);
    std::vector<int64_t> r(reshape.size());
    for (size_t i = 0; i < perm.size(); ++i) r[perm[i]] = tindex[i];
    out[t] = Undigits(reshape, r);
  }
  return out;
}

// --- §2.2 worked examples ------------------------------------------------------------------

// Example A's full row-major list, written out from the spec's table.
const std::vector<int64_t> kExampleAList = {
    0,  1,  2,  3,  4,  5,  6,  7,  32, 33, 34, 35, 36, 37, 38, 39, 8,  9,  10, 11, 12, 13,
    14, 15, 40, 41, 42, 43, 44, 45, 46, 47, 16, 17, 18, 19, 20, 21, 22, 23, 48, 49, 50, 51,
    52, 53, 54, 55, 24, 25, 26, 27, 28, 29, 30, 31, 56, 57, 58, 59, 60, 61, 62, 63};

const std::vector<int64_t> kExampleBList = {
    0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
    11, 43, 12, 44, 13, 45, 14, 46, 15, 47, 16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53,
    22, 54, 23, 55, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};

TEST(TileAssignmentExamples, ExampleA) {
  TileAssignment a = MustIota({4, 2, 8}, {2, 4, 8}, {1, 0, 2});
  EXPECT_TRUE(a.is_iota());
  EXPECT_THAT(a.Devices(), ElementsAreArray(kExampleAList));
  EXPECT_EQ(a.ToString(), "[4,2,8]<=[2,4,8]T(1,0,2)");  // Already canonical.
  // Formula: device at (i,j,k) = 32j + 8i + k; inverse j = d/32, i = (d/8)%4, k = d%8.
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t k = 0; k < 8; ++k) {
        const int64_t d = 32 * j + 8 * i + k;
        EXPECT_EQ(a.DeviceAt({i, j, k}), d);
        EXPECT_THAT(*a.TileIndexOf(d), ElementsAre(i, j, k));
      }
    }
  }
  EXPECT_EQ(a.DeviceBound(), 64);
  EXPECT_FALSE(a.TileIndexOf(64).has_value());
  EXPECT_FALSE(a.TileIndexOf(-1).has_value());
}

TEST(TileAssignmentExamples, ExampleB) {
  TileAssignment b = MustIota({4, 8, 2}, {2, 32}, {1, 0});
  EXPECT_THAT(b.Devices(), ElementsAreArray(kExampleBList));
  EXPECT_EQ(b.ToString(), "[4,8,2]<=[2,32]T(1,0)");
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      for (int64_t k = 0; k < 2; ++k) {
        EXPECT_EQ(b.DeviceAt({i, j, k}), 32 * k + 8 * i + j);
      }
    }
  }
}

TEST(TileAssignmentExamples, ExampleC) {
  TileAssignment c = MustIota({2, 1, 1, 32}, {64}, {0});
  std::vector<int64_t> identity(64);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_THAT(c.Devices(), ElementsAreArray(identity));
  EXPECT_EQ(c.ToString(), "[2,1,1,32]<=[64]");
  for (int64_t d = 0; d < 64; ++d) {
    EXPECT_THAT(*c.TileIndexOf(d), ElementsAre(d / 32, 0, 0, d % 32));
  }
}

TEST(TileAssignmentExamples, ExampleD) {
  TileAssignment d = MustIota({1, 4, 2, 8, 1}, {2, 4, 8}, {1, 0, 2});
  EXPECT_THAT(d.Devices(), ElementsAreArray(kExampleAList));
  EXPECT_EQ(d.DeviceAt({0, 3, 1, 7, 0}), 63);
  EXPECT_EQ(d.DeviceAt({0, 0, 1, 1, 0}), 33);
  EXPECT_THAT(*d.TileIndexOf(33), ElementsAre(0, 0, 1, 1, 0));
  // Same flattened order as Example A: a reshape of A is equal to D.
  TileAssignment a = MustIota({4, 2, 8}, {2, 4, 8}, {1, 0, 2});
  EXPECT_EQ(a.Reshape({1, 4, 2, 8, 1}), d);
}

TEST(TileAssignmentExamples, SmallExtras) {
  EXPECT_THAT(MustIota({2, 4}, {4, 2}, {1, 0}).Devices(), ElementsAre(0, 2, 4, 6, 1, 3, 5, 7));
  EXPECT_THAT(MustIota({4, 2}, {8}, {0}).Devices(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(MustIota({16}, {4, 2, 2}, {1, 0, 2}).Devices(),
              ElementsAre(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15));
  // [2,2]<=[2,2]T(1,0) is the transpose of the 2x2 identity order.
  EXPECT_THAT(MustIota({2, 2}, {2, 2}, {1, 0}).Devices(), ElementsAre(0, 2, 1, 3));
}

TEST(TileAssignmentExamples, ExplicitEqualsIotaByValue) {
  TileAssignment iota = MustIota({4, 2, 8}, {2, 4, 8}, {1, 0, 2});
  absl::StatusOr<TileAssignment> list = TileAssignment::Explicit({4, 2, 8}, kExampleAList);
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE(list->is_iota());
  EXPECT_EQ(*list, iota);
  EXPECT_EQ(iota, *list);
  // Canonical() turns the list into the same iota text.
  EXPECT_TRUE(list->Canonical().is_iota());
  EXPECT_EQ(list->Canonical().ToString(), "[4,2,8]<=[2,4,8]T(1,0,2)");
  // A different order is not equal.
  std::vector<int64_t> swapped = kExampleAList;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(*TileAssignment::Explicit({4, 2, 8}, swapped), iota);
  // Same devices, different dims are not equal.
  EXPECT_NE(iota.Reshape({8, 8}), iota);
}

// --- §2.1 canonicalisation -----------------------------------------------------------------

struct CanonCase {
  std::vector<int64_t> reshape, perm;
  std::vector<int64_t> want_reshape, want_perm;
};

TEST(IotaCanonical, SpecExamples) {
  const std::vector<CanonCase> cases = {
      {{3, 4, 5}, {0, 1, 2}, {60}, {0}},
      {{3, 4, 5}, {1, 2, 0}, {3, 20}, {1, 0}},
      {{3, 4, 5}, {2, 0, 1}, {12, 5}, {1, 0}},
      {{3, 4, 5}, {1, 0, 2}, {3, 4, 5}, {1, 0, 2}},
      {{3, 4, 5}, {2, 1, 0}, {3, 4, 5}, {2, 1, 0}},
      {{1, 3, 1, 4, 1, 5}, {4, 3, 2, 5, 1, 0}, {3, 20}, {1, 0}},
      {{1, 1}, {1, 0}, {1}, {0}},
  };
  for (const CanonCase& c : cases) {
    absl::StatusOr<IotaTileAssignment> iota =
        IotaTileAssignment::Create({Product(c.reshape)}, c.reshape, c.perm);
    ASSERT_TRUE(iota.ok()) << iota.status();
    EXPECT_EQ(iota->reshape_dims(), c.want_reshape);
    EXPECT_EQ(iota->perm(), c.want_perm);
    // Canonicalisation never changes the values.
    std::vector<int64_t> values(iota->num_elements());
    for (int64_t i = 0; i < iota->num_elements(); ++i) values[i] = iota->ValueAtLinear(i);
    EXPECT_EQ(values, ReferenceIota(c.reshape, c.perm));
  }
  EXPECT_EQ(IotaTileAssignment::Create({60}, {3, 4, 5}, {1, 2, 0})->ToString(),
            "[60]<=[3,20]T(1,0)");
  EXPECT_EQ(IotaTileAssignment::Create({60}, {3, 4, 5}, {0, 1, 2})->ToString(), "[60]<=[60]");
}

TEST(IotaCanonical, TextsThatCanonicaliseAlikeAreEqual) {
  EXPECT_EQ(MustIota({4, 15}, {3, 4, 5}, {1, 2, 0}), MustIota({4, 15}, {3, 20}, {1, 0}));
  EXPECT_EQ(MustIota({2, 2}, {2, 2}, {0, 1}), TileAssignment::Iota({2, 2}));
}

TEST(IotaCreate, Errors) {
  EXPECT_FALSE(IotaTileAssignment::Create({8}, {2, 2}, {1, 0}).ok());  // 8 != 4
  EXPECT_FALSE(IotaTileAssignment::Create({4}, {2, 2}, {0, 0}).ok());  // not a perm
  EXPECT_FALSE(IotaTileAssignment::Create({4}, {2, 2}, {0, 2}).ok());  // out of range
  EXPECT_FALSE(IotaTileAssignment::Create({4}, {2, 2}, {0}).ok());     // arity
  EXPECT_FALSE(IotaTileAssignment::Create({0}, {1}, {0}).ok());        // zero dim
  EXPECT_FALSE(TileAssignment::Explicit({2, 2}, {0, 1, 2}).ok());      // count
  EXPECT_FALSE(TileAssignment::Explicit({2}, {0, -1}).ok());           // negative
}

TEST(ExplicitTileAssignment, BoundAndDistinct) {
  absl::StatusOr<TileAssignment> t = TileAssignment::Explicit({2, 2}, {3, 1, 7, 1});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->DeviceBound(), 8);
  EXPECT_FALSE(t->DevicesDistinct());
  EXPECT_EQ(t->ToString(), "[2,2]3,1,7,1");
  EXPECT_THAT(*t->TileIndexOf(7), ElementsAre(1, 0));
  EXPECT_FALSE(t->TileIndexOf(0).has_value());
  EXPECT_FALSE(t->AsIota().has_value());
}

// --- A 65536-device iota queried in closed form --------------------------------------------

// [256,256]<=[16,16,16,16]T(2,0,3,1): the tile linear index L = 256i + j has base-16 digits
// (a0,a1,a2,a3) = (i/16, i%16, j/16, j%16); digit a_q is the reshape index r[perm[q]], so
// r2 = i/16, r0 = i%16, r3 = j/16, r1 = j%16 and device = 4096 r0 + 256 r1 + 16 r2 + r3.
int64_t BigDevice(int64_t i, int64_t j) {
  return 4096 * (i % 16) + 256 * (j % 16) + 16 * (i / 16) + (j / 16);
}

TEST(LargeIota, ClosedFormQueries) {
  TileAssignment big = MustIota({256, 256}, {16, 16, 16, 16}, {2, 0, 3, 1});
  ASSERT_TRUE(big.is_iota());
  EXPECT_EQ(big.num_elements(), 65536);
  EXPECT_EQ(big.ToString(), "[256,256]<=[16,16,16,16]T(2,0,3,1)");
  const std::vector<std::pair<int64_t, int64_t>> probes = {{0, 0},   {0, 1},   {1, 0},   {15, 15},
                                                           {16, 0},  {0, 16},  {17, 33}, {255, 255},
                                                           {128, 7}, {99, 200}};
  for (auto [i, j] : probes) {
    const int64_t d = BigDevice(i, j);
    EXPECT_EQ(big.DeviceAt({i, j}), d) << i << "," << j;
    EXPECT_EQ(big.DeviceAtLinear(256 * i + j), d);
    std::optional<std::vector<int64_t>> index = big.TileIndexOf(d);
    ASSERT_TRUE(index.has_value());
    EXPECT_THAT(*index, ElementsAre(i, j));
  }
  // A few hand-evaluated entries.
  EXPECT_EQ(big.DeviceAt({0, 1}), 256);
  EXPECT_EQ(big.DeviceAt({1, 0}), 4096);
  EXPECT_EQ(big.DeviceAt({16, 0}), 16);
  EXPECT_EQ(big.DeviceAt({0, 16}), 1);
  EXPECT_EQ(big.DeviceAt({255, 255}), 65535);
  // Inverse from the device side: d = 4096 r0 + 256 r1 + 16 r2 + r3 -> (16 r2 + r0, 16 r3 + r1).
  for (int64_t d : {0, 1, 17, 4097, 30000, 65535}) {
    const int64_t r0 = d / 4096, r1 = (d / 256) % 16, r2 = (d / 16) % 16, r3 = d % 16;
    EXPECT_THAT(*big.TileIndexOf(d), ElementsAre(16 * r2 + r0, 16 * r3 + r1));
  }
  EXPECT_FALSE(big.TileIndexOf(65536).has_value());
}

// --- Properties over random iotas ----------------------------------------------------------

// A uniform draw from [lo, hi) at every RapidCheck size (inRange alone scales the range with
// the size, so early cases would all be trivial); still shrinks towards lo.
template <typename T>
T Uniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

std::vector<int64_t> GenPerm(int64_t n) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = Uniform<int64_t>(0, i + 1);
    std::swap(p[i], p[j]);
  }
  return p;
}

// Random dims (1..4 of them) whose product is n.
std::vector<int64_t> GenDimsFor(int64_t n) {
  const int64_t count = Uniform<int64_t>(1, 5);
  std::vector<int64_t> dims;
  int64_t remaining = n;
  for (int64_t i = 0; i + 1 < count; ++i) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= remaining; ++d) {
      if (remaining % d == 0) divisors.push_back(d);
    }
    const int64_t d = *rc::gen::elementOf(divisors);
    dims.push_back(d);
    remaining /= d;
  }
  dims.push_back(remaining);
  return dims;
}

struct RandomIota {
  std::vector<int64_t> dims, reshape, perm;
  TileAssignment tiles;
};

RandomIota GenIota() {
  RandomIota r;
  const int64_t reshape_rank = Uniform<int64_t>(1, 5);
  for (int64_t i = 0; i < reshape_rank; ++i) r.reshape.push_back(Uniform<int64_t>(1, 7));
  r.perm = GenPerm(static_cast<int64_t>(r.reshape.size()));
  r.dims = GenDimsFor(Product(r.reshape));
  absl::StatusOr<TileAssignment> t = TileAssignment::Iota(r.dims, r.reshape, r.perm);
  RC_ASSERT(t.ok());
  r.tiles = *t;
  return r;
}

RC_GTEST_PROP(IotaProperties, DeviceAndLinearIndexAreInverseBijections, ()) {
  RandomIota r = GenIota();
  const int64_t n = r.tiles.num_elements();
  RC_ASSERT(n == Product(r.reshape));
  std::vector<bool> seen(n, false);
  for (int64_t l = 0; l < n; ++l) {
    const int64_t d = r.tiles.DeviceAtLinear(l);
    RC_ASSERT(d >= 0 && d < n);
    RC_ASSERT(!seen[d]);
    seen[d] = true;
    RC_ASSERT(r.tiles.LinearIndexOf(d) == std::optional<int64_t>(l));
  }
  for (int64_t d = 0; d < n; ++d) {
    const std::optional<int64_t> l = r.tiles.LinearIndexOf(d);
    RC_ASSERT(l.has_value());
    RC_ASSERT(r.tiles.DeviceAtLinear(*l) == d);
  }
}

RC_GTEST_PROP(IotaProperties, ExpansionAgreesWithCompactQueriesAndReference, ()) {
  RandomIota r = GenIota();
  const std::vector<int64_t> devices = r.tiles.Devices();
  RC_ASSERT(devices == ReferenceIota(r.reshape, r.perm));
  for (int64_t l = 0; l < static_cast<int64_t>(devices.size()); ++l) {
    const std::vector<int64_t> index = Digits(r.dims, l);
    RC_ASSERT(r.tiles.DeviceAt(index) == devices[l]);
    RC_ASSERT(*r.tiles.TileIndexOf(devices[l]) == index);
  }
  absl::StatusOr<TileAssignment> list = TileAssignment::Explicit(r.dims, devices);
  RC_ASSERT(list.ok());
  RC_ASSERT(*list == r.tiles);
  for (int64_t d = 0; d < static_cast<int64_t>(devices.size()); ++d) {
    RC_ASSERT(list->TileIndexOf(d) == r.tiles.TileIndexOf(d));
  }
}

RC_GTEST_PROP(IotaProperties, DetectIotaReproducesTheAssignment, ()) {
  RandomIota r = GenIota();
  std::optional<IotaTileAssignment> detected = DetectIota(r.dims, r.tiles.Devices());
  RC_ASSERT(detected.has_value());
  const TileAssignment again(*detected);
  RC_ASSERT(again.Devices() == r.tiles.Devices());
  RC_ASSERT(again == r.tiles);
  // Both are canonical iotas of the same array, so they print alike.
  RC_ASSERT(again.ToString() == r.tiles.ToString());
  // Canonical() of the explicit list finds it as well.
  RC_ASSERT(TileAssignment::Explicit(r.dims, r.tiles.Devices())->Canonical().ToString() ==
            r.tiles.ToString());
}

RC_GTEST_PROP(IotaProperties, TransposeThenInverseIsIdentity, ()) {
  RandomIota r = GenIota();
  const int64_t rank = r.tiles.num_dimensions();
  const std::vector<int64_t> perm = GenPerm(rank);
  std::vector<int64_t> inverse(rank);
  for (int64_t i = 0; i < rank; ++i) inverse[perm[i]] = i;
  const TileAssignment t = r.tiles.Transpose(perm);
  // Result dim i is old dim perm[i].
  for (int64_t i = 0; i < rank; ++i) RC_ASSERT(t.dim(i) == r.tiles.dim(perm[i]));
  for (int64_t l = 0; l < t.num_elements(); ++l) {
    const std::vector<int64_t> new_index = Digits(t.dims(), l);
    std::vector<int64_t> old_index(rank);
    for (int64_t i = 0; i < rank; ++i) old_index[perm[i]] = new_index[i];
    RC_ASSERT(t.DeviceAtLinear(l) == r.tiles.DeviceAt(old_index));
  }
  const TileAssignment back = t.Transpose(inverse);
  RC_ASSERT(back == r.tiles);
  RC_ASSERT(back.Devices() == r.tiles.Devices());
}

RC_GTEST_PROP(IotaProperties, ReshapeKeepsTheFlattenedOrder, ()) {
  RandomIota r = GenIota();
  const std::vector<int64_t> new_dims = GenDimsFor(r.tiles.num_elements());
  const TileAssignment reshaped = r.tiles.Reshape(new_dims);
  RC_ASSERT(reshaped.dims() == new_dims);
  RC_ASSERT(reshaped.Devices() == r.tiles.Devices());
}

// fuzz_sharding_parser (ASan + UBSan) found `{devices=[2,1,4]0,1,2,3,4,5,9223372036854775807,2]`:
// the device bound (id + 1) overflowed. Ids past 2^31 are refused with a message.
TEST(TileAssignmentExamples, HugeDeviceIdsAreRefusedNotOverflowed) {
  absl::StatusOr<TileAssignment> huge =
      TileAssignment::Explicit({2, 1, 4}, {0, 1, 2, 3, 4, 5, INT64_MAX, 2});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(std::string(huge.status().message()), ::testing::HasSubstr("out of range"));
  EXPECT_FALSE(TileAssignment::Explicit({2}, {0, int64_t{1} << 31}).ok());
  EXPECT_TRUE(TileAssignment::Explicit({2}, {0, (int64_t{1} << 31) - 1}).ok());
}

// Transposing an iota is done symbolically when its dims align with the iota's (meshes and
// their factors); whichever way, every tile moves as a transpose moves it.
RC_GTEST_PROP(TileAssignmentTranspose, MovesEveryTileLikeATranspose, ()) {
  const int64_t rank = *rc::gen::inRange<int64_t>(1, 4);
  std::vector<int64_t> dims;
  for (int64_t k = 0; k < rank; ++k) dims.push_back(*rc::gen::inRange<int64_t>(1, 5));
  // The iota: either plain over the dims, or over a random permutation of them.
  std::vector<int64_t> order(dims.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int64_t>(k);
  const std::vector<int64_t> iota_perm = *rc::gen::elementOf(
      std::vector<std::vector<int64_t>>{order, std::vector<int64_t>(order.rbegin(), order.rend())});
  std::vector<int64_t> reshape(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) reshape[iota_perm[k]] = dims[k];
  absl::StatusOr<TileAssignment> t = TileAssignment::Iota(dims, reshape, iota_perm);
  RC_ASSERT(t.ok());
  std::vector<int64_t> perm = order;
  std::shuffle(perm.begin(), perm.end(), std::mt19937(*rc::gen::arbitrary<uint32_t>()));
  const TileAssignment transposed = t->Transpose(perm);
  std::vector<int64_t> new_dims;
  for (int64_t p : perm) new_dims.push_back(dims[p]);
  RC_ASSERT(transposed.dims() == new_dims);
  for (int64_t linear = 0; linear < Product(new_dims); ++linear) {
    const std::vector<int64_t> index = Digits(new_dims, linear);
    std::vector<int64_t> old_index(dims.size());
    for (size_t k = 0; k < perm.size(); ++k) old_index[perm[k]] = index[k];
    RC_ASSERT(transposed.DeviceAt(index) == t->DeviceAt(old_index));
  }
}

}  // namespace
}  // namespace spmdcheck
