// Collective handlers and participant groups (spec §3.2, §3.3, §3.5). Every expected value below
// was worked out by hand from the group rules (flattened id = replica * P + partition; position
// in a kCrossReplicaAndPartition group = replica position * P + partition) and written into the
// test; the property tests compare against naive references written here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_module.h"
#include "ir/hlo_parser.h"
#include "ir/literal.h"
#include "oracle/collective_groups.h"
#include "oracle/op_registry.h"

namespace spmdcheck::oracle {
namespace {

using ::testing::HasSubstr;

using Groups = std::vector<std::vector<int64_t>>;

// Scalar reducers used by the modules below.
constexpr char kReducers[] = R"(
sum_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
sub_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] subtract(a, b)
}
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
max_f32_swapped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(b, a)
}
sum_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b)
}
sub_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] subtract(a, b)
}
max_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] maximum(a, b)
}
sum_u32 {
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  ROOT r = u32[] add(a, b)
}
sum_s8 {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT r = s8[] add(a, b)
}
mul_u8 {
  a = u8[] parameter(0)
  b = u8[] parameter(1)
  ROOT r = u8[] multiply(a, b)
}
and_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] and(a, b)
}
or_pred {
  a = pred[] parameter(0)
  b = pred[] parameter(1)
  ROOT r = pred[] or(a, b)
}
sum_bf16 {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  ROOT r = bf16[] add(a, b)
}
sum_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT r = f16[] add(a, b)
}
)";

std::unique_ptr<HloModule> Parse(absl::string_view entry_body) {
  const std::string text =
      absl::StrCat("HloModule m\n", kReducers, "\nENTRY e {\n", entry_body, "\n}\n");
  absl::StatusOr<ParsedModule> parsed = ParseHloModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
  if (!parsed.ok()) return std::make_unique<HloModule>("unparsed");
  return std::move(parsed->module);
}

const HloInstruction& Find(const HloModule& module, absl::string_view name) {
  const HloInstruction* instruction = module.entry()->FindInstruction(name);
  EXPECT_NE(instruction, nullptr) << name;
  return *instruction;
}

Literal L(absl::string_view shape_text, absl::string_view values) {
  absl::StatusOr<Shape> shape = ParseShape(shape_text);
  EXPECT_TRUE(shape.ok()) << shape.status().message();
  absl::StatusOr<Literal> literal = ParseLiteral(values, *shape);
  EXPECT_TRUE(literal.ok()) << literal.status().message();
  return literal.ok() ? *std::move(literal) : Literal();
}

void ExpectLiteral(const Literal& actual, absl::string_view shape, absl::string_view values) {
  const Literal expected = L(shape, values);
  EXPECT_TRUE(actual == expected) << "actual:   " << actual.ToString()
                                  << "\nexpected: " << expected.ToString();
}

// An independent scalar evaluator for the test reducers: root = op(parameter, parameter).
absl::StatusOr<Literal> TestCall(const HloComputation& computation,
                                 absl::Span<const Literal* const> args) {
  const HloInstruction* root = computation.root();
  const Literal& a = *args[root->operand(0)->parameter_number()];
  const Literal& b = *args[root->operand(1)->parameter_number()];
  Literal out(root->shape());
  const PrimitiveType type = root->shape().element_type();
  if (IsFloatingType(type)) {
    const double x = a.GetDouble(0), y = b.GetDouble(0);
    switch (root->opcode()) {
      case HloOpcode::kAdd:
        out.SetDouble(0, static_cast<double>(static_cast<float>(x) + static_cast<float>(y)));
        break;
      case HloOpcode::kSubtract:
        out.SetDouble(0, static_cast<double>(static_cast<float>(x) - static_cast<float>(y)));
        break;
      default:
        return absl::UnimplementedError("test reducer");
    }
    return out;
  }
  const int64_t x = a.GetInt64(0), y = b.GetInt64(0);
  switch (root->opcode()) {
    case HloOpcode::kAdd:
      out.SetInt64(0, x + y);
      break;
    case HloOpcode::kSubtract:
      out.SetInt64(0, x - y);
      break;
    default:
      return absl::UnimplementedError("test reducer");
  }
  return out;
}

// Runs the collective handler of `instruction` with operands[i] on devices[i].
absl::StatusOr<std::vector<Literal>> RunCollective(
    const HloInstruction& instruction, const std::vector<int64_t>& devices,
    const std::vector<std::vector<Literal>>& operands, int64_t num_partitions,
    int64_t replica_count) {
  OpRegistry registry;
  RegisterCollectiveOps(registry);
  CollectiveHandler handler = registry.FindCollective(instruction.opcode());
  EXPECT_NE(handler, nullptr) << HloOpcodeString(instruction.opcode());
  if (handler == nullptr) return absl::InternalError("no handler");
  std::vector<std::vector<const Literal*>> pointers;
  for (const auto& device_operands : operands) {
    std::vector<const Literal*> ptrs;
    for (const Literal& literal : device_operands) ptrs.push_back(&literal);
    pointers.push_back(std::move(ptrs));
  }
  CollectiveArgs args;
  args.instruction = &instruction;
  args.devices = devices;
  args.operands = &pointers;
  args.num_partitions = num_partitions;
  args.replica_count = replica_count;
  args.call = TestCall;
  return handler(args);
}

std::vector<int64_t> AllDevices(int64_t n) {
  std::vector<int64_t> devices(n);
  std::iota(devices.begin(), devices.end(), 0);
  return devices;
}

// One operand per device: make(d).
template <typename Fn>
std::vector<std::vector<Literal>> PerDevice(int64_t n, Fn make) {
  std::vector<std::vector<Literal>> out;
  for (int64_t d = 0; d < n; ++d) {
    std::vector<Literal> ops;
    ops.push_back(make(d));
    out.push_back(std::move(ops));
  }
  return out;
}

// Runs on every device 0..R*P-1 and expects success.
std::vector<Literal> RunAll(const HloInstruction& instruction,
                            const std::vector<std::vector<Literal>>& operands,
                            int64_t num_partitions, int64_t replica_count) {
  absl::StatusOr<std::vector<Literal>> result =
      RunCollective(instruction, AllDevices(num_partitions * replica_count), operands,
                    num_partitions, replica_count);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {};
  EXPECT_EQ(result->size(), static_cast<size_t>(num_partitions * replica_count));
  return *std::move(result);
}

absl::Status RunError(const HloInstruction& instruction,
                      const std::vector<std::vector<Literal>>& operands, int64_t num_partitions,
                      int64_t replica_count) {
  absl::StatusOr<std::vector<Literal>> result =
      RunCollective(instruction, AllDevices(num_partitions * replica_count), operands,
                    num_partitions, replica_count);
  EXPECT_FALSE(result.ok());
  return result.ok() ? absl::OkStatus() : result.status();
}

void ExpectInvalid(const absl::Status& status, absl::string_view instruction_name,
                   absl::string_view fragment) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status.message();
  EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(instruction_name)));
  EXPECT_THAT(std::string(status.message()), HasSubstr(std::string(fragment)));
}

Groups GroupsOf(absl::string_view body, absl::string_view name, int64_t P, int64_t R) {
  std::unique_ptr<HloModule> module = Parse(body);
  absl::StatusOr<Groups> groups = CollectiveGroups(Find(*module, name), P, R);
  EXPECT_TRUE(groups.ok()) << groups.status().message();
  return groups.ok() ? *groups : Groups();
}

absl::Status GroupsError(absl::string_view body, absl::string_view name, int64_t P, int64_t R) {
  std::unique_ptr<HloModule> module = Parse(body);
  absl::StatusOr<Groups> groups = CollectiveGroups(Find(*module, name), P, R);
  EXPECT_FALSE(groups.ok());
  return groups.ok() ? absl::OkStatus() : groups.status();
}

