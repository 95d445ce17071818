#include "fuzz/program_gen.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "fuzz/program_builder.h"
#include "ir/hlo_printer.h"

namespace spmdcheck::fuzz {
namespace program_gen_internal {
bool Builder::While(Choices& ch, bool pipeline) {
  HloInstruction* x = Pick(ch);
  const Shape& xs = x->shape();
  if (pipeline && xs.rank() == 0) return false;
  const Shape counter = Shape::Scalar(PrimitiveType::kS32);
  std::vector<Shape> elements = {counter, xs};
  HloInstruction* w = nullptr;
  if (pipeline) {
    w = ValueOfShape(xs, x, ch);
    if (w == nullptr) return false;
    elements.push_back(xs);
  }
  const Shape state = Shape::Tuple(elements);
  const int64_t id = next_comp_id_++;
  const int64_t rotate_dim = xs.rank() == 0 ? -1 : ch.Below(xs.rank());
  // Body update of x: 0 negate, 1 add x+x, 2 rotate.
  int64_t update = pipeline ? 2 : ch.Below(3);
  if (update == 2 && (rotate_dim < 0 || xs.dimensions(rotate_dim) < 2)) update = 0;
  const int64_t trips = ch.Range(0, 4);

  // Sharding of the state: a pipeline shards its stage dim (the rotated one) over one mesh axis.
  std::optional<HloSharding> state_sharding;
  if (pipeline) {
    std::vector<std::vector<std::string>> dim_axes(xs.rank());
    const auto& axes = mesh_.axes();
    dim_axes[rotate_dim].push_back(axes[ch.Below(axes.size())].name);
    absl::StatusOr<HloSharding> xsh = mesh_.ShardingFor(dim_axes);
    if (!xsh.ok()) return false;
    std::vector<HloSharding> parts = {HloSharding::Replicate(), *xsh, *xsh};
    state_sharding = HloSharding::Tuple(std::move(parts));
  } else if (ch.Percent(options_.sharding_percent)) {
    const uint64_t seed = ch.Seed();
    state_sharding = RandomSharding(state, seed, static_cast<int>(ch.Below(101)));
  }
  auto shard = [&](HloInstruction* i) {
    if (state_sharding) i->set_sharding(*state_sharding);
  };

  // Condition: counter < trips.
  auto cond = std::make_unique<HloComputation>(absl::StrCat("cond.", id));
  {
    auto p = Make(HloOpcode::kParameter, "state", state);
    p->set_parameter_number(0);
    shard(p.get());
    HloInstruction* sp = Emit(cond.get(), std::move(p));
    auto i = Make(HloOpcode::kGetTupleElement, "counter", counter, {sp});
    i->mutable_attrs().tuple_index = 0;
    HloInstruction* ip = Emit(cond.get(), std::move(i));
    auto limit = Make(HloOpcode::kConstant, "trips", counter);
    Literal lit(counter);
    lit.SetInt64(0, trips);
    limit->set_literal(std::move(lit));
    HloInstruction* lp = Emit(cond.get(), std::move(limit));
    auto cmp = Make(HloOpcode::kCompare, "lt", Shape::Scalar(PrimitiveType::kPred), {ip, lp});
    cmp->mutable_attrs().direction = ComparisonDirection::kLt;
    HloInstruction* root = Emit(cond.get(), std::move(cmp));
    if (sp == nullptr || ip == nullptr || lp == nullptr || root == nullptr) return false;
    cond->set_root(root);
  }
  // Body.
  auto body = std::make_unique<HloComputation>(absl::StrCat("body.", id));
  {
    auto p = Make(HloOpcode::kParameter, "state", state);
    p->set_parameter_number(0);
    shard(p.get());
    HloInstruction* sp = Emit(body.get(), std::move(p));
    if (sp == nullptr) return false;
    std::vector<HloInstruction*> gte;
    for (int64_t e = 0; e < state.tuple_size(); ++e) {
      auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", elements[e], {sp});
      g->mutable_attrs().tuple_index = e;
      gte.push_back(Emit(body.get(), std::move(g)));
      if (gte.back() == nullptr) return false;
    }
    auto one = Make(HloOpcode::kConstant, "one", counter);
    Literal lit(counter);
    lit.SetInt64(0, 1);
    one->set_literal(std::move(lit));
    HloInstruction* onep = Emit(body.get(), std::move(one));
    HloInstruction* next =
        onep ? Emit(body.get(), Make(HloOpcode::kAdd, "next", counter, {gte[0], onep})) : nullptr;
    if (next == nullptr) return false;
    HloInstruction* xv = gte[1];
    HloInstruction* nx = nullptr;
    if (update == 0) {
      nx = Emit(body.get(), Make(HloOpcode::kNegate, "negate", xs, {xv}));
    } else if (update == 1) {
      nx = Emit(body.get(), Make(HloOpcode::kAdd, "add", xs, {xv, xv}));
    } else {
      // Rotate by `shift` along rotate_dim: concatenate(x[shift:], x[:shift]).
      const int64_t d = xs.dimensions(rotate_dim);
      const int64_t shift = 1 + ch.Below(d - 1);
      std::vector<SliceDim> hi, lo;
      std::vector<int64_t> hi_dims = xs.dimensions(), lo_dims = xs.dimensions();
      for (int64_t k = 0; k < xs.rank(); ++k) {
        SliceDim a{0, xs.dimensions(k), 1}, b{0, xs.dimensions(k), 1};
        if (k == rotate_dim) {
          a = {shift, d, 1};
          b = {0, shift, 1};
          hi_dims[k] = d - shift;
          lo_dims[k] = shift;
        }
        hi.push_back(a);
        lo.push_back(b);
      }
      auto s1 = Make(HloOpcode::kSlice, "slice", Shape::Array(xs.element_type(), hi_dims), {xv});
      s1->mutable_attrs().slice = hi;
      auto s2 = Make(HloOpcode::kSlice, "slice", Shape::Array(xs.element_type(), lo_dims), {xv});
      s2->mutable_attrs().slice = lo;
      HloInstruction* p1 = Emit(body.get(), std::move(s1));
      HloInstruction* p2 = Emit(body.get(), std::move(s2));
      if (p1 == nullptr || p2 == nullptr) return false;
      auto cat = Make(HloOpcode::kConcatenate, "rotate", xs, {p1, p2});
      cat->mutable_attrs().dimensions = std::vector<int64_t>{rotate_dim};
      nx = Emit(body.get(), std::move(cat));
      if (nx != nullptr && pipeline) {
        // Each stage adds its (invariant) weights: a shifted stage computation.
        nx = Emit(body.get(), Make(HloOpcode::kAdd, "stage", xs, {nx, gte[2]}));
      }
    }
    if (nx == nullptr) return false;
    std::vector<HloInstruction*> outs = {next, nx};
    if (pipeline) {
      // The weights go round through a copy: XLA's HLO -> StableHLO import turns a state element
      // the body passes through unchanged into an implicit capture and keeps the while's old
      // tuple sharding, which XLA then refuses (leaf_count == tuple_elements_.size()) -- a limit
      // of the route into XLA that jax programs never take, not of its partitioner.
      HloInstruction* w_out =
          Emit(body.get(), Make(HloOpcode::kCopy, "weights", elements[2], {gte[2]}));
      if (w_out == nullptr) return false;
      outs.push_back(w_out);
    }
    auto t = Make(HloOpcode::kTuple, "tuple", state, outs);
    shard(t.get());
    HloInstruction* root = Emit(body.get(), std::move(t));
    if (root == nullptr) return false;
    body->set_root(root);
  }
  // Entry: init tuple, while, get-tuple-element of x.
  HloInstruction* zero = ScalarConstant(PrimitiveType::kS32, 0, ch);
  if (zero == nullptr) return false;
  std::vector<HloInstruction*> init_ops = {zero, x};
  if (pipeline) init_ops.push_back(w);
  auto init = Make(HloOpcode::kTuple, "tuple", state, init_ops);
  shard(init.get());
  HloInstruction* ip = Emit(entry_, std::move(init));
  if (ip == nullptr) return false;
  auto loop = Make(HloOpcode::kWhile, pipeline ? "pipeline" : "while", state, {ip});
  loop->mutable_called().push_back(CalledComputations{"condition", {cond.get()}, false});
  loop->mutable_called().push_back(CalledComputations{"body", {body.get()}, false});
  shard(loop.get());
  HloInstruction* lp = Emit(entry_, std::move(loop));
  if (lp == nullptr) return false;
  pending_.push_back(std::move(cond));
  pending_.push_back(std::move(body));
  auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element", xs, {lp});
  g->mutable_attrs().tuple_index = 1;
  return EmitEntry(std::move(g), ch) != nullptr;
}

bool Builder::Step(GenOp op, Choices& ch) {
  switch (op) {
    case GenOp::kUnary:
      return Unary(ch);
    case GenOp::kBinary:
      return Binary(ch);
    case GenOp::kConvert:
      return Convert(ch);
    case GenOp::kCompareSelect:
      return CompareSelect(ch);
    case GenOp::kBroadcast:
      return Broadcast(ch);
    case GenOp::kReshape:
      return Reshape(ch);
    case GenOp::kTranspose:
      return Transpose(ch);
    case GenOp::kSlice:
      return Slice(ch);
    case GenOp::kPad:
      return Pad(ch);
    case GenOp::kConcatenate:
      return Concatenate(ch);
    case GenOp::kReverse:
      return Reverse(ch);
    case GenOp::kReduce:
      return Reduce(ch);
    case GenOp::kDot:
      return Dot(ch);
    case GenOp::kGather:
      return Gather(ch);
    case GenOp::kScatter:
      return Scatter(ch);
    case GenOp::kDynamicSlice:
      return DynamicSlice(ch);
    case GenOp::kDynamicUpdateSlice:
      return DynamicUpdateSlice(ch);
    case GenOp::kIota:
      return Iota(ch);
    case GenOp::kConstant:
      return Constant(ch);
    case GenOp::kParameter:
      return NewParameter(ch);
    case GenOp::kWhile:
      return While(ch, /*pipeline=*/false);
    case GenOp::kPipeline:
      return While(ch, /*pipeline=*/true);
    case GenOp::kPipelineSchedule:
      return PipelineSchedule(ch);
    case GenOp::kConvolution:
      return Convolution(ch);
    case GenOp::kSort:
      return Sort(ch);
    case GenOp::kTopK:
      return TopK(ch);
    case GenOp::kReduceWindow:
      return ReduceWindow(ch);
  }
  return false;
}

// Root: the only value nobody uses, or a tuple of every such value.
std::unique_ptr<HloModule> Builder::Finish(Choices& ch) {
  absl::flat_hash_set<const HloInstruction*> used;
  for (const auto& instr : entry_->instructions()) {
    for (const HloInstruction* o : instr->operands()) used.insert(o);
  }
  std::vector<HloInstruction*> sinks;
  for (HloInstruction* v : pool_) {
    if (!used.contains(v)) sinks.push_back(v);
  }
  if (sinks.empty()) sinks.push_back(pool_.back());
  HloInstruction* root = sinks.back();
  if (sinks.size() > 1) {
    std::vector<Shape> shapes;
    for (HloInstruction* s : sinks) shapes.push_back(s->shape());
    auto t = Make(HloOpcode::kTuple, "tuple", Shape::Tuple(shapes), sinks);
    root = Emit(entry_, std::move(t));
    if (root != nullptr) MaybeShard(root, ch);
  }
  entry_->set_root(root);
  return std::move(module_);
}

}  // namespace program_gen_internal

namespace {

using program_gen_internal::Builder;
using program_gen_internal::Checkpoint;
using program_gen_internal::Choices;
using program_gen_internal::Product;
using rc::Gen;
namespace gen = rc::gen;

constexpr const char* kGenOpNames[kNumGenOps] = {"unary",
                                                 "binary",
                                                 "convert",
                                                 "compare-select",
                                                 "broadcast",
                                                 "reshape",
                                                 "transpose",
                                                 "slice",
                                                 "pad",
                                                 "concatenate",
                                                 "reverse",
                                                 "reduce",
                                                 "dot",
                                                 "gather",
                                                 "scatter",
                                                 "dynamic-slice",
                                                 "dynamic-update-slice",
                                                 "iota",
                                                 "constant",
                                                 "parameter",
                                                 "while",
                                                 "pipeline",
                                                 "pipeline-schedule",
                                                 "convolution",
                                                 "sort",
                                                 "topk",
                                                 "reduce-window"};

// Reads choices from a block of bytes; bytes past the end read as 0, so 0 is always the

std::vector<int64_t> Reversed(std::vector<int64_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

Mesh MeshFromHeader(Choices& ch, int64_t max_devices, int64_t min_devices, bool allow_transposed) {
  static constexpr int64_t kSizes[] = {1, 2, 2, 4, 3, 2, 8, 4, 2, 6, 5, 16};
  const int64_t k = 1 + ch.Below(3);
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < k; ++i) sizes.push_back(kSizes[ch.Below(std::size(kSizes))]);
  while (Product(sizes) > std::max<int64_t>(1, max_devices)) {
    auto it = std::max_element(sizes.begin(), sizes.end());
    *it /= 2;
  }
  // Too few devices: double the first axis until there are enough (within max_devices).
  while (Product(sizes) < std::min(min_devices, max_devices)) sizes[0] *= 2;
  static const char* const kNames[] = {"x", "y", "z"};
  std::vector<MeshAxis> axes;
  for (int64_t i = 0; i < k; ++i) axes.push_back({kNames[i], sizes[i]});
  std::optional<TileAssignment> devices;
  if (k > 1 && ch.Below(3) == 2 && allow_transposed) {
    std::vector<int64_t> perm(k);
    std::iota(perm.begin(), perm.end(), 0);
    absl::StatusOr<TileAssignment> t = TileAssignment::Iota(sizes, Reversed(sizes), Reversed(perm));
    if (t.ok()) devices = *t;
  }
  absl::StatusOr<Mesh> mesh = Mesh::Create(axes, devices);
  if (!mesh.ok()) mesh = Mesh::Create(axes);
  return *mesh;
}

// What a step emits: an op, or a pattern on purpose.
struct StepKind {
  std::optional<GenOp> op;
  std::optional<GenPattern> pattern;
};

StepKind PickStep(Choices& ch, const ProgramGenOptions& options) {
  int64_t total = 0;
  for (int w : options.op_weights) total += std::max(w, 0);
  for (int w : options.pattern_weights) total += std::max(w, 0);
  if (total <= 0) return {GenOp::kUnary, std::nullopt};
  int64_t pick = ch.Below(total);
  for (int i = 0; i < kNumGenOps; ++i) {
    const int64_t w = std::max(options.op_weights[i], 0);
    if (pick < w) return {static_cast<GenOp>(i), std::nullopt};
    pick -= w;
  }
  for (int i = 0; i < kNumGenPatterns; ++i) {
    const int64_t w = std::max(options.pattern_weights[i], 0);
    if (pick < w) return {std::nullopt, static_cast<GenPattern>(i)};
    pick -= w;
  }
  return {GenOp::kUnary, std::nullopt};
}

// Whether the instructions a step added (entry instructions from `first` on, and the step's
// new computations) contain a pattern of weight 0.
bool StepHasDisabledPattern(const Builder& b, int64_t first, const ProgramGenOptions& options) {
  if (!options.exclude_disabled_patterns) return false;
  auto disabled = [&](const HloInstruction& instr) {
    for (GenPattern p : DetectPatterns(instr, &b.mesh())) {
      if (options.pattern_weights[static_cast<int>(p)] <= 0) return true;
    }
    return false;
  };
  const auto& entry = b.entry()->instructions();
  for (int64_t i = first; i < static_cast<int64_t>(entry.size()); ++i) {
    if (disabled(*entry[i])) return true;
  }
  for (const auto& comp : b.pending()) {
    for (const auto& instr : comp->instructions()) {
      if (disabled(*instr)) return true;
    }
  }
  return false;
}

}  // namespace

absl::string_view GenOpName(GenOp op) { return kGenOpNames[static_cast<int>(op)]; }

std::array<int, kNumGenOps> ProgramGenOptions::DefaultOpWeights() {
  std::array<int, kNumGenOps> w{};
  auto set = [&w](GenOp op, int weight) { w[static_cast<int>(op)] = weight; };
  set(GenOp::kUnary, 6);
  set(GenOp::kBinary, 10);
  set(GenOp::kConvert, 3);
  set(GenOp::kCompareSelect, 4);
  set(GenOp::kBroadcast, 6);
  set(GenOp::kReshape, 8);
  set(GenOp::kTranspose, 6);
  set(GenOp::kSlice, 6);
  set(GenOp::kPad, 5);
  set(GenOp::kConcatenate, 5);
  set(GenOp::kReverse, 3);
  set(GenOp::kReduce, 6);
  set(GenOp::kDot, 8);
  set(GenOp::kGather, 4);
  set(GenOp::kScatter, 4);
  set(GenOp::kDynamicSlice, 4);
  set(GenOp::kDynamicUpdateSlice, 4);
  set(GenOp::kIota, 2);
  set(GenOp::kConstant, 2);
  set(GenOp::kParameter, 3);
  set(GenOp::kWhile, 3);
  set(GenOp::kPipeline, 2);
  set(GenOp::kPipelineSchedule, 2);
  set(GenOp::kConvolution, 3);
  set(GenOp::kSort, 3);
  set(GenOp::kTopK, 2);
  set(GenOp::kReduceWindow, 3);
  return w;
}

std::array<int, kNumGenOps> ProgramGenOptions::NarrowOpWeights() {
  std::array<int, kNumGenOps> w = DefaultOpWeights();
  for (GenOp op : {GenOp::kCompareSelect, GenOp::kPad, GenOp::kConcatenate, GenOp::kReverse,
                   GenOp::kGather, GenOp::kScatter, GenOp::kDynamicSlice,
                   GenOp::kDynamicUpdateSlice, GenOp::kIota, GenOp::kWhile, GenOp::kPipeline}) {
    w[static_cast<int>(op)] = 0;
  }
  for (GenOp op : {GenOp::kPipelineSchedule, GenOp::kConvolution, GenOp::kSort, GenOp::kTopK,
                   GenOp::kReduceWindow}) {
    w[static_cast<int>(op)] = 0;
  }
  return w;
}

void showValue(const ProgramRecipe& recipe, std::ostream& os) {
  os << "recipe: " << recipe.steps.size() << " steps";
}

std::ostream& operator<<(std::ostream& os, const GeneratedProgram& program) {
  os << "// generated program: num_partitions=" << program.num_partitions
     << ", entry instructions=" << program.instruction_count << "\n"
     << program.hlo_text;
  return os;
}

void showValue(const GeneratedProgram& program, std::ostream& os) { os << program; }

absl::StatusOr<GeneratedProgram> BuildProgram(const ProgramRecipe& recipe,
                                              const ProgramGenOptions& options) {
  if (options.max_instructions < 1 || options.max_rank < 1 || options.max_dim < 1 ||
      options.max_elements < 1) {
    return absl::InvalidArgumentError("program generator options must be positive");
  }
  Choices header(recipe.header);
  Mesh mesh = MeshFromHeader(
      header, options.max_devices, options.min_devices,
      !options.exclude_disabled_patterns ||
          options.pattern_weights[static_cast<int>(GenPattern::kTransposedIotaDevices)] > 0);
  static constexpr PrimitiveType kBaseTypes[] = {PrimitiveType::kF32, PrimitiveType::kS32,
                                                 PrimitiveType::kF32, PrimitiveType::kBF16};
  PrimitiveType base = kBaseTypes[header.Below(std::size(kBaseTypes))];
  if (base == PrimitiveType::kBF16 && options.exclude_disabled_patterns &&
      options.pattern_weights[static_cast<int>(GenPattern::kNarrowFloat)] <= 0) {
    base = PrimitiveType::kF32;
  }
  const bool one_mesh = options.one_mesh_percent >= 100 ||
                        (options.one_mesh_percent > 0 && header.Percent(options.one_mesh_percent));
  Builder b(options, std::move(mesh), base, one_mesh);
  // The first parameter, so that every step has an operand.
  {
    const std::vector<int64_t> dims = b.RandomDims(header, 1);
    HloInstruction* first = b.Parameter(Shape::Array(base, dims), header);
    if (first == nullptr) {
      return absl::InternalError("program generator: the first parameter is invalid");
    }
    b.DropDisabledSharding(first);
  }
  for (const std::vector<uint8_t>& step : recipe.steps) {
    if (b.EntryCount() >= options.max_instructions - 1) break;
    Choices ch(step);
    const StepKind kind = PickStep(ch, options);
    const Checkpoint cp = b.Save();
    const bool ok = kind.op.has_value() ? b.Step(*kind.op, ch) : b.PatternStep(*kind.pattern, ch);
    b.ClearForcing();
    if (!ok || b.EntryCount() > options.max_instructions - 1 ||
        StepHasDisabledPattern(b, cp.instructions, options)) {
      b.Restore(cp);
    } else {
      b.Commit();
    }
  }
  std::unique_ptr<HloModule> module = b.Finish(header);
  if (module->entry()->root() != nullptr) b.DropDisabledSharding(module->entry()->root());
  if (module->entry()->root() == nullptr) {
    return absl::InternalError("program generator: no root");
  }
  GeneratedProgram out;
  out.num_partitions = module->num_partitions();
  out.instruction_count = module->entry()->instruction_count();
  out.hlo_text = PrintModule(*module);
  for (GenPattern p : DetectPatterns(*module, &b.mesh())) {
    out.patterns.emplace_back(GenPatternName(p));
  }
  out.mesh = b.mesh();
  out.one_mesh = b.one_mesh();
  out.module = std::move(module);
  return out;
}

Gen<ProgramRecipe> GenProgramRecipe(const ProgramGenOptions& options) {
  const auto byte = gen::resize(100, gen::inRange<int>(0, 256));
  const auto block = [byte](size_t n) {
    return gen::map(gen::container<std::vector<int>>(n, byte), [](const std::vector<int>& v) {
      return std::vector<uint8_t>(v.begin(), v.end());
    });
  };
  const size_t max_steps = static_cast<size_t>(std::max<int64_t>(1, options.max_instructions));
  return gen::map(
      gen::pair(
          block(kRecipeHeaderBytes),
          gen::scale(static_cast<double>(max_steps) / 100.0,
                     gen::container<std::vector<std::vector<uint8_t>>>(block(kRecipeStepBytes)))),
      [max_steps](std::pair<std::vector<uint8_t>, std::vector<std::vector<uint8_t>>> p) {
        ProgramRecipe r;
        r.header = std::move(p.first);
        r.steps = std::move(p.second);
        if (r.steps.size() > max_steps) r.steps.resize(max_steps);
        return r;
      });
}

Gen<GeneratedProgram> GenProgram(const ProgramGenOptions& options) {
  return gen::map(GenProgramRecipe(options), [options](const ProgramRecipe& recipe) {
    absl::StatusOr<GeneratedProgram> p = BuildProgram(recipe, options);
    if (p.ok()) return *std::move(p);
    GeneratedProgram bad;
    bad.hlo_text = absl::StrCat("<generator error: ", p.status().message(), ">");
    return bad;
  });
}

ProgramRecipe RecipeFromBytes(absl::Span<const uint8_t> data, const ProgramGenOptions& options) {
  ProgramRecipe r;
  const size_t h = std::min(data.size(), kRecipeHeaderBytes);
  r.header.assign(data.begin(), data.begin() + h);
  data.remove_prefix(h);
  const size_t max_steps = static_cast<size_t>(std::max<int64_t>(1, options.max_instructions));
  while (!data.empty() && r.steps.size() < max_steps) {
    const size_t n = std::min(data.size(), kRecipeStepBytes);
    r.steps.emplace_back(data.begin(), data.begin() + n);
    data.remove_prefix(n);
  }
  return r;
}

absl::StatusOr<GeneratedProgram> ProgramFromBytes(absl::Span<const uint8_t> data,
                                                  const ProgramGenOptions& options) {
  return BuildProgram(RecipeFromBytes(data, options), options);
}

}  // namespace spmdcheck::fuzz
