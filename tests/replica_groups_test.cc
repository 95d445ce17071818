// ReplicaGroups (spec §3.1): explicit and iota forms, validation of groups and source-target
// pairs, print/parse round trips and canonicalisation.
#include "ir/replica_groups.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"

namespace spmdcheck {
namespace {

using ::testing::HasSubstr;
using Groups = std::vector<std::vector<int64_t>>;

ReplicaGroups MustParse(absl::string_view text) {
  absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups(text);
  EXPECT_TRUE(g.ok()) << text << ": " << g.status();
  return g.ok() ? *g : ReplicaGroups();
}

std::string ErrorOf(const absl::Status& status) { return std::string(status.message()); }

// --- Forms ---------------------------------------------------------------------------------

TEST(ReplicaGroupsForms, Explicit) {
  ReplicaGroups g = MustParse("{{0,1},{2,3}}");
  EXPECT_FALSE(g.is_iota());
  EXPECT_EQ(g.num_groups(), 2);
  EXPECT_EQ(g.groups(), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(g.group(1), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.first_group_size(), 2);
  EXPECT_TRUE(g.UniformSize());
  EXPECT_EQ(g.TotalEntries(), 4);
  EXPECT_EQ(g.ToString(), "{{0,1},{2,3}}");
  // Spaces are accepted and not printed.
  EXPECT_EQ(MustParse("{ {0, 1}, {2, 3} }").ToString(), "{{0,1},{2,3}}");
}

TEST(ReplicaGroupsForms, Empty) {
  ReplicaGroups g = MustParse("{}");
  EXPECT_TRUE(g.empty());
  EXPECT_EQ(g.num_groups(), 0);
  EXPECT_EQ(g.first_group_size(), 0);
  EXPECT_EQ(g.ToString(), "{}");
  EXPECT_EQ(g, ReplicaGroups());
}

TEST(ReplicaGroupsForms, IotaTransposed) {
  ReplicaGroups g = MustParse("[2,4]<=[4,2]T(1,0)");
  EXPECT_TRUE(g.is_iota());
  EXPECT_EQ(g.num_groups(), 2);
  EXPECT_EQ(g.first_group_size(), 4);
  EXPECT_EQ(g.groups(), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(g.ToString(), "[2,4]<=[4,2]T(1,0)");
  EXPECT_EQ(g, MustParse("{{0,2,4,6},{1,3,5,7}}"));
}

TEST(ReplicaGroupsForms, IotaPlain) {
  ReplicaGroups g = MustParse("[4,2]<=[8]");
  EXPECT_EQ(g.groups(), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(g.ToString(), "[4,2]<=[8]");
  EXPECT_EQ(g.TotalEntries(), 8);
  EXPECT_TRUE(g.UniformSize());
}

TEST(ReplicaGroupsForms, IotaIsCanonicalisedWhenPrinted) {
  // [3,4,5]T(1,2,0) -> [3,20]T(1,0) (spec §2.1); the groups stay the same.
  ReplicaGroups g = MustParse("[12,5]<=[3,4,5]T(1,2,0)");
  EXPECT_EQ(g.ToString(), "[12,5]<=[3,20]T(1,0)");
  EXPECT_EQ(g, MustParse("[12,5]<=[3,20]T(1,0)"));
  // np.arange(60).reshape(3,20).T flattened is 0,20,40,1,21,41,...; group 0 is its first 5.
  EXPECT_EQ(g.group(0), (std::vector<int64_t>{0, 20, 40, 1, 21}));
}

TEST(ReplicaGroupsForms, OrderMatters) {
  EXPECT_NE(MustParse("{{0,1},{2,3}}"), MustParse("{{1,0},{2,3}}"));
  EXPECT_NE(MustParse("{{0,1},{2,3}}"), MustParse("{{2,3},{0,1}}"));
}

TEST(ReplicaGroupsForms, ParseErrors) {
  for (const char* bad :
       {"[2,2,2]<=[8]", "[2,4]0,1,2,3,4,5,6,7", "{{0,1},{2}", "{{0,1}{2,3}}", "[2,4]<=[4,2]",
        "[2,4]<=[4,2]T(0,0)", "[2,4]<=[6]", "{{0,x}}", "{{0,1}} trailing"}) {
    absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups(bad);
    EXPECT_FALSE(g.ok()) << bad;
    if (!g.ok()) {
      EXPECT_THAT(ErrorOf(g.status()), HasSubstr("<input>:1:")) << bad;
    }
  }
}

// --- ValidateReplicaGroups -----------------------------------------------------------------

TEST(ValidateReplicaGroups, Accepts) {
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{{0,1},{2,3}}"), 4, true).ok());
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{{3,0},{2,1}}"), 4, true).ok());
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{}"), 8, true).ok());
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("[2,4]<=[4,2]T(1,0)"), 8, true).ok());
  // Unequal sizes are fine when not required (all-reduce).
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{{0,1,2},{3}}"), 4, false).ok());
  // Participant count not known (<= 1): not checked.
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{{0,1},{2,3}}"), 0, true).ok());
  EXPECT_TRUE(ValidateReplicaGroups(MustParse("{{0,1},{2,3}}"), 1, true).ok());
}

TEST(ValidateReplicaGroups, EmptyGroup) {
  absl::Status s = ValidateReplicaGroups(MustParse("{{0,1},{}}"), 2, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(ErrorOf(s), HasSubstr("empty"));
}

TEST(ValidateReplicaGroups, DuplicateId) {
  absl::Status s = ValidateReplicaGroups(MustParse("{{0,1},{1,2}}"), 0, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(ErrorOf(s), HasSubstr("1"));
  EXPECT_FALSE(ValidateReplicaGroups(MustParse("{{0,0}}"), 0, false).ok());
}

TEST(ValidateReplicaGroups, MissingId) {
  absl::Status s = ValidateReplicaGroups(MustParse("{{0,2}}"), 0, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(ErrorOf(s), HasSubstr("id 1 is missing"));
  EXPECT_FALSE(ValidateReplicaGroups(MustParse("{{1,2},{3,4}}"), 0, false).ok());
}

TEST(ValidateReplicaGroups, NegativeId) {
  EXPECT_FALSE(ValidateReplicaGroups(MustParse("{{0,-1}}"), 0, false).ok());
}

TEST(ValidateReplicaGroups, UnequalSizesWhenRequired) {
  absl::Status s = ValidateReplicaGroups(MustParse("{{0,1,2},{3}}"), 4, true);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(ErrorOf(s), HasSubstr("equal sizes"));
}

TEST(ValidateReplicaGroups, ParticipantCount) {
  absl::Status s = ValidateReplicaGroups(MustParse("{{0,1},{2,3}}"), 8, true);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(ErrorOf(s), HasSubstr("8"));
  EXPECT_FALSE(ValidateReplicaGroups(MustParse("[4,2]<=[8]"), 4, true).ok());
}

// --- Source-target pairs -------------------------------------------------------------------

TEST(SourceTargetPairs, ValidAndPrinted) {
  const SourceTargetPairs pairs = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};
  EXPECT_TRUE(ValidateSourceTargetPairs(pairs, 4).ok());
  EXPECT_EQ(SourceTargetPairsToString(pairs), "{{0,1},{1,2},{2,3},{3,0}}");
  EXPECT_EQ(SourceTargetPairsToString({}), "{}");
  // Self pairs and partial permutations are allowed.
  EXPECT_TRUE(ValidateSourceTargetPairs({{0, 0}, {2, 1}}, 4).ok());
  EXPECT_TRUE(ValidateSourceTargetPairs({}, 4).ok());
  // Limit <= 1: range not checked.
  EXPECT_TRUE(ValidateSourceTargetPairs({{0, 9}}, 0).ok());
}

TEST(SourceTargetPairs, Errors) {
  absl::Status dup_source = ValidateSourceTargetPairs({{0, 1}, {0, 2}}, 4);
  EXPECT_FALSE(dup_source.ok());
  EXPECT_THAT(ErrorOf(dup_source), HasSubstr("source 0"));
  absl::Status dup_target = ValidateSourceTargetPairs({{0, 1}, {2, 1}}, 4);
  EXPECT_FALSE(dup_target.ok());
  EXPECT_THAT(ErrorOf(dup_target), HasSubstr("target 1"));
  absl::Status range = ValidateSourceTargetPairs({{0, 4}}, 4);
  EXPECT_FALSE(range.ok());
  EXPECT_THAT(ErrorOf(range), HasSubstr("4"));
  EXPECT_FALSE(ValidateSourceTargetPairs({{-1, 0}}, 4).ok());
  EXPECT_FALSE(ValidateSourceTargetPairs({{-1, 0}}, 0).ok());
}

// --- Canonical -----------------------------------------------------------------------------

TEST(ReplicaGroupsCanonical, FindsIotas) {
  EXPECT_EQ(MustParse("{{0,2,4,6},{1,3,5,7}}").Canonical().ToString(), "[2,4]<=[4,2]T(1,0)");
  EXPECT_EQ(MustParse("{{0,1},{2,3},{4,5},{6,7}}").Canonical().ToString(), "[4,2]<=[8]");
  EXPECT_EQ(MustParse("{{0,1,2,3,4,5,6,7}}").Canonical().ToString(), "[1,8]<=[8]");
  // Not iotas: unchanged.
  EXPECT_EQ(MustParse("{{1,0},{2,3}}").Canonical().ToString(), "{{1,0},{2,3}}");
  EXPECT_EQ(MustParse("{{0,1,2},{3}}").Canonical().ToString(), "{{0,1,2},{3}}");
  EXPECT_EQ(MustParse("{}").Canonical().ToString(), "{}");
  EXPECT_EQ(MustParse("{{0,1},{3,4}}").Canonical().ToString(), "{{0,1},{3,4}}");
}

// --- Properties ----------------------------------------------------------------------------

template <typename T>
T Uniform(T lo, T hi) {
  return *rc::gen::resize(100, rc::gen::inRange<T>(lo, hi));
}

std::vector<int64_t> GenPerm(int64_t n) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[Uniform<int64_t>(0, i + 1)]);
  return p;
}

// Random explicit groups: a permutation of 0..n-1 cut into pieces (equal or random sizes).
Groups GenExplicitGroups() {
  const int64_t n = Uniform<int64_t>(1, 17);
  const std::vector<int64_t> ids = GenPerm(n);
  Groups groups;
  if (*rc::gen::arbitrary<bool>()) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= n; ++d) {
      if (n % d == 0) divisors.push_back(d);
    }
    const int64_t size = *rc::gen::elementOf(divisors);
    for (int64_t g = 0; g < n / size; ++g) {
      groups.emplace_back(ids.begin() + g * size, ids.begin() + (g + 1) * size);
    }
  } else {
    int64_t at = 0;
    while (at < n) {
      const int64_t size = Uniform<int64_t>(1, n - at + 1);
      groups.emplace_back(ids.begin() + at, ids.begin() + at + size);
      at += size;
    }
  }
  return groups;
}

struct IotaCase {
  int64_t num_groups, group_size;
  std::vector<int64_t> reshape, perm;
};

IotaCase GenIotaCase() {
  IotaCase c;
  c.num_groups = Uniform<int64_t>(1, 7);
  c.group_size = Uniform<int64_t>(1, 7);
  // Reshape: the prime-ish factors of both counts in a random order.
  std::vector<int64_t> factors;
  for (int64_t x : {c.num_groups, c.group_size}) {
    for (int64_t p = 2; x > 1;) {
      if (x % p == 0) {
        factors.push_back(p);
        x /= p;
      } else {
        ++p;
      }
    }
  }
  if (factors.empty()) factors.push_back(1);
  const std::vector<int64_t> order = GenPerm(static_cast<int64_t>(factors.size()));
  for (int64_t i : order) c.reshape.push_back(factors[i]);
  c.perm = GenPerm(static_cast<int64_t>(c.reshape.size()));
  return c;
}

// Reference: np.arange(N).reshape(reshape).transpose(perm).reshape(G, S).
Groups ReferenceIotaGroups(const IotaCase& c) {
  const size_t m = c.reshape.size();
  std::vector<int64_t> transposed(m);
  for (size_t i = 0; i < m; ++i) transposed[i] = c.reshape[c.perm[i]];
  Groups groups(c.num_groups);
  for (int64_t t = 0; t < c.num_groups * c.group_size; ++t) {
    std::vector<int64_t> tindex(m);
    int64_t rest = t;
    for (size_t k = m; k-- > 0;) {
      tindex[k] = rest % transposed[k];
      rest /= transposed[k];
    }
    std::vector<int64_t> r(m);
    for (size_t i = 0; i < m; ++i) r[c.perm[i]] = tindex[i];
    int64_t value = 0;
    for (size_t k = 0; k < m; ++k) value = value * c.reshape[k] + r[k];
    groups[t / c.group_size].push_back(value);
  }
  return groups;
}

RC_GTEST_PROP(ReplicaGroupsProperties, ExplicitPrintParseRoundTrip, ()) {
  const ReplicaGroups g(GenExplicitGroups());
  const std::string text = g.ToString();
  absl::StatusOr<ReplicaGroups> parsed = ParseReplicaGroups(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == g);
  RC_ASSERT(parsed->groups() == g.groups());
  RC_ASSERT(parsed->ToString() == text);
  RC_ASSERT(ValidateReplicaGroups(g, g.TotalEntries(), false).ok());
}

RC_GTEST_PROP(ReplicaGroupsProperties, IotaPrintParseRoundTripAndReference, ()) {
  const IotaCase c = GenIotaCase();
  absl::StatusOr<IotaTileAssignment> iota =
      IotaTileAssignment::Create({c.num_groups, c.group_size}, c.reshape, c.perm);
  RC_ASSERT(iota.ok());
  const ReplicaGroups g(*iota);
  RC_ASSERT(g.groups() == ReferenceIotaGroups(c));
  const std::string text = g.ToString();
  absl::StatusOr<ReplicaGroups> parsed = ParseReplicaGroups(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(parsed->is_iota());
  RC_ASSERT(*parsed == g);
  RC_ASSERT(parsed->ToString() == text);
  RC_ASSERT(ValidateReplicaGroups(g, c.num_groups * c.group_size, true).ok());
}

RC_GTEST_PROP(ReplicaGroupsProperties, CanonicalKeepsTheGroups, ()) {
  ReplicaGroups g;
  if (*rc::gen::arbitrary<bool>()) {
    g = ReplicaGroups(GenExplicitGroups());
  } else {
    // The explicit list of an iota: Canonical must find an iota for it.
    const IotaCase c = GenIotaCase();
    g = ReplicaGroups(ReferenceIotaGroups(c));
    RC_ASSERT(g.Canonical().is_iota());
  }
  const ReplicaGroups canonical = g.Canonical();
  RC_ASSERT(canonical == g);
  RC_ASSERT(canonical.groups() == g.groups());
  RC_ASSERT(canonical.Canonical().ToString() == canonical.ToString());
  RC_ASSERT(*ParseReplicaGroups(canonical.ToString()) == g);
}

// --- XLA's mesh-axes form (jaxlib 0.10.2 prints `replica_groups=mesh['axis_0'=2,'axis_1'=4]
// {'axis_1'}`): the devices that differ only in the named axes form a group. Expected groups
// worked out by hand from XLA's definition (reshape the mesh's devices by the axis sizes, move
// the named axes last, chunk). ---------------------------------------------------------------

TEST(ReplicaGroupsMeshAxes, WholeAxes) {
  EXPECT_EQ(MustParse("mesh['axis_0'=8,'axis_1'=1] {'axis_0'}").groups(),
            (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(MustParse("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}").groups(),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(MustParse("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}").groups(),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Listed order decides the order inside a group: b major, a minor.
  EXPECT_EQ(MustParse("mesh['a'=2,'b'=4] {'b','a'}").groups(), (Groups{{0, 4, 1, 5, 2, 6, 3, 7}}));
  EXPECT_EQ(MustParse("mesh[a=2,b=4] {}").groups(),
            (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
}

TEST(ReplicaGroupsMeshAxes, SubAxes) {
  // 'a':(1)2 is the major factor of 2 of an axis of 8; 'a':(2)2 the middle one.
  EXPECT_EQ(MustParse("mesh['a'=8] {'a':(1)2}").groups(), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(MustParse("mesh['a'=8] {'a':(2)2}").groups(), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(MustParse("mesh['a'=8] {'a':(1)2,'a':(4)2}").groups(),
            (Groups{{0, 1, 4, 5}, {2, 3, 6, 7}}));
}

TEST(ReplicaGroupsMeshAxes, ExplicitDeviceIds) {
  EXPECT_EQ(MustParse("mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'}").groups(),
            (Groups{{3, 2}, {1, 0}}));
  // XLA prints an iota order as reshape dims and a transpose: [2,2]T(1,0) is 0,2,1,3.
  EXPECT_EQ(MustParse("mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0)) {'b'}").groups(),
            (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(MustParse("mesh['a'=2,'b'=2], device_ids=([2,2]T(1,0)) {'a'}").groups(),
            (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(MustParse("mesh['a'=4], device_ids=([4]1,0,3,2) {'a'}").groups(),
            (Groups{{1, 0, 3, 2}}));
}

TEST(ReplicaGroupsMeshAxes, InAnInstruction) {
  absl::StatusOr<ParsedModule> m = ParseHloModule(R"(HloModule m, num_partitions=8
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4] parameter(0)
  ROOT r = f32[4] all-reduce(p), channel_id=2, replica_groups=mesh['axis_0'=2,'axis_1'=4] {'axis_1'}, use_global_device_ids=true, to_apply=add
})");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->module->entry()->root()->attrs().replica_groups->groups(),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(ReplicaGroupsMeshAxes, BadInputIsAnError) {
  for (const char* text :
       {"mesh['a'=8] {'b'}", "mesh['a'=8] {'a':(3)2}", "mesh['a'=8] {'a','a'}",
        "mesh['a'=4] {'a':(1)2,'a':(1)4}", "mesh['a'=2,'b'=2], device_ids=(3,2,1) {'b'}",
        "maximal_mesh[device_id=3] {}"}) {
    EXPECT_FALSE(ParseReplicaGroups(text).ok()) << text;
  }
}

}  // namespace
}  // namespace spmdcheck