// ---- Group modes
// ---------------------------------------------------------------------------------

TEST(GroupModeTest, ModesFromChannelAndFlag) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[4] parameter(0)
  ar0 = f32[4] all-reduce(p), replica_groups={}, to_apply=sum_f32
  ar1 = f32[4] all-reduce(p), channel_id=1, replica_groups={}, to_apply=sum_f32
  ar2 = f32[4] all-reduce(p), channel_id=1, replica_groups={{0}}, use_global_device_ids=true, to_apply=sum_f32
  a2a0 = f32[4] all-to-all(p), replica_groups={}, dimensions={0}
  a2a1 = f32[4] all-to-all(p), channel_id=2, replica_groups={}, dimensions={0}
  cp = f32[4] collective-permute(p), channel_id=3, source_target_pairs={{0,0}}
  cb = f32[4] collective-broadcast(p), replica_groups={}
  ROOT ag = f32[4] all-gather(p), channel_id=4, replica_groups={}, dimensions={0}
)");
  auto mode = [&](absl::string_view name) { return *GroupModeOf(Find(*module, name)); };
  EXPECT_EQ(mode("ar0"), GroupMode::kCrossReplica);
  EXPECT_EQ(mode("ar1"), GroupMode::kCrossReplicaAndPartition);
  EXPECT_EQ(mode("ar2"), GroupMode::kFlattenedId);
  EXPECT_EQ(mode("a2a0"), GroupMode::kCrossReplica);
  EXPECT_EQ(mode("a2a1"), GroupMode::kCrossPartition);
  EXPECT_EQ(mode("cp"), GroupMode::kCrossPartition);
  EXPECT_EQ(mode("cb"), GroupMode::kCrossReplica);
  EXPECT_EQ(mode("ag"), GroupMode::kCrossReplicaAndPartition);
}

TEST(GroupModeTest, GlobalIdsWithoutChannelIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[4] parameter(0)
  ROOT ar = f32[4] all-reduce(p), replica_groups={{0}}, use_global_device_ids=true, to_apply=sum_f32
)");
  absl::StatusOr<GroupMode> mode = GroupModeOf(Find(*module, "ar"));
  ASSERT_FALSE(mode.ok());
  ExpectInvalid(mode.status(), "ar", "requires a channel_id");
}

TEST(GroupModeTest, GlobalIdsOnAllToAllIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[4] parameter(0)
  ROOT a2a = f32[4] all-to-all(p), channel_id=1, replica_groups={{0}}, dimensions={0}, use_global_device_ids=true
)");
  absl::StatusOr<GroupMode> mode = GroupModeOf(Find(*module, "a2a"));
  ASSERT_FALSE(mode.ok());
  ExpectInvalid(mode.status(), "a2a", "use_global_device_ids");
}

// ---- CollectiveGroups ---------------------------------------------------------------------------

TEST(CollectiveGroupsTest, CrossReplicaRepeatsEachGroupPerPartition) {
  // Replica groups {0,1},{2,3}; P = 2: device (r, p) = 2r + p.
  EXPECT_EQ(GroupsOf(R"(
  p = f32[] parameter(0)
  ROOT ar = f32[] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum_f32
)",
                     "ar", /*P=*/2, /*R=*/4),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(CollectiveGroupsTest, CrossReplicaEmptyMeansAllReplicas) {
  EXPECT_EQ(GroupsOf(R"(
  p = f32[] parameter(0)
  ROOT ar = f32[] all-reduce(p), replica_groups={}, to_apply=sum_f32
)",
                     "ar", 2, 2),
            (Groups{{0, 2}, {1, 3}}));
}

TEST(CollectiveGroupsTest, CrossPartitionRepeatsEachGroupPerReplica) {
  // all-to-all with a channel: partition ids; P = 4, R = 2: device = 4r + p.
  EXPECT_EQ(GroupsOf(R"(
  p = f32[4] parameter(0)
  ROOT a2a = f32[4] all-to-all(p), channel_id=1, replica_groups={{0,1},{2,3}}, dimensions={0}
)",
                     "a2a", 4, 2),
            (Groups{{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
}

TEST(CollectiveGroupsTest, CrossPartitionEmptyMeansAllPartitions) {
  EXPECT_EQ(GroupsOf(R"(
  p = f32[4] parameter(0)
  ROOT cb = f32[4] collective-broadcast(p), channel_id=1, replica_groups={}
)",
                     "cb", 2, 2),
            (Groups{{0, 1}, {2, 3}}));
}

TEST(CollectiveGroupsTest, CrossReplicaAndPartitionIsReplicaMajor) {
  // Replica group {1,0} with P = 3: (1,0),(1,1),(1,2),(0,0),(0,1),(0,2).
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ag = f32[12] all-gather(p), channel_id=1, replica_groups={{1,0}}, dimensions={0}
)",
                     "ag", 3, 2),
            (Groups{{3, 4, 5, 0, 1, 2}}));
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={{0},{1}}, to_apply=sum_f32
)",
                     "ar", 2, 2),
            (Groups{{0, 1}, {2, 3}}));
  // Empty: every replica, so every device.
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={}, to_apply=sum_f32
)",
                     "ar", 2, 2),
            (Groups{{0, 1, 2, 3}}));
}

TEST(CollectiveGroupsTest, FlattenedIdsExplicitAndIota) {
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={{0,5},{1,4},{2,7},{3,6}}, use_global_device_ids=true, to_apply=sum_f32
)",
                     "ar", 4, 2),
            (Groups{{0, 5}, {1, 4}, {2, 7}, {3, 6}}));
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=sum_f32
)",
                     "ar", 4, 2),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(CollectiveGroupsTest, PlainIotaReplicaGroups) {
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups=[4,2]<=[8], to_apply=sum_f32
)",
                     "ar", 1, 8),
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(CollectiveGroupsTest, CollectivePermuteRendezvousIsEveryone) {
  // With a channel: every partition of each replica; without: every replica of each partition.
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT cp = f32[2] collective-permute(p), channel_id=1, source_target_pairs={{0,1}}
)",
                     "cp", 3, 2),
            (Groups{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(GroupsOf(R"(
  p = f32[2] parameter(0)
  ROOT cp = f32[2] collective-permute(p), source_target_pairs={{0,1}}
)",
                     "cp", 3, 2),
            (Groups{{0, 3}, {1, 4}, {2, 5}}));
}

TEST(CollectiveGroupsTest, IdTwiceIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1},{1,2}}, to_apply=sum_f32
)",
                            "ar", 1, 3),
                "ar", "replica id 1 appears more than once");
}

TEST(CollectiveGroupsTest, IdOutOfRangeIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,4}}, to_apply=sum_f32
)",
                            "ar", 1, 4),
                "ar", "replica id 4 in replica_groups {{0,4}} is out of range [0, 4)");
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={{0,8}}, use_global_device_ids=true, to_apply=sum_f32
)",
                            "ar", 4, 2),
                "ar", "flattened id 8");
}

TEST(CollectiveGroupsTest, DeviceInNoGroupIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1}}, to_apply=sum_f32
)",
                            "ar", 1, 4),
                "ar", "replica id 2 is in no group");
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT cb = f32[2] collective-broadcast(p), channel_id=1, replica_groups={{0,1}}
)",
                            "cb", 4, 1),
                "cb", "partition id 2 is in no group");
}

TEST(CollectiveGroupsTest, GlobalIdsWithoutChannelIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum_f32
)",
                            "ar", 1, 2),
                "ar", "requires a channel_id");
}

TEST(CollectiveGroupsTest, EmptyGroupsInFlattenedModeIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), channel_id=1, replica_groups={}, use_global_device_ids=true, to_apply=sum_f32
)",
                            "ar", 2, 1),
                "ar", "flattened-id mode");
}

