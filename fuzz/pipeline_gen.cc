#include "fuzz/pipeline_gen.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/literal.h"

namespace spmdcheck::fuzz {
namespace {

namespace gen = rc::gen;

constexpr const char* kAxisNames[] = {"stage", "data", "tensor"};

class Emitter {
 public:
  Emitter(const PipelineSpec& spec, const Mesh& mesh, int stage, int data, int tensor,
          PipelineSink& sink)
      : spec_(spec), mesh_(mesh), stage_(stage), data_(data), tensor_(tensor), sink_(sink) {}

  absl::StatusOr<HloInstruction*> Emit();

 private:
  Shape Array(const std::vector<int64_t>& dims) const {
    return Shape::Array(PrimitiveType::kF32, dims);
  }
  int64_t S() const { return spec_.stages; }
  int64_t R() const { return spec_.rows_per_device * spec_.data; }
  int64_t H() const { return spec_.hidden_per_device * spec_.tensor; }
  int64_t M() const { return spec_.micro_batches; }
  bool OneFOneB() const { return spec_.schedule == PipelineSchedule::kOneFOneB; }
  bool HasTensor() const { return tensor_ >= 0; }

  // The sharding splitting each dim over the listed axes (indices; -1 entries skipped).
  absl::StatusOr<HloSharding> Shard(const std::vector<std::vector<int>>& dims) const {
    std::vector<std::vector<std::string>> names;
    for (const auto& d : dims) {
      std::vector<std::string> n;
      for (int a : d) {
        if (a >= 0) n.push_back(mesh_.axes()[a].name);
      }
      names.push_back(std::move(n));
    }
    return mesh_.ShardingFor(names);
  }