TEST(CollectiveGroupsTest, EmptyGroupIsAnError) {
  ExpectInvalid(GroupsError(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1},{}}, to_apply=sum_f32
)",
                            "ar", 1, 2),
                "ar", "replica group 1 is empty");
}

// ---- all-reduce
// ----------------------------------------------------------------------------------

TEST(AllReduceTest, CrossReplicaExplicitGroups) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum_f32
)");
  // Device d holds {d, 10d}.
  std::vector<Literal> out = RunAll(
      Find(*module, "ar"),
      PerDevice(4, [](int64_t d) { return L("f32[2]", absl::StrCat("{", d, ", ", 10 * d, "}")); }),
      1, 4);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "f32[2]", "{1, 10}");
  ExpectLiteral(out[1], "f32[2]", "{1, 10}");
  ExpectLiteral(out[2], "f32[2]", "{5, 50}");
  ExpectLiteral(out[3], "f32[2]", "{5, 50}");
}

TEST(AllReduceTest, CrossReplicaWithSeveralPartitions) {
  // R = 2, P = 2, no channel: replicas of the same partition reduce: {0,2} and {1,3}.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  ROOT ar = s32[] all-reduce(p), replica_groups={}, to_apply=sum_s32
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "ar"),
             PerDevice(4, [](int64_t d) { return L("s32[]", absl::StrCat(1 << d)); }), 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[]", "5");
  ExpectLiteral(out[1], "s32[]", "10");
  ExpectLiteral(out[2], "s32[]", "5");
  ExpectLiteral(out[3], "s32[]", "10");
}

TEST(AllReduceTest, CrossReplicaAndPartitionFoldsInPositionOrder) {
  // replica_groups={{1,0}}, R = 2, P = 2: rank order is devices 2,3,0,1. With subtract and
  // x_d = d + 1: ((3 - 4) - 1) - 2 = -4.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[] parameter(0)
  sub = f32[] all-reduce(p), channel_id=1, replica_groups={{1,0}}, to_apply=sub_f32
  ROOT sum = f32[] all-reduce(p), channel_id=2, replica_groups={{0},{1}}, to_apply=sum_f32
)");
  auto operands = PerDevice(4, [](int64_t d) { return L("f32[]", absl::StrCat(d + 1)); });
  std::vector<Literal> out = RunAll(Find(*module, "sub"), operands, 2, 2);
  ASSERT_EQ(out.size(), 4u);
  for (const Literal& l : out) ExpectLiteral(l, "f32[]", "-4");
  // {{0},{1}} with a channel: replica 0 = devices {0,1}, replica 1 = devices {2,3}.
  out = RunAll(Find(*module, "sum"), operands, 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "f32[]", "3");
  ExpectLiteral(out[1], "f32[]", "3");
  ExpectLiteral(out[2], "f32[]", "7");
  ExpectLiteral(out[3], "f32[]", "7");
}

TEST(AllReduceTest, FlattenedTransposedIotaFoldsInGroupOrder) {
  // [2,4]<=[4,2]T(1,0) = {{0,2,4,6},{1,3,5,7}}; x_d = d*d; subtract folds left:
  // 0-4-16-36 = -56 and 1-9-25-49 = -82. Sum: 56 and 84.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  sub = s32[] all-reduce(p), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=sub_s32
  ROOT sum = s32[] all-reduce(p), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, to_apply=sum_s32
)");
  auto operands = PerDevice(8, [](int64_t d) { return L("s32[]", absl::StrCat(d * d)); });
  std::vector<Literal> sub = RunAll(Find(*module, "sub"), operands, 4, 2);
  std::vector<Literal> sum = RunAll(Find(*module, "sum"), operands, 4, 2);
  ASSERT_EQ(sub.size(), 8u);
  ASSERT_EQ(sum.size(), 8u);
  for (int d = 0; d < 8; ++d) {
    ExpectLiteral(sub[d], "s32[]", d % 2 == 0 ? "-56" : "-82");
    ExpectLiteral(sum[d], "s32[]", d % 2 == 0 ? "56" : "84");
  }
}

TEST(AllReduceTest, FlattenedExplicitNonUniformGroups) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  ROOT ar = s32[] all-reduce(p), channel_id=1, replica_groups={{0},{3,1,2}}, use_global_device_ids=true, to_apply=sum_s32
)");
  const int64_t x[] = {1, 10, 100, 1000};
  std::vector<Literal> out =
      RunAll(Find(*module, "ar"),
             PerDevice(4, [&](int64_t d) { return L("s32[]", absl::StrCat(x[d])); }), 4, 1);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[]", "1");
  for (int d = 1; d < 4; ++d) ExpectLiteral(out[d], "s32[]", "1110");
}

TEST(AllReduceTest, VariadicOperandsReduceElementByElement) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p0 = s32[2] parameter(0)
  p1 = s32[] parameter(1)
  ROOT ar = (s32[2], s32[]) all-reduce(p0, p1), replica_groups={}, to_apply=sum_s32
)");
  std::vector<std::vector<Literal>> operands(2);
  operands[0].push_back(L("s32[2]", "{1, 2}"));
  operands[0].push_back(L("s32[]", "3"));
  operands[1].push_back(L("s32[2]", "{10, 20}"));
  operands[1].push_back(L("s32[]", "30"));
  std::vector<Literal> out = RunAll(Find(*module, "ar"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "(s32[2], s32[])", "({11, 22}, 33)");
  ExpectLiteral(out[1], "(s32[2], s32[])", "({11, 22}, 33)");
}

TEST(AllReduceTest, TupleOperandReducesEachLeaf) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = (s32[2], s32[]) parameter(0)
  ROOT ar = (s32[2], s32[]) all-reduce(p), replica_groups={}, to_apply=max_s32
)");
  std::vector<std::vector<Literal>> operands(2);
  operands[0].push_back(L("(s32[2], s32[])", "({1, 5}, 7)"));
  operands[1].push_back(L("(s32[2], s32[])", "({3, 2}, -1)"));
  std::vector<Literal> out = RunAll(Find(*module, "ar"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "(s32[2], s32[])", "({3, 5}, 7)");
  ExpectLiteral(out[1], "(s32[2], s32[])", "({3, 5}, 7)");
}

TEST(AllReduceTest, Bf16RoundsAfterEachStep) {
  // bf16 has 8 significant bits: in [256, 512) the spacing is 2, so 256 + 1 = 257 is a tie that
  // rounds to the even 256. Element 0 folds 256, 1, 1: 256 -> 256 -> 256 (exact sum 258).
  // Element 1 folds 1, 1, 256: 2 -> 258. The reversed group order swaps the two.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = bf16[2] parameter(0)
  fwd = bf16[2] all-reduce(p), replica_groups={{0,1,2}}, to_apply=sum_bf16
  ROOT rev = bf16[2] all-reduce(p), replica_groups={{2,1,0}}, to_apply=sum_bf16
)");
  std::vector<std::vector<Literal>> operands(3);
  operands[0].push_back(L("bf16[2]", "{256, 1}"));
  operands[1].push_back(L("bf16[2]", "{1, 1}"));
  operands[2].push_back(L("bf16[2]", "{1, 256}"));
  std::vector<Literal> fwd = RunAll(Find(*module, "fwd"), operands, 1, 3);
  std::vector<Literal> rev = RunAll(Find(*module, "rev"), operands, 1, 3);
  ASSERT_EQ(fwd.size(), 3u);
  ASSERT_EQ(rev.size(), 3u);
  for (int d = 0; d < 3; ++d) {
    ExpectLiteral(fwd[d], "bf16[2]", "{256, 258}");
    ExpectLiteral(rev[d], "bf16[2]", "{258, 256}");
  }
}

TEST(AllReduceTest, F16RoundsAfterEachStep) {
  // f16: spacing 2 in [2048, 4096); 2048 + 1 ties to 2048 twice.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f16[] parameter(0)
  ROOT ar = f16[] all-reduce(p), replica_groups={}, to_apply=sum_f16
)");
  std::vector<std::vector<Literal>> operands(3);
  operands[0].push_back(L("f16[]", "2048"));
  operands[1].push_back(L("f16[]", "1"));
  operands[2].push_back(L("f16[]", "1"));
  std::vector<Literal> out = RunAll(Find(*module, "ar"), operands, 1, 3);
  ASSERT_EQ(out.size(), 3u);
  for (const Literal& l : out) ExpectLiteral(l, "f16[]", "2048");
}

TEST(AllReduceTest, FloatMaximumKeepsEvaluatorOperandOrder) {
  // The evaluator's maximum: a NaN operand wins (lhs first), otherwise std::max(lhs, rhs), which
  // returns the lhs on ties: max(-0, +0) = -0, but with the reducer written maximum(b, a) the fold
  // computes max(+0, -0) = +0.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ab = f32[2] all-reduce(p), replica_groups={}, to_apply=max_f32
  ROOT ba = f32[2] all-reduce(p), replica_groups={}, to_apply=max_f32_swapped
)");
  std::vector<std::vector<Literal>> operands(3);
  operands[0].push_back(L("f32[2]", "{-0, 1}"));
  operands[1].push_back(L("f32[2]", "{0, nan}"));
  operands[2].push_back(L("f32[2]", "{-1, 2}"));
  std::vector<Literal> ab = RunAll(Find(*module, "ab"), operands, 1, 3);
  std::vector<Literal> ba = RunAll(Find(*module, "ba"), operands, 1, 3);
  ASSERT_EQ(ab.size(), 3u);
  ASSERT_EQ(ba.size(), 3u);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(ab[d].GetBits(0), 0x80000000u) << ab[d].ToString();
    EXPECT_TRUE(std::isnan(ab[d].GetDouble(1))) << ab[d].ToString();
    EXPECT_EQ(ba[d].GetBits(0), 0u) << ba[d].ToString();
    EXPECT_TRUE(std::isnan(ba[d].GetDouble(1))) << ba[d].ToString();
  }
}

TEST(AllReduceTest, IntegersWrapAndPredicatesCombine) {
  std::unique_ptr<HloModule> module = Parse(R"(
  a = s8[2] parameter(0)
  b = u8[2] parameter(1)
  c = pred[3] parameter(2)
  s8sum = s8[2] all-reduce(a), replica_groups={}, to_apply=sum_s8
  u8mul = u8[2] all-reduce(b), replica_groups={}, to_apply=mul_u8
  pand = pred[3] all-reduce(c), replica_groups={}, to_apply=and_pred
  ROOT por = pred[3] all-reduce(c), replica_groups={}, to_apply=or_pred
)");
  std::vector<std::vector<Literal>> s8(2), u8(2), pr(2);
  s8[0].push_back(L("s8[2]", "{100, -128}"));
  s8[1].push_back(L("s8[2]", "{100, -1}"));
  u8[0].push_back(L("u8[2]", "{16, 3}"));
  u8[1].push_back(L("u8[2]", "{16, 5}"));
  pr[0].push_back(L("pred[3]", "{true, true, false}"));
  pr[1].push_back(L("pred[3]", "{true, false, false}"));
  std::vector<Literal> out = RunAll(Find(*module, "s8sum"), s8, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[1], "s8[2]", "{-56, 127}");
  out = RunAll(Find(*module, "u8mul"), u8, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "u8[2]", "{0, 15}");
  out = RunAll(Find(*module, "pand"), pr, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "pred[3]", "{true, false, false}");
  out = RunAll(Find(*module, "por"), pr, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[1], "pred[3]", "{true, true, false}");
}

TEST(AllReduceTest, SingleMemberGroupsReturnTheOperand) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={{0},{1}}, to_apply=sub_f32
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "ar"),
      PerDevice(2, [](int64_t d) { return L("f32[2]", absl::StrCat("{", d, ", 7}")); }), 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "f32[2]", "{0, 7}");
  ExpectLiteral(out[1], "f32[2]", "{1, 7}");
}

TEST(AllReduceTest, StartAndDone) {
  std::unique_ptr<HloModule> module = Parse(R"(
  a = u32[] parameter(0)
  b = u32[] parameter(1)
  start = (u32[], u32[]) all-reduce-start(a, b), replica_groups={}, to_apply=sum_u32
  ROOT done = (u32[], u32[]) all-reduce-done(start)
)");
  // a_d = d, b_d = d*d over replicas 0..2: (3, 5).
  std::vector<std::vector<Literal>> operands(3);
  for (int d = 0; d < 3; ++d) {
    operands[d].push_back(L("u32[]", absl::StrCat(d)));
    operands[d].push_back(L("u32[]", absl::StrCat(d * d)));
  }
  std::vector<Literal> out = RunAll(Find(*module, "start"), operands, 1, 3);
  ASSERT_EQ(out.size(), 3u);
  for (const Literal& l : out) ExpectLiteral(l, "(u32[], u32[])", "(3, 5)");
  OpRegistry registry;
  RegisterCollectiveOps(registry);
  OpHandler done = registry.Find(HloOpcode::kAllReduceDone);
  ASSERT_NE(done, nullptr);
  const std::vector<const Literal*> args = {&out[1]};
  absl::StatusOr<Literal> value = done(Find(*module, "done"), args, EvalEnv{});
  ASSERT_TRUE(value.ok()) << value.status().message();
  ExpectLiteral(*value, "(u32[], u32[])", "(3, 5)");
}

// ---- all-gather
// ----------------------------------------------------------------------------------

TEST(AllGatherTest, CrossReplicaExplicitGroups) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[1,2] parameter(0)
  ROOT ag = s32[2,2] all-gather(p), replica_groups={{0,1},{2,3}}, dimensions={0}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "ag"),
      PerDevice(4,
                [](int64_t d) { return L("s32[1,2]", absl::StrCat("{{", d, ", ", 10 + d, "}}")); }),
      1, 4);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[2,2]", "{{0, 10}, {1, 11}}");
  ExpectLiteral(out[1], "s32[2,2]", "{{0, 10}, {1, 11}}");
  ExpectLiteral(out[2], "s32[2,2]", "{{2, 12}, {3, 13}}");
  ExpectLiteral(out[3], "s32[2,2]", "{{2, 12}, {3, 13}}");
}

TEST(AllGatherTest, CrossReplicaWithSeveralPartitions) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[1] parameter(0)
  ROOT ag = s32[2] all-gather(p), replica_groups={}, dimensions={0}
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "ag"),
             PerDevice(4, [](int64_t d) { return L("s32[1]", absl::StrCat("{", d, "}")); }), 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[2]", "{0, 2}");
  ExpectLiteral(out[1], "s32[2]", "{1, 3}");
  ExpectLiteral(out[2], "s32[2]", "{0, 2}");
  ExpectLiteral(out[3], "s32[2]", "{1, 3}");
}

TEST(AllGatherTest, CrossReplicaAndPartitionAlongDim1) {
  // replica_groups={{1,0}}, R = P = 2: rank order 2,3,0,1.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2,1] parameter(0)
  ROOT ag = s32[2,4] all-gather(p), channel_id=1, replica_groups={{1,0}}, dimensions={1}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "ag"),
      PerDevice(
          4, [](int64_t d) { return L("s32[2,1]", absl::StrCat("{{", d, "}, {", 10 + d, "}}")); }),
      2, 2);
  ASSERT_EQ(out.size(), 4u);
  for (const Literal& l : out) ExpectLiteral(l, "s32[2,4]", "{{2, 3, 0, 1}, {12, 13, 10, 11}}");
}