  std::unique_ptr<HloInstruction> Make(HloOpcode op, absl::string_view stem, Shape shape,
                                       std::vector<HloInstruction*> operands) {
    auto h = std::make_unique<HloInstruction>(op, sink_.name(stem), std::move(shape));
    h->set_operands(std::move(operands));
    return h;
  }
  HloInstruction* Put(HloComputation* comp, std::unique_ptr<HloInstruction> h) {
    if (comp == nullptr) return sink_.add(std::move(h));
    return comp->AddInstruction(std::move(h));
  }
  HloInstruction* Constant(HloComputation* comp, int64_t value) {
    auto c = Make(HloOpcode::kConstant, "constant", Shape::Scalar(PrimitiveType::kS32), {});
    Literal lit(Shape::Scalar(PrimitiveType::kS32));
    lit.SetInt64(0, value);
    c->set_literal(std::move(lit));
    return Put(comp, std::move(c));
  }
  HloInstruction* Gte(HloComputation* comp, HloInstruction* tuple, int64_t index,
                      const HloSharding* sharding) {
    auto g = Make(HloOpcode::kGetTupleElement, "get-tuple-element",
                  tuple->shape().tuple_shapes()[index], {tuple});
    g->mutable_attrs().tuple_index = index;
    if (sharding != nullptr) g->set_sharding(*sharding);
    return Put(comp, std::move(g));
  }
  HloInstruction* DynamicSlice(HloComputation* comp, absl::string_view stem, HloInstruction* x,
                               HloInstruction* first, HloInstruction* zero,
                               const HloSharding& sharding) {
    std::vector<int64_t> sizes = x->shape().dimensions();
    sizes[0] = 1;
    auto ds = Make(HloOpcode::kDynamicSlice, stem, Array(sizes), {x, first, zero, zero});
    ds->mutable_attrs().dynamic_slice_sizes = sizes;
    ds->set_sharding(sharding);
    return Put(comp, std::move(ds));
  }
  HloInstruction* UpdateSlice(HloComputation* comp, absl::string_view stem, HloInstruction* x,
                              HloInstruction* update, HloInstruction* first, HloInstruction* zero,
                              const HloSharding& sharding) {
    auto dus =
        Make(HloOpcode::kDynamicUpdateSlice, stem, x->shape(), {x, update, first, zero, zero});
    dus->set_sharding(sharding);
    return Put(comp, std::move(dus));
  }
  // dot over the stage (batch) dim: x [S,R,H] with w [S,H,H], contracting x dim 2 with w dim
  // `w_dim`.
  HloInstruction* StageDot(HloComputation* comp, HloInstruction* x, HloInstruction* w,
                           int64_t w_dim, const HloSharding& sharding) {
    auto d = Make(HloOpcode::kDot, "stage_dot", Array({S(), R(), H()}), {x, w});
    d->mutable_attrs().dot_dimension_numbers = DotDimensionNumbers{{0}, {0}, {2}, {w_dim}};
    d->set_sharding(sharding);
    return Put(comp, std::move(d));
  }
  HloInstruction* Tanh(HloComputation* comp, HloInstruction* x, const HloSharding& sharding) {
    auto t = Make(HloOpcode::kTanh, "tanh", x->shape(), {x});
    t->set_sharding(sharding);
    return Put(comp, std::move(t));
  }
  // One stage: forward uses W1 then (tensor axis) W2; backward the transposed weights in reverse.
  // Without dots: x * W1, tanh.
  HloInstruction* Stage(HloComputation* comp, HloInstruction* x, HloInstruction* w1,
                        HloInstruction* w2, bool backward) {
    if (!spec_.dot_stages) {
      auto m = Make(HloOpcode::kMultiply, "stage_multiply", x->shape(), {x, w1});
      m->set_sharding(stream_);
      return Tanh(comp, Put(comp, std::move(m)), stream_);
    }
    if (!HasTensor()) return Tanh(comp, StageDot(comp, x, w1, backward ? 2 : 1, stream_), stream_);
    if (!backward) {
      HloInstruction* h = Tanh(comp, StageDot(comp, x, w1, 1, hidden_), hidden_);
      return StageDot(comp, h, w2, 1, stream_);
    }
    HloInstruction* g = Tanh(comp, StageDot(comp, x, w2, 2, hidden_), hidden_);
    return StageDot(comp, g, w1, 2, stream_);
  }
  HloInstruction* Slice(HloComputation* comp, HloInstruction* x, int64_t from, int64_t to) {
    std::vector<int64_t> dims = x->shape().dimensions();
    dims[0] = to - from;
    auto s = Make(HloOpcode::kSlice, "roll_part", Array(dims), {x});
    std::vector<SliceDim> slice;
    for (size_t k = 0; k < dims.size(); ++k) {
      slice.push_back(k == 0 ? SliceDim{from, to, 1} : SliceDim{0, x->shape().dimensions(k), 1});
    }
    s->mutable_attrs().slice = std::move(slice);
    return Put(comp, std::move(s));
  }
  // The slots of x rotate by `direction` along the stage axis: in a manual region, or as a roll
  // of the global value (which always wraps).
  HloInstruction* Rotate(HloComputation* comp, HloInstruction* x, int direction, bool wrap) {
    if (!spec_.manual_rotation) {
      const int64_t cut = direction > 0 ? S() - 1 : 1;
      HloInstruction* head = Slice(comp, x, cut, S());
      HloInstruction* tail = Slice(comp, x, 0, cut);
      auto cat = Make(HloOpcode::kConcatenate, direction > 0 ? "roll_next" : "roll_prev",
                      x->shape(), {head, tail});
      cat->mutable_attrs().dimensions = std::vector<int64_t>{0};
      cat->set_sharding(stream_);
      return Put(comp, std::move(cat));
    }
    auto ann = Make(HloOpcode::kCustomCall, "rotate_sharding", x->shape(), {x});
    ann->mutable_attrs().custom_call_target = "Sharding";
    ann->set_sharding(stream_);
    HloInstruction* a = Put(comp, std::move(ann));
    const Shape local = stream_.TileShape(x->shape());
    auto to_shard = Make(HloOpcode::kCustomCall, "rotate_local", local, {a});
    to_shard->mutable_attrs().custom_call_target = "SPMDFullToShardShape";
    to_shard->set_sharding(HloSharding::Manual());
    HloInstruction* l = Put(comp, std::move(to_shard));
    SourceTargetPairs pairs;
    const TileAssignment& devices = mesh_.devices();
    std::vector<int64_t> index(devices.num_dimensions(), 0);
    for (int64_t linear = 0; linear < devices.num_elements(); ++linear) {
      index = MultiIndex(devices.dims(), linear);
      std::vector<int64_t> to = index;
      to[stage_] += direction;
      if (to[stage_] < 0 || to[stage_] >= S()) {
        if (!wrap) continue;
        to[stage_] = (to[stage_] + S()) % S();
      }
      pairs.push_back({devices.DeviceAt(index), devices.DeviceAt(to)});
    }
    auto permute = Make(HloOpcode::kCollectivePermute,
                        direction > 0 ? "rotate_next" : "rotate_prev", local, {l});
    permute->mutable_attrs().source_target_pairs = std::move(pairs);
    permute->mutable_attrs().channel_id = next_channel_++;
    permute->set_sharding(HloSharding::Manual());
    HloInstruction* p = Put(comp, std::move(permute));
    auto to_full = Make(HloOpcode::kCustomCall, "rotated", x->shape(), {p});
    to_full->mutable_attrs().custom_call_target = "SPMDShardToFullShape";
    to_full->set_sharding(stream_);
    return Put(comp, std::move(to_full));
  }