TEST(AllGatherTest, FlattenedTransposedIota) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[1] parameter(0)
  ROOT ag = f32[4] all-gather(p), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}, use_global_device_ids=true
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "ag"),
             PerDevice(8, [](int64_t d) { return L("f32[1]", absl::StrCat("{", d, "}")); }), 4, 2);
  ASSERT_EQ(out.size(), 8u);
  for (int d = 0; d < 8; ++d) {
    ExpectLiteral(out[d], "f32[4]", d % 2 == 0 ? "{0, 2, 4, 6}" : "{1, 3, 5, 7}");
  }
}

TEST(AllGatherTest, MiddleDimensionOfRank3) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2,1,2] parameter(0)
  ROOT ag = s32[2,2,2] all-gather(p), replica_groups={}, dimensions={1}
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "ag"),
             PerDevice(2,
                       [](int64_t d) {
                         const int64_t b = 100 * d;
                         return L("s32[2,1,2]", absl::StrCat("{{{", b, ", ", b + 1, "}}, {{", b + 2,
                                                             ", ", b + 3, "}}}"));
                       }),
             1, 2);
  ASSERT_EQ(out.size(), 2u);
  for (const Literal& l : out) {
    ExpectLiteral(l, "s32[2,2,2]", "{{{0, 1}, {100, 101}}, {{2, 3}, {102, 103}}}");
  }
}

TEST(AllGatherTest, VariadicOperands) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p0 = s32[1] parameter(0)
  p1 = f32[1,2] parameter(1)
  ROOT ag = (s32[2], f32[2,2]) all-gather(p0, p1), replica_groups={}, dimensions={0}
)");
  std::vector<std::vector<Literal>> operands(2);
  for (int d = 0; d < 2; ++d) {
    operands[d].push_back(L("s32[1]", absl::StrCat("{", d, "}")));
    operands[d].push_back(L("f32[1,2]", absl::StrCat("{{", d, ", ", d, ".5}}")));
  }
  std::vector<Literal> out = RunAll(Find(*module, "ag"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  for (const Literal& l : out) {
    ExpectLiteral(l, "(s32[2], f32[2,2])", "({0, 1}, {{0, 0.5}, {1, 1.5}})");
  }
}

TEST(AllGatherTest, DevicesInAnyOrder) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[1] parameter(0)
  ROOT ag = s32[2] all-gather(p), replica_groups={{0,1},{2,3}}, dimensions={0}
)");
  const std::vector<int64_t> devices = {3, 1, 0, 2};
  std::vector<std::vector<Literal>> operands;
  for (int64_t d : devices) {
    std::vector<Literal> ops;
    ops.push_back(L("s32[1]", absl::StrCat("{", 10 * d, "}")));
    operands.push_back(std::move(ops));
  }
  absl::StatusOr<std::vector<Literal>> out =
      RunCollective(Find(*module, "ag"), devices, operands, 1, 4);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 4u);
  ExpectLiteral((*out)[0], "s32[2]", "{20, 30}");
  ExpectLiteral((*out)[1], "s32[2]", "{0, 10}");
  ExpectLiteral((*out)[2], "s32[2]", "{0, 10}");
  ExpectLiteral((*out)[3], "s32[2]", "{20, 30}");
}

TEST(AllGatherTest, StartAndDone) {
  std::unique_ptr<HloModule> module = Parse(R"(
  a = u32[1,2] parameter(0)
  ags = (u32[1,2], u32[2,2]) all-gather-start(a), replica_groups={}, dimensions={0}
  ROOT done = u32[2,2] all-gather-done(ags)
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "ags"),
      PerDevice(
          2,
          [](int64_t d) { return L("u32[1,2]", absl::StrCat("{{", 10 + d, ", ", 15 + d, "}}")); }),
      1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "(u32[1,2], u32[2,2])", "({{10, 15}}, {{10, 15}, {11, 16}})");
  ExpectLiteral(out[1], "(u32[1,2], u32[2,2])", "({{11, 16}}, {{10, 15}, {11, 16}})");
  OpRegistry registry;
  RegisterCollectiveOps(registry);
  OpHandler done = registry.Find(HloOpcode::kAllGatherDone);
  ASSERT_NE(done, nullptr);
  const std::vector<const Literal*> args = {&out[1]};
  absl::StatusOr<Literal> value = done(Find(*module, "done"), args, EvalEnv{});
  ASSERT_TRUE(value.ok()) << value.status().message();
  ExpectLiteral(*value, "u32[2,2]", "{{10, 15}, {11, 16}}");
}

TEST(AllGatherTest, WrongResultShapeIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[1] parameter(0)
  ROOT ag = f32[3] all-gather(p), replica_groups={}, dimensions={0}
)");
  ExpectInvalid(
      RunError(Find(*module, "ag"), PerDevice(2, [](int64_t) { return L("f32[1]", "{1}"); }), 1, 2),
      "ag", "f32[2]");
}

// ---- reduce-scatter
// ------------------------------------------------------------------------------

TEST(ReduceScatterTest, CrossReplica) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[4] parameter(0)
  ROOT rs = f32[2] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=sum_f32
)");
  std::vector<std::vector<Literal>> operands(2);
  operands[0].push_back(L("f32[4]", "{1, 2, 3, 4}"));
  operands[1].push_back(L("f32[4]", "{10, 20, 30, 40}"));
  std::vector<Literal> out = RunAll(Find(*module, "rs"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "f32[2]", "{11, 22}");
  ExpectLiteral(out[1], "f32[2]", "{33, 44}");
}

TEST(ReduceScatterTest, CrossReplicaAndPartitionBlocksFollowPosition) {
  // R = P = 2, replica_groups={{1,0}}: positions 0..3 are devices 2,3,0,1.
  // x_d[i] = 10d + i; the sum is 60 + 4i = {60, 64, ..., 88}.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[8] parameter(0)
  ROOT rs = s32[2] reduce-scatter(p), channel_id=1, replica_groups={{1,0}}, dimensions={0}, to_apply=sum_s32
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "rs"),
             PerDevice(4,
                       [](int64_t d) {
                         std::vector<std::string> v;
                         for (int i = 0; i < 8; ++i) v.push_back(absl::StrCat(10 * d + i));
                         return L("s32[8]", absl::StrCat("{", absl::StrJoin(v, ", "), "}"));
                       }),
             2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[2], "s32[2]", "{60, 64}");
  ExpectLiteral(out[3], "s32[2]", "{68, 72}");
  ExpectLiteral(out[0], "s32[2]", "{76, 80}");
  ExpectLiteral(out[1], "s32[2]", "{84, 88}");
}

TEST(ReduceScatterTest, FlattenedTransposedIotaAlongDim1) {
  // Groups {0,2,4,6} and {1,3,5,7}; x_d[r][c] = d*(c+1) + 100r. Group sums: 12(c+1) + 400r and
  // 16(c+1) + 400r; rank k keeps column k.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2,4] parameter(0)
  ROOT rs = s32[2,1] reduce-scatter(p), channel_id=1, replica_groups=[2,4]<=[4,2]T(1,0), use_global_device_ids=true, dimensions={1}, to_apply=sum_s32
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "rs"),
      PerDevice(8,
                [](int64_t d) {
                  return L("s32[2,4]", absl::StrCat("{{", d, ", ", 2 * d, ", ", 3 * d, ", ", 4 * d,
                                                    "}, {", d + 100, ", ", 2 * d + 100, ", ",
                                                    3 * d + 100, ", ", 4 * d + 100, "}}"));
                }),
      4, 2);
  ASSERT_EQ(out.size(), 8u);
  ExpectLiteral(out[0], "s32[2,1]", "{{12}, {412}}");
  ExpectLiteral(out[2], "s32[2,1]", "{{24}, {424}}");
  ExpectLiteral(out[4], "s32[2,1]", "{{36}, {436}}");
  ExpectLiteral(out[6], "s32[2,1]", "{{48}, {448}}");
  ExpectLiteral(out[1], "s32[2,1]", "{{16}, {416}}");
  ExpectLiteral(out[3], "s32[2,1]", "{{32}, {432}}");
  ExpectLiteral(out[5], "s32[2,1]", "{{48}, {448}}");
  ExpectLiteral(out[7], "s32[2,1]", "{{64}, {464}}");
}

TEST(ReduceScatterTest, VariadicOperands) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  ROOT rs = (f32[2], f32[2]) reduce-scatter(p0, p1), replica_groups={}, dimensions={0}, to_apply=sum_f32
)");
  std::vector<std::vector<Literal>> operands(2);
  operands[0].push_back(L("f32[4]", "{1, 2, 3, 4}"));
  operands[0].push_back(L("f32[4]", "{5, 6, 7, 8}"));
  operands[1].push_back(L("f32[4]", "{10, 20, 30, 40}"));
  operands[1].push_back(L("f32[4]", "{50, 60, 70, 80}"));
  std::vector<Literal> out = RunAll(Find(*module, "rs"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "(f32[2], f32[2])", "({11, 22}, {55, 66})");
  ExpectLiteral(out[1], "(f32[2], f32[2])", "({33, 44}, {77, 88})");
}

TEST(ReduceScatterTest, IndivisibleDimensionIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[4] parameter(0)
  ROOT rs = f32[1] reduce-scatter(p), replica_groups={}, dimensions={0}, to_apply=sum_f32
)");
  ExpectInvalid(RunError(Find(*module, "rs"),
                         PerDevice(3, [](int64_t) { return L("f32[4]", "{1, 2, 3, 4}"); }), 1, 3),
                "rs", "not divisible by the size 3");
}

// ---- all-to-all
// ----------------------------------------------------------------------------------

TEST(AllToAllTest, ArrayFormCrossPartitionPermutedGroup) {
  // P = R = 2, channel: groups per replica in rank order [1,0] and [3,2]; chunks of 2.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[4] parameter(0)
  ROOT a2a = s32[4] all-to-all(p), channel_id=1, replica_groups={{1,0}}, dimensions={0}
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "a2a"),
             PerDevice(4,
                       [](int64_t d) {
                         const int64_t b = 10 * d;
                         return L("s32[4]",
                                  absl::StrCat("{", b, ", ", b + 1, ", ", b + 2, ", ", b + 3, "}"));
                       }),
             2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[1], "s32[4]", "{10, 11, 0, 1}");
  ExpectLiteral(out[0], "s32[4]", "{12, 13, 2, 3}");
  ExpectLiteral(out[3], "s32[4]", "{30, 31, 20, 21}");
  ExpectLiteral(out[2], "s32[4]", "{32, 33, 22, 23}");
}

TEST(AllToAllTest, ArrayFormAlongDim1) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2,2] parameter(0)
  ROOT a2a = s32[2,2] all-to-all(p), replica_groups={}, dimensions={1}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "a2a"),
      PerDevice(2,
                [](int64_t d) {
                  const int64_t b = 10 * d;
                  return L("s32[2,2]",
                           absl::StrCat("{{", b, ", ", b + 1, "}, {", b + 2, ", ", b + 3, "}}"));
                }),
      1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "s32[2,2]", "{{0, 10}, {2, 12}}");
  ExpectLiteral(out[1], "s32[2,2]", "{{1, 11}, {3, 13}}");
}

TEST(AllToAllTest, TupleForm) {
  // Groups [2,1] and [3,0]: member at rank j receives operand j of every member, in rank order.
  std::unique_ptr<HloModule> module = Parse(R"(
  a = u32[2] parameter(0)
  b = u32[2] parameter(1)
  ROOT a2a = (u32[2], u32[2]) all-to-all(a, b), replica_groups={{2,1},{3,0}}
)");
  std::vector<std::vector<Literal>> operands(4);
  for (int d = 0; d < 4; ++d) {
    operands[d].push_back(L("u32[2]", absl::StrCat("{", d, ", ", d, "}")));
    operands[d].push_back(L("u32[2]", absl::StrCat("{", 10 + d, ", ", 10 + d, "}")));
  }
  std::vector<Literal> out = RunAll(Find(*module, "a2a"), operands, 1, 4);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[2], "(u32[2], u32[2])", "({2, 2}, {1, 1})");
  ExpectLiteral(out[1], "(u32[2], u32[2])", "({12, 12}, {11, 11})");
  ExpectLiteral(out[3], "(u32[2], u32[2])", "({3, 3}, {0, 0})");
  ExpectLiteral(out[0], "(u32[2], u32[2])", "({13, 13}, {10, 10})");
}

TEST(AllToAllTest, IndivisibleDimensionIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[3] parameter(0)
  ROOT a2a = s32[3] all-to-all(p), replica_groups={}, dimensions={0}
)");
  ExpectInvalid(RunError(Find(*module, "a2a"),
                         PerDevice(2, [](int64_t) { return L("s32[3]", "{1, 2, 3}"); }), 1, 2),
                "a2a", "not divisible by the size 2");
}

TEST(AllToAllTest, TupleFormNeedsOneOperandPerMember) {
  std::unique_ptr<HloModule> module = Parse(R"(
  a = u32[2] parameter(0)
  ROOT a2a = (u32[2], u32[2], u32[2]) all-to-all(a, a, a), replica_groups={}
)");
  std::vector<std::vector<Literal>> operands(2);
  for (int d = 0; d < 2; ++d) {
    for (int k = 0; k < 3; ++k) operands[d].push_back(L("u32[2]", "{1, 2}"));
  }
  ExpectInvalid(RunError(Find(*module, "a2a"), operands, 1, 2), "a2a", "one operand per member");
}

// ---- collective-permute
// --------------------------------------------------------------------------

TEST(CollectivePermuteTest, Rotation) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2] parameter(0)
  ROOT cp = s32[2] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "cp"),
      PerDevice(4, [](int64_t d) { return L("s32[2]", absl::StrCat("{", d, ", ", 10 * d, "}")); }),
      4, 1);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[2]", "{3, 30}");
  ExpectLiteral(out[1], "s32[2]", "{0, 0}");
  ExpectLiteral(out[2], "s32[2]", "{1, 10}");
  ExpectLiteral(out[3], "s32[2]", "{2, 20}");
}

TEST(CollectivePermuteTest, NonTargetsReceiveZeros) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ROOT cp = f32[2] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{1,2}}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "cp"),
      PerDevice(4,
                [](int64_t d) { return L("f32[2]", absl::StrCat("{", d + 1, ", ", d + 1, "}")); }),
      4, 1);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "f32[2]", "{0, 0}");
  ExpectLiteral(out[1], "f32[2]", "{1, 1}");
  ExpectLiteral(out[2], "f32[2]", "{2, 2}");
  ExpectLiteral(out[3], "f32[2]", "{0, 0}");
}

TEST(CollectivePermuteTest, SwapSelfPairAndZeroCrossReplica) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = u32[2] parameter(0)
  ROOT cp = u32[2] collective-permute(p), source_target_pairs={{1,0}, {0,1}, {2,2}}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "cp"),
      PerDevice(
          4, [](int64_t d) { return L("u32[2]", absl::StrCat("{", 10 + d, ", ", 10 + d, "}")); }),
      1, 4);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "u32[2]", "{11, 11}");
  ExpectLiteral(out[1], "u32[2]", "{10, 10}");
  ExpectLiteral(out[2], "u32[2]", "{12, 12}");
  ExpectLiteral(out[3], "u32[2]", "{0, 0}");
}