  const PipelineSpec& spec_;
  const Mesh& mesh_;
  int stage_, data_, tensor_;
  PipelineSink& sink_;
  HloSharding stream_, hidden_, w1_, w2_, rows_, tuple_;
  int64_t next_channel_ = 1;
};

absl::StatusOr<HloInstruction*> Emitter::Emit() {
  if (S() < 2 || M() < 1 || spec_.rows_per_device < 1 || spec_.hidden_per_device < 1) {
    return absl::InvalidArgumentError("pipeline spec: sizes must be positive and stages >= 2");
  }
  if (stage_ < 0 || mesh_.axes()[stage_].size != S() ||
      (data_ >= 0 && mesh_.axes()[data_].size != spec_.data) || (data_ < 0 && spec_.data != 1) ||
      (tensor_ >= 0 && mesh_.axes()[tensor_].size != spec_.tensor) ||
      (tensor_ < 0 && spec_.tensor != 1)) {
    return absl::InvalidArgumentError("pipeline spec: axis sizes do not match the mesh");
  }
  absl::StatusOr<HloSharding> stream =
      Shard({{stage_}, {data_}, {spec_.dot_stages ? -1 : tensor_}});
  absl::StatusOr<HloSharding> hidden = Shard({{stage_}, {data_}, {tensor_}});
  absl::StatusOr<HloSharding> w1 = Shard({{stage_}, {}, {tensor_}});
  absl::StatusOr<HloSharding> w2 = Shard({{stage_}, {tensor_}, {}});
  absl::StatusOr<HloSharding> rows = Shard({{}, {data_}, {}});
  for (const auto* s : {&stream, &hidden, &w1, &w2, &rows}) {
    if (!s->ok()) return s->status();
  }
  stream_ = *stream;
  hidden_ = *hidden;
  w1_ = *w1;
  w2_ = *w2;
  rows_ = *rows;
  // State: counter, streams, weights, inputs, outputs.
  const Shape counter = Shape::Scalar(PrimitiveType::kS32);
  const Shape slots = Array({S(), R(), H()});
  const Shape weights = spec_.dot_stages ? Array({S(), H(), H()}) : slots;
  const Shape buffer = Array({M(), R(), H()});
  std::vector<Shape> shapes = {counter, slots};
  std::vector<HloSharding> shardings = {HloSharding::Replicate(), stream_};
  if (OneFOneB()) {
    shapes.push_back(slots);
    shardings.push_back(stream_);
  }
  const int64_t w1_index = static_cast<int64_t>(shapes.size());
  // Elementwise stage weights are not split over the data axis (weights never are).
  absl::StatusOr<HloSharding> stage_weights = Shard({{stage_}, {}, {tensor_}});
  if (!stage_weights.ok()) return stage_weights.status();
  if (!spec_.dot_stages) w1_ = *stage_weights;
  shapes.push_back(weights);
  shardings.push_back(w1_);
  int64_t w2_index = -1;
  if (HasTensor() && spec_.dot_stages) {
    w2_index = static_cast<int64_t>(shapes.size());
    shapes.push_back(weights);
    shardings.push_back(w2_);
  }
  const int64_t in_index = static_cast<int64_t>(shapes.size());
  shapes.push_back(buffer);
  shardings.push_back(rows_);
  const int64_t out_index = static_cast<int64_t>(shapes.size());
  shapes.push_back(buffer);
  shardings.push_back(rows_);
  const Shape state = Shape::Tuple(shapes);
  tuple_ = HloSharding::Tuple(shardings);
  const int64_t trips = OneFOneB() ? M() + 2 * S() - 2 : M() + S() - 1;

  // Entry parameters first (their module tells which channel ids are taken).
  std::vector<HloInstruction*> init = {nullptr};
  for (size_t e = 1; e < shapes.size(); ++e) {
    HloInstruction* p = sink_.parameter(shapes[e]);
    if (p == nullptr) return absl::InternalError("pipeline: the host refused a parameter");
    p->set_sharding(shardings[e]);
    init.push_back(p);
  }
  if (const HloComputation* entry = init[1]->parent(); entry != nullptr && entry->parent()) {
    for (const auto& comp : entry->parent()->computations()) {
      for (const auto& h : comp->instructions()) {
        if (h->attrs().channel_id.has_value()) {
          next_channel_ = std::max(next_channel_, *h->attrs().channel_id + 1);
        }
      }
    }
  }

  // Condition: counter < trips.
  auto cond = std::make_unique<HloComputation>(sink_.name("pipeline_cond"));
  {
    auto p = Make(HloOpcode::kParameter, "state", state, {});
    p->set_parameter_number(0);
    p->set_sharding(tuple_);
    HloInstruction* sp = cond->AddInstruction(std::move(p));
    HloInstruction* i = Gte(cond.get(), sp, 0, &shardings[0]);
    HloInstruction* n = Constant(cond.get(), trips);
    auto lt = Make(HloOpcode::kCompare, "lt", Shape::Scalar(PrimitiveType::kPred), {i, n});
    lt->mutable_attrs().direction = ComparisonDirection::kLt;
    cond->set_root(cond->AddInstruction(std::move(lt)));
  }
  // Body.
  auto body = std::make_unique<HloComputation>(sink_.name("pipeline_body"));
  {
    HloComputation* b = body.get();
    auto p = Make(HloOpcode::kParameter, "state", state, {});
    p->set_parameter_number(0);
    p->set_sharding(tuple_);
    HloInstruction* sp = b->AddInstruction(std::move(p));
    std::vector<HloInstruction*> g;
    for (size_t e = 0; e < shapes.size(); ++e) {
      g.push_back(Gte(b, sp, static_cast<int64_t>(e), &shardings[e]));
    }
    HloInstruction* i = g[0];
    HloInstruction* zero = Constant(b, 0);
    HloInstruction* one = Constant(b, 1);
    HloInstruction* w1 = g[w1_index];
    HloInstruction* w2 = w2_index >= 0 ? g[w2_index] : nullptr;
    HloInstruction* mb = DynamicSlice(b, "micro_batch", g[in_index], i, zero, rows_);
    HloInstruction* injected = UpdateSlice(b, "inject", g[1], mb, zero, zero, stream_);
    HloInstruction* fwd = Stage(b, injected, w1, w2, /*backward=*/false);
    std::vector<HloInstruction*> next(shapes.size(), nullptr);
    next[0] = Put(b, Make(HloOpcode::kAdd, "next_counter", counter, {i, one}));
    for (int64_t e : {w1_index, w2_index, in_index}) {
      if (e >= 0) next[e] = g[e];
    }
    HloInstruction* last_stage = Constant(b, S() - 1);
    if (!OneFOneB()) {
      HloInstruction* index =
          Put(b, Make(HloOpcode::kSubtract, "out_index", counter, {i, last_stage}));
      if (!spec_.collect_after_rotation) {
        HloInstruction* last = DynamicSlice(b, "last_stage_out", fwd, last_stage, zero, rows_);
        next[out_index] = UpdateSlice(b, "collect", g[out_index], last, index, zero, rows_);
        next[1] = Rotate(b, fwd, +1, spec_.wrap);
      } else {
        next[1] = Rotate(b, fwd, +1, /*wrap=*/true);
        HloInstruction* wrapped = DynamicSlice(b, "wrapped_out", next[1], zero, zero, rows_);
        next[out_index] = UpdateSlice(b, "collect", g[out_index], wrapped, index, zero, rows_);
      }
    } else {
      HloInstruction* y = DynamicSlice(b, "last_stage_out", fwd, last_stage, zero, rows_);
      HloInstruction* back_in =
          UpdateSlice(b, "inject_backward", g[2], y, last_stage, zero, stream_);
      HloInstruction* bwd = Stage(b, back_in, w1, w2, /*backward=*/true);
      HloInstruction* first = DynamicSlice(b, "first_stage_grad", bwd, zero, zero, rows_);
      HloInstruction* lag = Constant(b, 2 * S() - 2);
      HloInstruction* index = Put(b, Make(HloOpcode::kSubtract, "grad_index", counter, {i, lag}));
      next[out_index] = UpdateSlice(b, "collect", g[out_index], first, index, zero, rows_);
      next[1] = Rotate(b, fwd, +1, spec_.wrap);
      next[2] = Rotate(b, bwd, -1, spec_.wrap);
    }
    auto root = Make(HloOpcode::kTuple, "next_state", state, next);
    root->set_sharding(tuple_);
    b->set_root(b->AddInstruction(std::move(root)));
  }
  // Entry: the loop over the initial state, and its collected outputs.
  HloInstruction* zero = Constant(nullptr, 0);
  if (zero == nullptr) return absl::InternalError("pipeline: the host refused a constant");
  init[0] = zero;
  auto tuple = Make(HloOpcode::kTuple, "pipeline_init", state, init);
  tuple->set_sharding(tuple_);
  HloInstruction* t = Put(nullptr, std::move(tuple));
  if (t == nullptr) return absl::InternalError("pipeline: the host refused the initial state");
  auto loop = Make(HloOpcode::kWhile, OneFOneB() ? "pipeline_1f1b" : "pipeline_gpipe", state, {t});
  loop->mutable_called().push_back(CalledComputations{"condition", {cond.get()}, false});
  loop->mutable_called().push_back(CalledComputations{"body", {body.get()}, false});
  if (spec_.shard_loop) loop->set_sharding(tuple_);
  sink_.add_computation(std::move(cond));
  sink_.add_computation(std::move(body));
  HloInstruction* l = Put(nullptr, std::move(loop));
  if (l == nullptr) return absl::InternalError("pipeline: the host refused the loop");
  HloInstruction* out = Gte(nullptr, l, out_index, &rows_);
  if (out == nullptr) return absl::InternalError("pipeline: the host refused the result");
  return out;
}

}  // namespace

absl::string_view PipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

void showValue(const PipelineSpec& spec, std::ostream& os) {
  std::vector<std::string> order;
  for (int a : spec.axis_order) order.push_back(kAxisNames[a]);
  os << "pipeline " << PipelineScheduleName(spec.schedule) << ": stages=" << spec.stages
     << " data=" << spec.data << " tensor=" << spec.tensor
     << " micro_batches=" << spec.micro_batches << " rows=" << spec.rows_per_device * spec.data
     << " hidden=" << spec.hidden_per_device * spec.tensor
     << " collect_after_rotation=" << spec.collect_after_rotation << " wrap=" << spec.wrap
     << " axis_order=" << absl::StrJoin(order, ",") << " manual_rotation=" << spec.manual_rotation
     << " dot_stages=" << spec.dot_stages << " shard_loop=" << spec.shard_loop;
}

absl::StatusOr<Mesh> PipelineMesh(const PipelineSpec& spec) {
  const int64_t sizes[] = {spec.stages, spec.data, spec.tensor};
  std::vector<MeshAxis> axes;
  for (int a : spec.axis_order) {
    if (a < 0 || a > 2) return absl::InvalidArgumentError("pipeline spec: bad axis order");
    if (sizes[a] > 1) axes.push_back({kAxisNames[a], sizes[a]});
  }
  return Mesh::Create(std::move(axes));
}

absl::StatusOr<HloInstruction*> EmitPipeline(const PipelineSpec& spec, const Mesh& mesh,
                                             int stage_axis, int data_axis, int tensor_axis,
                                             PipelineSink& sink) {
  Emitter emitter(spec, mesh, stage_axis, data_axis, tensor_axis, sink);
  return emitter.Emit();
}

absl::StatusOr<std::unique_ptr<HloModule>> BuildPipelineModule(const PipelineSpec& spec) {
  absl::StatusOr<Mesh> mesh = PipelineMesh(spec);
  if (!mesh.ok()) return mesh.status();
  auto module =
      std::make_unique<HloModule>(absl::StrCat("pipeline_", PipelineScheduleName(spec.schedule)));
  module->set_num_partitions(mesh->num_devices());
  HloComputation* entry = module->AddComputation(std::make_unique<HloComputation>("main"));
  module->set_entry(entry);
  int64_t params = 0, ids = 0;
  PipelineSink sink;
  sink.parameter = [&](const Shape& shape) {
    auto p = std::make_unique<HloInstruction>(HloOpcode::kParameter, absl::StrCat("param.", params),
                                              shape);
    p->set_parameter_number(params++);
    return entry->AddInstruction(std::move(p));
  };
  sink.add = [&](std::unique_ptr<HloInstruction> h) { return entry->AddInstruction(std::move(h)); };
  sink.add_computation = [&](std::unique_ptr<HloComputation> c) {
    module->AddComputation(std::move(c));
  };
  sink.name = [&](absl::string_view stem) { return absl::StrCat(stem, ".", ids++); };
  const auto axis = [&](absl::string_view name) -> int {
    std::optional<int64_t> i = mesh->AxisIndex(name);
    return i.has_value() ? static_cast<int>(*i) : -1;
  };
  absl::StatusOr<HloInstruction*> out =
      EmitPipeline(spec, *mesh, axis("stage"), axis("data"), axis("tensor"), sink);
  if (!out.ok()) return out.status();
  entry->set_root(*out);
  return module;
}

std::optional<PipelineOnMesh> PipelineSpecForMesh(const Mesh& mesh,
                                                  const std::function<int64_t(int64_t)>& below) {
  std::vector<int> candidates;
  for (size_t a = 0; a < mesh.axes().size(); ++a) {
    if (mesh.axes()[a].size >= 2) candidates.push_back(static_cast<int>(a));
  }
  if (candidates.empty()) return std::nullopt;
  PipelineOnMesh out;
  out.stage_axis = candidates[below(static_cast<int64_t>(candidates.size()))];
  std::vector<int> rest;
  for (size_t a = 0; a < mesh.axes().size(); ++a) {
    if (static_cast<int>(a) != out.stage_axis && mesh.axes()[a].size >= 2) {
      rest.push_back(static_cast<int>(a));
    }
  }
  // Data, then tensor, from the remaining axes (each may stay unused).
  if (!rest.empty() && below(3) != 0) {
    const size_t k = below(static_cast<int64_t>(rest.size()));
    out.data_axis = rest[k];
    rest.erase(rest.begin() + k);
  }
  if (!rest.empty() && below(3) != 0)
    out.tensor_axis = rest[below(static_cast<int64_t>(rest.size()))];
  PipelineSpec& s = out.spec;
  s.schedule = below(2) == 0 ? PipelineSchedule::kGPipe : PipelineSchedule::kOneFOneB;
  s.stages = mesh.axes()[out.stage_axis].size;
  s.data = out.data_axis >= 0 ? mesh.axes()[out.data_axis].size : 1;
  s.tensor = out.tensor_axis >= 0 ? mesh.axes()[out.tensor_axis].size : 1;
  s.micro_batches = 1 + below(3);
  s.rows_per_device = 1 + below(2);
  s.hidden_per_device = 1 + below(2);
  s.collect_after_rotation = below(2) == 1;
  s.wrap = below(2) == 0;
  s.manual_rotation = false;
  s.dot_stages = false;
  s.shard_loop = false;  // So that campaigns reach XLA's partitioning of the loop (see the spec).
  return out;
}

rc::Gen<PipelineSpec> GenPipelineSpec(int64_t max_devices) {
  static const std::vector<std::vector<int>> kOrders = {{0, 1, 2}, {1, 0, 2}, {0, 2, 1},
                                                        {2, 0, 1}, {1, 2, 0}, {2, 1, 0}};
  return gen::map(gen::tuple(gen::element(PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB),
                             gen::inRange<int64_t>(2, 5), gen::element<int64_t>(1, 2),
                             gen::element<int64_t>(1, 2), gen::inRange<int64_t>(1, 5),
                             gen::inRange<int64_t>(1, 3), gen::inRange<int64_t>(1, 3),
                             gen::arbitrary<bool>(), gen::element<bool>(true, false),
                             gen::elementOf(kOrders), gen::element<bool>(true, false),
                             gen::element<bool>(true, false), gen::element<bool>(true, false)),
                  [max_devices](const auto& t) {
                    PipelineSpec s;
                    std::tie(s.schedule, s.stages, s.data, s.tensor, s.micro_batches,
                             s.rows_per_device, s.hidden_per_device, s.collect_after_rotation,
                             s.wrap, s.axis_order, s.manual_rotation, s.dot_stages, s.shard_loop) =
                        t;
                    // Keep the mesh within max_devices: drop tensor, then data, then shrink the
                    // stages.
                    if (s.stages * s.data * s.tensor > max_devices) s.tensor = 1;
                    if (s.stages * s.data * s.tensor > max_devices) s.data = 1;
                    while (s.stages > 2 && s.stages * s.data * s.tensor > max_devices) --s.stages;
                    if (s.schedule == PipelineSchedule::kOneFOneB) s.collect_after_rotation = false;
                    return s;
                  });
}

}  // namespace spmdcheck::fuzz