TEST(CollectivePermuteTest, PairsApplyWithinEachReplicaOrPartition) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  partitions = s32[] collective-permute(p), channel_id=1, source_target_pairs={{0,1}}
  ROOT replicas = s32[] collective-permute(p), source_target_pairs={{0,1}}
)");
  auto operands = PerDevice(4, [](int64_t d) { return L("s32[]", absl::StrCat(d + 1)); });
  // R = P = 2. Partition pairs: (r,0) -> (r,1): device 1 <- 0, device 3 <- 2.
  std::vector<Literal> out = RunAll(Find(*module, "partitions"), operands, 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[]", "0");
  ExpectLiteral(out[1], "s32[]", "1");
  ExpectLiteral(out[2], "s32[]", "0");
  ExpectLiteral(out[3], "s32[]", "3");
  // Replica pairs: (0,p) -> (1,p): device 2 <- 0, device 3 <- 1.
  out = RunAll(Find(*module, "replicas"), operands, 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[]", "0");
  ExpectLiteral(out[1], "s32[]", "0");
  ExpectLiteral(out[2], "s32[]", "1");
  ExpectLiteral(out[3], "s32[]", "2");
}

TEST(CollectivePermuteTest, StartAndDone) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = u32[2] parameter(0)
  start = (u32[2], u32[2]) collective-permute-start(p), source_target_pairs={{0,1}, {1,0}}
  ctx = (u32[2], u32[2], u32[], u32[]) collective-permute-start(p), source_target_pairs={{0,1}}
  ROOT done = u32[2] collective-permute-done(start)
)");
  auto operands = PerDevice(
      2, [](int64_t d) { return L("u32[2]", absl::StrCat("{", 10 + d, ", ", 10 + d, "}")); });
  std::vector<Literal> out = RunAll(Find(*module, "start"), operands, 1, 2);
  ASSERT_EQ(out.size(), 2u);
  ExpectLiteral(out[0], "(u32[2], u32[2])", "({10, 10}, {11, 11})");
  ExpectLiteral(out[1], "(u32[2], u32[2])", "({11, 11}, {10, 10})");
  std::vector<Literal> ctx = RunAll(Find(*module, "ctx"), operands, 1, 2);
  ASSERT_EQ(ctx.size(), 2u);
  ExpectLiteral(ctx[0], "(u32[2], u32[2], u32[], u32[])", "({10, 10}, {0, 0}, 0, 0)");
  ExpectLiteral(ctx[1], "(u32[2], u32[2], u32[], u32[])", "({11, 11}, {10, 10}, 0, 0)");
  OpRegistry registry;
  RegisterCollectiveOps(registry);
  OpHandler done = registry.Find(HloOpcode::kCollectivePermuteDone);
  ASSERT_NE(done, nullptr);
  const std::vector<const Literal*> args = {&out[0]};
  absl::StatusOr<Literal> value = done(Find(*module, "done"), args, EvalEnv{});
  ASSERT_TRUE(value.ok()) << value.status().message();
  ExpectLiteral(*value, "u32[2]", "{11, 11}");
}

TEST(CollectivePermuteTest, BadPairsAreErrors) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  range = s32[] collective-permute(p), channel_id=1, source_target_pairs={{0,4}}
  target = s32[] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{2,1}}
  ROOT source = s32[] collective-permute(p), channel_id=1, source_target_pairs={{0,1},{0,2}}
)");
  auto operands = PerDevice(4, [](int64_t d) { return L("s32[]", absl::StrCat(d)); });
  ExpectInvalid(RunError(Find(*module, "range"), operands, 4, 1), "range",
                "partition id 4 in source_target_pairs is out of range [0, 4)");
  ExpectInvalid(RunError(Find(*module, "target"), operands, 4, 1), "target",
                "target 1 appears twice");
  ExpectInvalid(RunError(Find(*module, "source"), operands, 4, 1), "source",
                "source 0 appears twice");
}

TEST(CollectivePermuteTest, EveryPartitionMustArrive) {
  // Devices 2 and 3 take no part in the pair but are part of the rendezvous.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  ROOT cp = s32[] collective-permute(p), channel_id=1, source_target_pairs={{0,1}}
)");
  auto operands = PerDevice(2, [](int64_t d) { return L("s32[]", absl::StrCat(d)); });
  absl::StatusOr<std::vector<Literal>> out =
      RunCollective(Find(*module, "cp"), {0, 1}, operands, 4, 1);
  ASSERT_FALSE(out.ok());
  ExpectInvalid(out.status(), "cp", "devices {2,3}");
}

// ---- collective-broadcast
// ------------------------------------------------------------------------

TEST(CollectiveBroadcastTest, FirstMemberIsTheSource) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[2] parameter(0)
  ROOT cb = s32[2] collective-broadcast(p), channel_id=1, replica_groups={{2,0},{1,3}}
)");
  std::vector<Literal> out = RunAll(
      Find(*module, "cb"),
      PerDevice(4, [](int64_t d) { return L("s32[2]", absl::StrCat("{", d, ", ", 10 * d, "}")); }),
      4, 1);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[2]", "{2, 20}");
  ExpectLiteral(out[2], "s32[2]", "{2, 20}");
  ExpectLiteral(out[1], "s32[2]", "{1, 10}");
  ExpectLiteral(out[3], "s32[2]", "{1, 10}");
}

TEST(CollectiveBroadcastTest, CrossReplicaWithSeveralPartitions) {
  // No channel: replica group {1,0} per partition: [2,0] and [3,1].
  std::unique_ptr<HloModule> module = Parse(R"(
  p = s32[] parameter(0)
  ROOT cb = s32[] collective-broadcast(p), replica_groups={{1,0}}
)");
  std::vector<Literal> out =
      RunAll(Find(*module, "cb"),
             PerDevice(4, [](int64_t d) { return L("s32[]", absl::StrCat(100 + d)); }), 2, 2);
  ASSERT_EQ(out.size(), 4u);
  ExpectLiteral(out[0], "s32[]", "102");
  ExpectLiteral(out[2], "s32[]", "102");
  ExpectLiteral(out[1], "s32[]", "103");
  ExpectLiteral(out[3], "s32[]", "103");
}

// ---- Participation and consistency errors
// --------------------------------------------------------

TEST(CollectiveErrorsTest, MissingParticipantIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[] parameter(0)
  ROOT ar = f32[] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum_f32
)");
  auto operands = PerDevice(3, [](int64_t d) { return L("f32[]", absl::StrCat(d)); });
  absl::StatusOr<std::vector<Literal>> out =
      RunCollective(Find(*module, "ar"), {0, 1, 2}, operands, 1, 4);
  ASSERT_FALSE(out.ok());
  ExpectInvalid(out.status(), "ar", "devices {3} of group {2,3}");
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("devices {2}"));
}

TEST(CollectiveErrorsTest, AWholeAbsentGroupIsFine) {
  // Devices 2 and 3 are elsewhere (e.g. another branch); group {0,1} is complete.
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[] parameter(0)
  ROOT ar = f32[] all-reduce(p), replica_groups={{0,1},{2,3}}, to_apply=sum_f32
)");
  auto operands = PerDevice(2, [](int64_t d) { return L("f32[]", absl::StrCat(d + 1)); });
  absl::StatusOr<std::vector<Literal>> out =
      RunCollective(Find(*module, "ar"), {0, 1}, operands, 1, 4);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out->size(), 2u);
  ExpectLiteral((*out)[0], "f32[]", "3");
  ExpectLiteral((*out)[1], "f32[]", "3");
}

TEST(CollectiveErrorsTest, MembersDisagreeingOnShapeIsAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ROOT ar = f32[2] all-reduce(p), replica_groups={}, to_apply=sum_f32
)");
  std::vector<std::vector<Literal>> operands(2);
  operands[0].push_back(L("f32[2]", "{1, 2}"));
  operands[1].push_back(L("f32[3]", "{1, 2, 3}"));
  ExpectInvalid(RunError(Find(*module, "ar"), operands, 1, 2), "ar",
                "disagree on the operand shape: device 0 has (f32[2]), device 1 has (f32[3])");
}

TEST(CollectiveErrorsTest, OverlappingGroupsAreAnError) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  ROOT ag = f32[4] all-gather(p), replica_groups={{0,1},{1,0}}, dimensions={0}
)");
  ExpectInvalid(RunError(Find(*module, "ag"),
                         PerDevice(2, [](int64_t) { return L("f32[2]", "{1, 2}"); }), 1, 2),
                "ag", "appears more than once");
}

TEST(CollectiveErrorsTest, GroupErrorsSurfaceThroughHandlers) {
  std::unique_ptr<HloModule> module = Parse(R"(
  p = f32[2] parameter(0)
  noch = f32[2] all-reduce(p), replica_groups={{0,1}}, use_global_device_ids=true, to_apply=sum_f32
  flat = f32[2] all-reduce(p), channel_id=1, replica_groups={}, use_global_device_ids=true, to_apply=sum_f32
  range = f32[2] all-reduce(p), replica_groups={{0,2}}, to_apply=sum_f32
  ROOT nogroup = f32[2] all-reduce(p), replica_groups={{0}}, to_apply=sum_f32
)");
  auto operands = PerDevice(2, [](int64_t) { return L("f32[2]", "{1, 2}"); });
  ExpectInvalid(RunError(Find(*module, "noch"), operands, 1, 2), "noch", "channel_id");
  ExpectInvalid(RunError(Find(*module, "flat"), operands, 2, 1), "flat", "flattened-id");
  ExpectInvalid(RunError(Find(*module, "range"), operands, 1, 2), "range", "out of range");
  ExpectInvalid(RunError(Find(*module, "nogroup"), operands, 1, 2), "nogroup",
                "replica id 1 is in no group");
}

// ---- Properties
// ----------------------------------------------------------------------------------

// all-reduce(add) over random flattened groups equals the per-group sums computed naively.
RC_GTEST_PROP(CollectiveProperties, AllReduceSumMatchesNaiveGroupSums, ()) {
  const int64_t R = *rc::gen::inRange<int64_t>(1, 4);
  const int64_t P = *rc::gen::inRange<int64_t>(1, 4);
  const int64_t n = R * P;
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[*rc::gen::inRange<int64_t>(0, i + 1)]);
  // Random cut points give non-uniform groups (legal for all-reduce).
  std::vector<std::vector<int64_t>> groups(1);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0 && *rc::gen::arbitrary<bool>()) groups.emplace_back();
    groups.back().push_back(order[i]);
  }
  std::vector<std::string> texts;
  for (const auto& g : groups) texts.push_back(absl::StrCat("{", absl::StrJoin(g, ","), "}"));
  std::unique_ptr<HloModule> module = Parse(absl::StrCat(
      "  p = s32[3] parameter(0)\n  ROOT ar = s32[3] all-reduce(p), channel_id=1, replica_groups={",
      absl::StrJoin(texts, ","), "}, use_global_device_ids=true, to_apply=sum_s32"));
  std::vector<std::vector<int32_t>> values(n, std::vector<int32_t>(3));
  std::vector<std::vector<Literal>> operands(n);
  for (int64_t d = 0; d < n; ++d) {
    Literal l(Shape::Array(PrimitiveType::kS32, {3}));
    for (int i = 0; i < 3; ++i) {
      values[d][i] = *rc::gen::arbitrary<int32_t>();
      l.SetInt64(i, values[d][i]);
    }
    operands[d].push_back(std::move(l));
  }
  absl::StatusOr<std::vector<Literal>> out =
      RunCollective(Find(*module, "ar"), AllDevices(n), operands, P, R);
  RC_ASSERT(out.ok());
  for (const auto& g : groups) {
    for (int i = 0; i < 3; ++i) {
      uint32_t sum = 0;
      for (int64_t d : g) sum += static_cast<uint32_t>(values[d][i]);
      for (int64_t d : g) RC_ASSERT((*out)[d].GetInt64(i) == static_cast<int32_t>(sum));
    }
  }
}

// all-to-all (array form) applied twice is the identity; all-gather puts member k's operand at
// block k (checked element by element).
RC_GTEST_PROP(CollectiveProperties, AllToAllTwiceIsIdentityAndAllGatherBlocks, ()) {
  const int64_t n = *rc::gen::inRange<int64_t>(1, 5);
  const int64_t dim = *rc::gen::inRange<int64_t>(0, 2);
  std::vector<int64_t> dims = {*rc::gen::inRange<int64_t>(1, 3), *rc::gen::inRange<int64_t>(1, 3)};
  dims[dim] *= n;
  std::vector<int64_t> group(n);
  std::iota(group.begin(), group.end(), 0);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(group[i], group[*rc::gen::inRange<int64_t>(0, i + 1)]);
  const std::string shape = absl::StrCat("s32[", dims[0], ",", dims[1], "]");
  std::vector<int64_t> gathered_dims = dims;
  gathered_dims[dim] *= n;
  const std::string gathered = absl::StrCat("s32[", gathered_dims[0], ",", gathered_dims[1], "]");
  std::unique_ptr<HloModule> module = Parse(
      absl::StrCat("  p = ", shape, " parameter(0)\n  a2a = ", shape,
                   " all-to-all(p), channel_id=1, replica_groups={{", absl::StrJoin(group, ","),
                   "}}, dimensions={", dim, "}\n  ROOT ag = ", gathered,
                   " all-gather(p), channel_id=2, replica_groups={{", absl::StrJoin(group, ","),
                   "}}, dimensions={", dim, "}, use_global_device_ids=true"));
  std::vector<std::vector<Literal>> operands(n);
  for (int64_t d = 0; d < n; ++d) {
    Literal l(Shape::Array(PrimitiveType::kS32, dims));
    for (int64_t i = 0; i < l.element_count(); ++i) l.SetInt64(i, *rc::gen::arbitrary<int32_t>());
    operands[d].push_back(std::move(l));
  }
  absl::StatusOr<std::vector<Literal>> once =
      RunCollective(Find(*module, "a2a"), AllDevices(n), operands, n, 1);
  RC_ASSERT(once.ok());
  std::vector<std::vector<Literal>> again(n);
  for (int64_t d = 0; d < n; ++d) again[d].push_back((*once)[d]);
  absl::StatusOr<std::vector<Literal>> twice =
      RunCollective(Find(*module, "a2a"), AllDevices(n), again, n, 1);
  RC_ASSERT(twice.ok());
  for (int64_t d = 0; d < n; ++d) RC_ASSERT((*twice)[d] == operands[d][0]);

  absl::StatusOr<std::vector<Literal>> ag =
      RunCollective(Find(*module, "ag"), AllDevices(n), operands, n, 1);
  RC_ASSERT(ag.ok());
  for (int64_t d = 0; d < n; ++d) {
    const Literal& out = (*ag)[d];
    for (int64_t i = 0; i < gathered_dims[0]; ++i) {
      for (int64_t j = 0; j < gathered_dims[1]; ++j) {
        const int64_t index[2] = {i, j};
        const int64_t k = index[dim] / dims[dim];  // rank of the member that owns this block
        int64_t local[2] = {i, j};
        local[dim] -= k * dims[dim];
        const Literal& src = operands[group[k]][0];
        RC_ASSERT(out.GetInt64(i * gathered_dims[1] + j) ==
                  src.GetInt64(local[0] * dims[1] + local[1]));
      }
    }
  }
}

}  // namespace
}  // namespace spmdcheck::oracle
