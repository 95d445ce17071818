// The slot-level run of a pipeline loop (RunSchedule in explain/pipeline.h).
//
// Each loop-state element split over the stage axis is a stream: a vector of S slots, slot s
// being what the device at stage s holds. A slot's content is a micro-batch (the index it was
// read from the inputs with), the stages it has passed, and the stream segment it is in. The loop
// body is interpreted on these contents for every trip: reads of a state element at a
// counter-dependent index are micro-batches, dynamic-update-slices into a stream inject them,
// stage ops (stage-stacked weights) apply each slot's own stage, collective-permutes rotate slots
// by their pairs, selects on partition-id pick per slot, all-gathers over the axis and
// dynamic-slices by partition offsets switch between every device holding its slot and every
// device holding all slots, and dynamic-update-slices into other state elements collect.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "explain/pipeline.h"

namespace spmdcheck::explain {
namespace {

struct Content {
  enum class Origin { kInit, kMicrobatch, kZero, kUnknown };
  Origin origin = Origin::kUnknown;
  int64_t mb = -1;
  std::vector<int> stages;
  int segment_start = 0;
  int stream = -1;
  const HloInstruction* wrapped_by = nullptr;  // The rotation that moved it across the edge.
  int64_t applied_trip = -1;  // The trip and stage of the last stage application: several stage
  int applied_stage = -1;     // ops of one trip (two dots of a stage) apply the stage once.
  bool IsMicrobatch() const { return origin == Origin::kMicrobatch; }
  int SegmentLength() const { return static_cast<int>(stages.size()) - segment_start; }
};

struct AV {
  enum class Kind { kOther, kSlots, kSlot, kBuffer, kTuple };
  Kind kind = Kind::kOther;
  std::vector<Content> slots;
  int64_t stage_dim = -1;
  bool full = false;
  int stream = -1;
  Content one;
  int buffer = -1;
  std::vector<AV> elements;
};

std::string StagesText(const std::vector<int>& stages, int from) {
  std::vector<int> seg(stages.begin() + std::min<size_t>(from, stages.size()), stages.end());
  if (seg.empty()) return "none";
  return absl::StrJoin(seg, ",");
}

bool IsZeroConstant(const HloInstruction* h) {
  while (h->opcode() == HloOpcode::kBroadcast || h->opcode() == HloOpcode::kConvert ||
         h->opcode() == HloOpcode::kCopy || h->opcode() == HloOpcode::kReshape) {
    h = h->operand(0);
  }
  if (h->opcode() != HloOpcode::kConstant || !h->literal().has_value()) return false;
  for (int64_t i = 0; i < h->literal()->element_count(); ++i) {
    if (h->literal()->GetDouble(i) != 0) return false;
  }
  return true;
}

class Simulator {
 public:
  Simulator(const ProgramFacts& facts, const PipelineFinding& pipeline, const LoopFact& loop,
            const std::map<int, int64_t>& stream_dims, bool learning,
            const std::map<int, int>& directions)
      : facts_(facts),
        mesh_(facts.mesh()),
        pipeline_(pipeline),
        loop_(loop),
        stream_dims_(stream_dims),
        learning_(learning),
        stream_dir_(directions),
        eval_(loop.counter_index, loop.counter_init),
        stages_(mesh_.axes()[pipeline.axis].size) {
    body_ = loop.loop->called_computation("body");
    for (const auto& [e, dim] : stream_dims_) {
      std::vector<Content> slots(stages_);
      for (int64_t s = 0; s < stages_; ++s) slots[s].origin = Content::Origin::kInit;
      streams_[e] = std::move(slots);
    }
  }

  // False when the run stopped (unknown_ says why).
  bool Run(int64_t trips) {
    for (int64_t t = 0; t < trips; ++t) {
      trip_ = t;
      if (!RunTrip()) return false;
      CheckLost();
    }
    return true;
  }

  const std::string& unknown() const { return unknown_; }
  const std::string& violation() const { return violation_; }
  // Each stream's direction: +1 when micro-batches enter it at slot 0, -1 at slot S-1, else the
  // direction its rotation moves (the schedule, not the pairs, says where stage s+1 is).
  std::map<int, int> directions() const {
    std::map<int, int> out = stream_dir_;
    for (const auto& [e, slot] : inject_slot_) {
      if (slot == 0) out[e] = 1;
      if (slot == stages_ - 1) out[e] = -1;
    }
    return out;
  }
  // Per rotation: the direction its stream must move.
  std::map<const HloInstruction*, int> rotation_dirs() const {
    std::map<const HloInstruction*, int> out = rotation_dir_;
    const std::map<int, int> dirs = directions();
    for (const auto& [h, e] : rotation_stream_) {
      if (dirs.contains(e)) out[h] = dirs.at(e);
    }
    return out;
  }
  const std::map<const HloInstruction*, bool>& wrap_read() const { return wrap_read_; }
  const std::vector<std::string>& events() const { return events_; }
  int64_t micro_batches() const { return micro_batches_; }

  // After Run: every micro-batch entered, passed every stage in order and was observed.
  void CheckEnd(int64_t trips) {
    if (!violation_.empty()) return;
    // Final state counts as observed.
    for (const auto& [e, slots] : streams_) {
      for (const Content& c : slots) {
        if (c.IsMicrobatch() && c.SegmentLength() == stages_) observed_.insert({c.mb, c.stream});
      }
    }
    for (int64_t m = 0; m < micro_batches_; ++m) {
      bool entered_any = false;
      for (const auto& [key, status] : entered_) {
        if (key.first != m) continue;
        entered_any = true;
        if (observed_.contains(key)) continue;
        auto lost = lost_.find(key);
        if (lost != lost_.end()) {
          Fail(absl::StrCat("micro-batch ", m, " passes stages ", lost->second.first, " of ",
                            StreamName(key.second), " but is overwritten at trip ",
                            lost->second.second, " before anything collects it"));
          return;
        }
        Fail(absl::StrCat("micro-batch ", m, " has passed stages ", StagesOf(m, key.second), " of ",
                          StreamName(key.second), " when the loop ends after ", trips, " trips (",
                          stages_, " stages)"));
        return;
      }
      if (!entered_any) {
        Fail(absl::StrCat("micro-batch ", m, " never enters the pipeline: the loop ends after ",
                          trips, " trips"));
        return;
      }
    }
    for (const auto& [b, entries] : buffers_) {
      if (!collected_by_counter_.contains(b)) continue;
      for (const auto& [j, c] : entries) {
        if (c.IsMicrobatch() && c.mb != j) {
          Fail(absl::StrCat("state element ", b, " collects micro-batch ", c.mb, " at index ", j,
                            " (the result of micro-batch ", j, " belongs there)"));
          return;
        }
      }
    }
  }

 private:
  std::string StreamName(int e) const { return absl::StrCat("state{", e, "}"); }

  std::string StagesOf(int64_t m, int stream) const {
    auto it = progress_.find({m, stream});
    return it == progress_.end() ? std::string("none") : it->second;
  }

  void Fail(std::string why) {
    if (!learning_ && violation_.empty()) violation_ = std::move(why);
  }
  bool Stop(const HloInstruction* h, absl::string_view why) {
    unknown_ = absl::StrCat(HloOpcodeString(h->opcode()), " ", h->name(), " (line ",
                            h->location().line, ") ", why);
    return false;
  }

  int64_t Dev(int64_t stage) const { return mesh_.WithCoordinate(0, pipeline_.axis, stage); }

  void Event(std::string e) {
    if (trip_ == 0 && !learning_) events_.push_back(std::move(e));
  }

  void NoteWrapRead(const Content& c) {
    if (c.wrapped_by != nullptr) wrap_read_[c.wrapped_by] = true;
  }

  // The first segment check and stage application of a micro-batch at stage `s`.
  void Apply(Content& c, int s, const HloInstruction* op) {
    NoteWrapRead(c);
    c.wrapped_by = nullptr;
    if (c.applied_trip == trip_ && c.applied_stage == s) return;
    c.applied_trip = trip_;
    c.applied_stage = s;
    if (!c.IsMicrobatch()) {
      c.stages.push_back(s);
      return;
    }
    const int k = c.SegmentLength();
    const int dir = stream_dir_.contains(c.stream) ? stream_dir_.at(c.stream) : 1;
    const int expected = dir > 0 ? k : static_cast<int>(stages_) - 1 - k;
    if (k >= stages_) {
      Fail(absl::StrCat("micro-batch ", c.mb, " passes stage ", s, " of ", StreamName(c.stream),
                        " again at trip ", trip_, " (", op->name(), ") after passing all stages ",
                        StagesText(c.stages, c.segment_start)));
    } else if (s != expected) {
      Fail(absl::StrCat("micro-batch ", c.mb, " reaches stage ", s, " of ", StreamName(c.stream),
                        " at trip ", trip_, " (", op->name(), ") after stages ",
                        StagesText(c.stages, c.segment_start), "; stage ", expected,
                        " comes next"));
    }
    c.stages.push_back(s);
    const std::pair<int64_t, int> key = {c.mb, c.stream};
    progress_[key] = StagesText(c.stages, c.segment_start);
    if (c.SegmentLength() == stages_) complete_[key] = progress_[key];
  }

  Content ContentOf(const AV& v, const HloInstruction* h) const {
    if (v.kind == AV::Kind::kSlot) return v.one;
    Content c;
    c.origin = IsZeroConstant(h) ? Content::Origin::kZero : Content::Origin::kUnknown;
    return c;
  }

  // Injects content `u` into `slot` of `stream` (-1: every slot).
  Content Inject(Content u, int stream, int64_t slot) {
    if (u.IsMicrobatch()) {
      if (slot >= 0 && !inject_slot_.contains(stream)) {
        inject_slot_[stream] = slot;
      }
      if (u.stream >= 0 && u.stream != stream) {
        if (u.SegmentLength() != stages_) {
          Fail(absl::StrCat("micro-batch ", u.mb, " enters ", StreamName(stream),
                            " after only stages ", StagesText(u.stages, u.segment_start), " of ",
                            StreamName(u.stream)));
        } else {
          observed_.insert({u.mb, u.stream});
        }
      }
      if (u.stream != stream) {
        u.segment_start = static_cast<int>(u.stages.size());
        u.stream = stream;
        u.applied_trip = -1;
      }
      entered_.insert({{u.mb, stream}, true});
    }
    return u;
  }

  std::optional<int64_t> EvalAt(const HloInstruction* h, int64_t stage) const {
    return eval_.Eval(h, Dev(stage), trip_);
  }

  // Index along the micro-batch dim of a read from (or write into) a buffer: the start operands
  // that select an element (slice size 1 where the dim is larger); clamped as XLA does.
  std::optional<int64_t> BufferIndex(const HloInstruction* h, const Shape& buffer,
                                     const Shape& piece, int first_start, bool* by_counter,
                                     int64_t* counter_dim, bool* device_piece) const {
    // A start that follows the loop counter selects the micro-batch (even in a buffer of one).
    for (int64_t k = 0; k < buffer.rank(); ++k) {
      const HloInstruction* start = h->operand(first_start + k);
      if (!eval_.DependsOnCounter(start) || eval_.DependsOnDevice(start)) continue;
      std::optional<int64_t> v = eval_.Eval(start, Dev(0), trip_);
      if (!v.has_value()) return std::nullopt;
      *by_counter = true;
      *counter_dim = k;
      return std::clamp<int64_t>(*v, 0, buffer.dimensions(k) - piece.dimensions(k));
    }
    std::optional<int64_t> index;
    for (int64_t k = 0; k < buffer.rank(); ++k) {
      // Partition offsets: each device takes its piece (weights sliced by the partitioner), not a
      // micro-batch.
      if (piece.dimensions(k) != buffer.dimensions(k) &&
          eval_.DependsOnDevice(h->operand(first_start + k))) {
        *device_piece = true;
      }
    }
    for (int64_t k = 0; k < buffer.rank(); ++k) {
      if (piece.dimensions(k) == buffer.dimensions(k)) continue;
      const HloInstruction* start = h->operand(first_start + k);
      std::optional<int64_t> v = eval_.Eval(start, Dev(0), trip_);
      if (!v.has_value()) return std::nullopt;
      if (eval_.DependsOnDevice(start)) continue;  // A partition offset within the piece.
      if (index.has_value()) return std::nullopt;
      index = std::clamp<int64_t>(*v, 0, buffer.dimensions(k) - piece.dimensions(k));
      *by_counter = eval_.DependsOnCounter(start);
    }
    return index;
  }

  int64_t GlobalDim(const HloInstruction* h, int64_t k) const {
    int64_t d = h->shape().dimensions(k);
    if (facts_.partitioned()) {
      if (const HloSharding* s = facts_.AnnotationThrough(h);
          s != nullptr && s->IsTiled() && k < s->TiledDataRank()) {
        d *= s->tile_assignment().dim(k);
      }
    }
    return d;
  }

  bool IsStageCompute(const HloInstruction* h, int slots_operand) const {
    const HloInstruction* other = h->operand(1 - slots_operand);
    if (facts_.WeightSource(other) == nullptr) return false;
    const HloSharding* s = facts_.AnnotationThrough(other);
    if (s == nullptr) return true;
    std::optional<std::vector<std::vector<AxisPart>>> dims = facts_.DimAxes(*s);
    if (!dims.has_value()) return true;
    for (const auto& dim : *dims) {
      for (const AxisPart& p : dim) {
        if (p.axis == pipeline_.axis) return true;
      }
    }
    return false;
  }

  bool RunTrip() {
    std::map<const HloInstruction*, AV> values;
    const HloComputation* body = body_;
    std::vector<HloInstruction*> order = body->PostOrder();
    for (const HloInstruction* h : order) {
      AV out;
      if (!Eval(h, values, out)) return false;
      values[h] = std::move(out);
    }
    const AV& root = values[body->root()];
    if (root.kind != AV::Kind::kTuple) return Stop(body->root(), "is not a tuple");
    for (auto& [e, slots] : streams_) {
      if (e >= static_cast<int>(root.elements.size())) return Stop(body->root(), "lacks a stream");
      const AV& v = root.elements[e];
      if (v.kind != AV::Kind::kSlots || static_cast<int64_t>(v.slots.size()) != stages_) {
        return Stop(body->root()->operand(e), "does not carry the stream's slots to the next trip");
      }
      // Wrapped contents stay marked: the next trip reads them (the wrap is needed) or
      // overwrites them first (it is not).
      slots = v.slots;
    }
    return true;
  }

  void CheckLost() {
    for (const auto& [key, unused] : entered_) {
      if (observed_.contains(key) || lost_.contains(key)) continue;
      bool present = false;
      for (const auto& [e, slots] : streams_) {
        for (const Content& c : slots) {
          if (c.IsMicrobatch() && c.mb == key.first && c.stream == key.second) present = true;
        }
      }
      if (!present && complete_.contains(key)) lost_[key] = {complete_[key], trip_};
    }
  }

  bool Eval(const HloInstruction* h, std::map<const HloInstruction*, AV>& values, AV& out) {
    std::vector<const AV*> ops;
    bool any = false;
    for (const HloInstruction* o : h->operands()) {
      ops.push_back(&values[o]);
      if (values[o].kind != AV::Kind::kOther) any = true;
    }
    const HloOpcode op = h->opcode();
    if (op == HloOpcode::kParameter) {
      out.kind = AV::Kind::kTuple;
      const Shape& shape = h->shape();
      if (!shape.IsTuple()) return Stop(h, "is not the loop state tuple");
      for (int64_t e = 0; e < static_cast<int64_t>(shape.tuple_shapes().size()); ++e) {
        AV el;
        auto stream = streams_.find(static_cast<int>(e));
        if (stream != streams_.end()) {
          el.kind = AV::Kind::kSlots;
          el.slots = stream->second;
          el.stage_dim = stream_dims_.at(static_cast<int>(e));
          el.full = !facts_.partitioned();
          el.stream = static_cast<int>(e);
        } else if (e != loop_.counter_index && shape.tuple_shapes()[e].IsArray() &&
                   shape.tuple_shapes()[e].rank() > 0) {
          el.kind = AV::Kind::kBuffer;
          el.buffer = static_cast<int>(e);
        }
        out.elements.push_back(std::move(el));
      }
      return true;
    }
    if (!any) return true;  // kOther
    switch (op) {
      case HloOpcode::kGetTupleElement:
        if (ops[0]->kind == AV::Kind::kTuple && h->attrs().tuple_index.has_value() &&
            *h->attrs().tuple_index < static_cast<int64_t>(ops[0]->elements.size())) {
          out = ops[0]->elements[*h->attrs().tuple_index];
          if (out.kind == AV::Kind::kSlots && facts_.partitioned()) {
            // A stage-split state element: each device holds its slot.
            out.full = false;
          }
          return true;
        }
        return Stop(h, "reads a tuple the schedule does not model");
      case HloOpcode::kTuple:
        out.kind = AV::Kind::kTuple;
        for (const AV* v : ops) out.elements.push_back(*v);
        return true;
      case HloOpcode::kCustomCall: {
        if (ops.size() != 1) return Stop(h, "takes pipeline state");
        out = *ops[0];
        const std::string target = h->attrs().custom_call_target.value_or("");
        if (target == "SPMDFullToShardShape") {
          out.full = false;
        } else if (target == "SPMDShardToFullShape") {
          out.full = !facts_.partitioned();
        } else if (!IsShardingAnnotationTarget(target)) {
          return Stop(h, "takes pipeline state");
        }
        return true;
      }
      case HloOpcode::kCopy:
      case HloOpcode::kConvert:
      case HloOpcode::kBitcastConvert:
      case HloOpcode::kReducePrecision:
      case HloOpcode::kOptimizationBarrier:
        out = *ops[0];
        return true;
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast: {
        out = *ops[0];
        if (out.kind != AV::Kind::kSlots) return true;
        const auto& od = h->operand(0)->shape().dimensions();
        const auto& rd = h->shape().dimensions();
        int64_t prefix = 1;
        for (int64_t k = 0; k < out.stage_dim; ++k) prefix *= od[k];
        int64_t p = 1;
        for (size_t j = 0; j < rd.size(); ++j) {
          if (p == prefix && rd[j] == od[out.stage_dim]) {
            out.stage_dim = static_cast<int64_t>(j);
            return true;
          }
          p *= rd[j];
        }
        return Stop(h, "reshapes the stage dim away");
      }
      case HloOpcode::kTranspose: {
        out = *ops[0];
        if (out.kind != AV::Kind::kSlots) return true;
        const std::vector<int64_t>& perm = h->attrs().dimensions.value_or(std::vector<int64_t>{});
        for (size_t i = 0; i < perm.size(); ++i) {
          if (perm[i] == ops[0]->stage_dim) out.stage_dim = static_cast<int64_t>(i);
        }
        return true;
      }
      case HloOpcode::kBroadcast: {
        out = *ops[0];
        if (out.kind == AV::Kind::kSlots) {
          const std::vector<int64_t>& dims = h->attrs().dimensions.value_or(std::vector<int64_t>{});
          if (out.stage_dim >= static_cast<int64_t>(dims.size())) return Stop(h, "broadcasts");
          out.stage_dim = dims[out.stage_dim];
        }
        return true;
      }
      case HloOpcode::kReduce: {
        out = *ops[0];
        if (out.kind != AV::Kind::kSlots) return true;
        const std::vector<int64_t>& dims = h->attrs().dimensions.value_or(std::vector<int64_t>{});
        int64_t removed = 0;
        for (int64_t d : dims) {
          if (d == out.stage_dim) return Stop(h, "reduces over the stage dim");
          if (d < out.stage_dim) ++removed;
        }
        out.stage_dim -= removed;
        return true;
      }
      case HloOpcode::kSlice:
      case HloOpcode::kPad: {
        out = *ops[0];
        if (out.kind != AV::Kind::kSlots) return true;
        const int64_t k = out.stage_dim;
        if (h->shape().dimensions(k) == h->operand(0)->shape().dimensions(k)) return true;
        // A slice of the stages of a value every device holds whole (a roll's halves).
        if (op != HloOpcode::kSlice || !out.full || !h->attrs().slice.has_value() ||
            (*h->attrs().slice)[k].stride != 1) {
          return Stop(h, "slices or pads the stage dim");
        }
        const SliceDim& range = (*h->attrs().slice)[k];
        out.slots.assign(ops[0]->slots.begin() + range.start, ops[0]->slots.begin() + range.limit);
        return true;
      }
      case HloOpcode::kConcatenate: {
        const std::vector<int64_t>& dims = h->attrs().dimensions.value_or(std::vector<int64_t>{});
        out = *ops[0];
        for (const AV* v : ops) {
          if (v->kind != AV::Kind::kSlots || !v->full || dims.size() != 1 ||
              v->stage_dim != dims[0]) {
            return Stop(h, "concatenates pipeline state in a way the schedule does not model");
          }
        }
        out.slots.clear();
        for (const AV* v : ops) out.slots.insert(out.slots.end(), v->slots.begin(), v->slots.end());
        Event(absl::StrCat("roll (", h->name(), ")"));
        return true;
      }
      case HloOpcode::kDynamicSlice:
        return DynamicSlice(h, ops, out);
      case HloOpcode::kDynamicUpdateSlice:
        return DynamicUpdateSlice(h, ops, out);
      case HloOpcode::kSelect:
        return Select(h, ops, out);
      case HloOpcode::kCollectivePermute:
        return Permute(h, ops, out);
      case HloOpcode::kAllGather:
      case HloOpcode::kAllReduce:
        return Collective(h, ops, out);
      case HloOpcode::kDot:
      case HloOpcode::kConvolution:
        return Binary(h, ops, out, /*compute=*/true);
      default:
        break;
    }
    const int arity = ElementwiseArity(op);
    if (arity == 1) {
      out = *ops[0];
      return true;
    }
    if (arity == 2) return Binary(h, ops, out, /*compute=*/true);
    return Stop(h, "takes pipeline state and is not modelled");
  }

  bool Binary(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out, bool compute) {
    if (ops.size() != 2) return Stop(h, "takes pipeline state");
    const AV& a = *ops[0];
    const AV& b = *ops[1];
    const bool a_slots = a.kind == AV::Kind::kSlots, b_slots = b.kind == AV::Kind::kSlots;
    if (a_slots != b_slots) {
      const int si = a_slots ? 0 : 1;
      out = *ops[si];
      if (h->opcode() == HloOpcode::kDot) {
        // The stage dim must survive as a batch dim (the first result dims).
        const DotDimensionNumbers& d = *h->attrs().dot_dimension_numbers;
        const std::vector<int64_t>& batch = si == 0 ? d.lhs_batch : d.rhs_batch;
        auto it = std::find(batch.begin(), batch.end(), out.stage_dim);
        if (it == batch.end()) return Stop(h, "contracts or moves the stage dim");
        out.stage_dim = it - batch.begin();
      }
      if (compute && IsStageCompute(h, si)) {
        for (int64_t s = 0; s < stages_; ++s) Apply(out.slots[s], static_cast<int>(s), h);
        Event(absl::StrCat("stage (", h->name(), ")"));
      }
      return true;
    }
    if (a_slots && b_slots) {
      out = a;
      for (int64_t s = 0; s < stages_; ++s) {
        const Content& x = a.slots[s];
        const Content& y = b.slots[s];
        if (x.IsMicrobatch() && y.IsMicrobatch() && x.mb == y.mb) {
          out.slots[s] = x.stages.size() >= y.stages.size() ? x : y;
        } else if (!y.IsMicrobatch()) {
          out.slots[s] = x;
        } else if (!x.IsMicrobatch()) {
          out.slots[s] = y;
        } else {
          out.slots[s] = Content{};
        }
      }
      return true;
    }
    // Single micro-batches (extracted slots, fresh inputs) and others.
    if (a.kind == AV::Kind::kSlot || b.kind == AV::Kind::kSlot) {
      out.kind = AV::Kind::kSlot;
      out.one = a.kind == AV::Kind::kSlot ? a.one : b.one;
      if (a.kind == AV::Kind::kSlot && b.kind == AV::Kind::kSlot && a.one.mb != b.one.mb) {
        out.one = Content{};
      }
      return true;
    }
    return Stop(h, "combines pipeline values in a way the schedule does not model");
  }

  bool DynamicSlice(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out) {
    const AV& x = *ops[0];
    if (x.kind == AV::Kind::kBuffer) {
      bool by_counter = false, device_piece = false;
      int64_t dim = -1;
      std::optional<int64_t> index =
          BufferIndex(h, h->operand(0)->shape(), h->shape(), 1, &by_counter, &dim, &device_piece);
      if (!by_counter && device_piece) {
        out = AV{};  // A device's piece of a weight or input: no micro-batch.
        return true;
      }
      if (!index.has_value()) {
        return Stop(h, "reads the state at an index the schedule cannot evaluate");
      }
      out.kind = AV::Kind::kSlot;
      auto& entries = buffers_[x.buffer];
      auto it = entries.find(*index);
      if (it != entries.end()) {
        out.one = it->second;
      } else {
        out.one.origin = Content::Origin::kMicrobatch;
        out.one.mb = *index;
      }
      if (by_counter && dim >= 0) {
        micro_batches_ = std::max(micro_batches_, GlobalDim(h->operand(0), dim));
      }
      return true;
    }
    if (x.kind == AV::Kind::kSlot) {
      out = x;
      return true;
    }
    if (x.kind != AV::Kind::kSlots) return Stop(h, "slices a value the schedule does not model");
    const int64_t k = x.stage_dim;
    const HloInstruction* start = h->operand(1 + k);
    if (!x.full) {
      if (h->shape().dimensions(k) != h->operand(0)->shape().dimensions(k)) {
        return Stop(h, "slices the local stage dim");
      }
      out = x;
      return true;
    }
    std::vector<int64_t> at(stages_);
    bool all_same = true, own = true;
    for (int64_t s = 0; s < stages_; ++s) {
      std::optional<int64_t> v = EvalAt(start, s);
      if (!v.has_value())
        return Stop(h, "slices the stage dim at an offset the schedule cannot evaluate");
      const int64_t size = h->shape().dimensions(k);
      at[s] = std::clamp<int64_t>(*v, 0, h->operand(0)->shape().dimensions(k) - size) /
              std::max<int64_t>(size, 1);
      if (at[s] != at[0]) all_same = false;
      if (at[s] != s) own = false;
    }
    if (h->shape().dimensions(k) == 1 && eval_.DependsOnDevice(start) && own &&
        static_cast<int64_t>(x.slots.size()) == stages_) {
      out = x;
      out.full = false;  // Each device takes its own slot back.
      return true;
    }
    if (h->shape().dimensions(k) == 1 && all_same && !eval_.DependsOnDevice(start)) {
      out.kind = AV::Kind::kSlot;
      out.one = x.slots[at[0]];
      NoteWrapRead(out.one);
      out.one.wrapped_by = nullptr;
      Event(absl::StrCat("extract slot ", at[0], " (", h->name(), ")"));
      return true;
    }
    if (h->shape().dimensions(k) == 1 && eval_.DependsOnDevice(start)) {
      return Stop(
          h, absl::StrCat("gives stage s the slot of stage ", at[1 % stages_], " (not its own)"));
    }
    return Stop(h, "slices several stages");
  }

  bool DynamicUpdateSlice(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out) {
    const AV& x = *ops[0];
    const AV& u = *ops[1];
    Content content = ContentOf(u, h->operand(1));
    if (u.kind == AV::Kind::kSlots) return Stop(h, "writes a slot vector into a value");
    if (x.kind == AV::Kind::kBuffer) {
      bool by_counter = false, device_piece = false;
      int64_t dim = -1;
      std::optional<int64_t> index = BufferIndex(h, h->operand(0)->shape(), h->operand(1)->shape(),
                                                 2, &by_counter, &dim, &device_piece);
      if (!index.has_value())
        return Stop(h, "writes the state at an index the schedule cannot evaluate");
      NoteWrapRead(content);
      content.wrapped_by = nullptr;
      if (content.IsMicrobatch() && content.SegmentLength() == stages_) {
        observed_.insert({content.mb, content.stream});
      }
      if (by_counter) collected_by_counter_.insert(x.buffer);
      buffers_[x.buffer][*index] = content;
      out = x;
      Event(absl::StrCat("collect into state{", x.buffer, "} (", h->name(), ")"));
      return true;
    }
    if (x.kind == AV::Kind::kSlot || x.kind == AV::Kind::kOther) {
      out.kind = AV::Kind::kSlot;
      out.one = u.kind == AV::Kind::kSlot ? u.one : x.one;
      return true;
    }
    if (x.kind != AV::Kind::kSlots) return Stop(h, "updates a value the schedule does not model");
    const int64_t k = x.stage_dim;
    out = x;
    if (!x.full) {
      // Every device writes its own (local) slot.
      for (int64_t s = 0; s < stages_; ++s) out.slots[s] = Inject(content, x.stream, -1);
      Event(absl::StrCat("write every slot (", h->name(), ")"));
      return true;
    }
    const HloInstruction* start = h->operand(2 + k);
    std::optional<int64_t> v = EvalAt(start, 0);
    if (!v.has_value() || eval_.DependsOnDevice(start)) {
      return Stop(h, "writes the stage dim at an offset the schedule cannot evaluate");
    }
    const int64_t size = h->operand(1)->shape().dimensions(k);
    if (size != 1) return Stop(h, "writes several stages at once");
    const int64_t slot = std::clamp<int64_t>(*v, 0, h->operand(0)->shape().dimensions(k) - size);
    out.slots[slot] = Inject(content, x.stream, slot);
    Event(absl::StrCat("inject slot ", slot, " (", h->name(), ")"));
    return true;
  }

  bool Select(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out) {
    const HloInstruction* pred = h->operand(0);
    const AV& a = *ops[1];
    const AV& b = *ops[2];
    if (ops[0]->kind != AV::Kind::kOther) return Stop(h, "selects on pipeline data");
    const bool device = eval_.DependsOnDevice(pred);
    const AV& shape_of = a.kind == AV::Kind::kSlots ? a : b;
    if (shape_of.kind != AV::Kind::kSlots) {
      std::optional<int64_t> p = EvalAt(pred, 0);
      if (!p.has_value() || device) {
        return Stop(h, "selects between micro-batches on a value the schedule cannot evaluate");
      }
      out = *p != 0 ? a : b;
      return true;
    }
    out = shape_of;
    if (device) out.full = false;
    for (int64_t s = 0; s < stages_; ++s) {
      std::optional<int64_t> p = EvalAt(pred, s);
      if (!p.has_value()) return Stop(h, "selects on a mask the schedule cannot evaluate");
      const AV& pick = *p != 0 ? a : b;
      const HloInstruction* from = h->operand(*p != 0 ? 1 : 2);
      if (pick.kind == AV::Kind::kSlots) {
        out.slots[s] = pick.slots[s];
      } else {
        out.slots[s] = Inject(ContentOf(pick, from), shape_of.stream, s);
      }
    }
    Event(absl::StrCat("select per stage (", h->name(), ")"));
    return true;
  }

  bool Permute(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out) {
    const AV& x = *ops[0];
    if (x.kind == AV::Kind::kSlot) {
      out = x;
      return true;
    }
    if (x.kind != AV::Kind::kSlots || !h->attrs().source_target_pairs.has_value()) {
      return Stop(h, "permutes a value the schedule does not model");
    }
    const int axis = pipeline_.axis;
    const SourceTargetPairs& pairs = *h->attrs().source_target_pairs;
    // The stream's direction when the schedule says it (with 2 stages, +1 and -1 are the same
    // pairs), else the pairs' majority.
    const int dir = x.stream >= 0 && stream_dir_.contains(x.stream)
                        ? stream_dir_.at(x.stream)
                        : RotationDirection(mesh_, axis, pairs);
    rotation_dir_[h] = dir;
    if (x.stream >= 0) {
      rotation_stream_[h] = x.stream;
      if (!stream_dir_.contains(x.stream)) stream_dir_[x.stream] = dir;
    }
    const int64_t wrap_slot = dir > 0 ? 0 : stages_ - 1;
    out = x;
    for (int64_t s = 0; s < stages_; ++s) {
      out.slots[s] = Content{};
      out.slots[s].origin = Content::Origin::kZero;
      if (s == wrap_slot) out.slots[s].wrapped_by = h;
    }
    for (const auto& [src, tgt] : pairs) {
      if (src < 0 || tgt < 0 || src >= mesh_.num_devices() || tgt >= mesh_.num_devices()) continue;
      bool same_group = true;
      for (int a = 0; a < mesh_.num_axes(); ++a) {
        if (a != axis && (mesh_.Coordinate(src, a) != 0 || mesh_.Coordinate(tgt, a) != 0)) {
          same_group = false;
        }
      }
      if (!same_group) continue;
      const int64_t from = mesh_.Coordinate(src, axis);
      const int64_t to = mesh_.Coordinate(tgt, axis);
      Content c = x.slots[from];
      if (to == wrap_slot && from != to) c.wrapped_by = h;
      out.slots[to] = std::move(c);
    }
    Event(absl::StrCat("rotate ", dir > 0 ? "+1" : "-1", " (", h->name(), ")"));
    return true;
  }

  bool Collective(const HloInstruction* h, const std::vector<const AV*>& ops, AV& out) {
    const AV& x = *ops[0];
    out = x;
    if (x.kind != AV::Kind::kSlots) return true;
    std::optional<std::vector<AxisPart>> axes =
        mesh_.GroupAxes(PartitionGroups(*h, mesh_.num_devices()));
    if (!axes.has_value()) return Stop(h, "has groups that are no mesh axes");
    bool over_stage = false;
    for (const AxisPart& p : *axes) over_stage = over_stage || p.axis == pipeline_.axis;
    if (!over_stage) return true;
    if (h->opcode() == HloOpcode::kAllGather) {
      const std::vector<int64_t>& dims = h->attrs().dimensions.value_or(std::vector<int64_t>{});
      if (x.full || dims.size() != 1 || dims[0] != x.stage_dim) {
        return Stop(h, "gathers the stage axis along another dim");
      }
      out.full = true;
      Event(absl::StrCat("gather all slots (", h->name(), ")"));
      return true;
    }
    // all-reduce over the stage axis: a broadcast of the one slot that is not zero.
    int live = -1;
    for (int64_t s = 0; s < stages_; ++s) {
      if (x.slots[s].origin != Content::Origin::kZero) {
        if (live != -1) return Stop(h, "sums several stages");
        live = static_cast<int>(s);
      }
    }
    out = AV{};
    out.kind = AV::Kind::kSlot;
    if (live >= 0) out.one = x.slots[live];
    out.one.origin = live >= 0 ? out.one.origin : Content::Origin::kZero;
    Event(absl::StrCat("broadcast slot ", live, " (", h->name(), ")"));
    return true;
  }

  const ProgramFacts& facts_;
  const RecoveredMesh& mesh_;
  const PipelineFinding& pipeline_;
  const LoopFact& loop_;
  std::map<int, int64_t> stream_dims_;
  bool learning_;
  std::map<int, int> stream_dir_;
  IntEvaluator eval_;
  int64_t stages_;
  const HloComputation* body_ = nullptr;
  int64_t trip_ = 0;
  std::map<int, std::vector<Content>> streams_;
  std::map<int, std::map<int64_t, Content>> buffers_;
  std::set<int> collected_by_counter_;
  std::map<std::pair<int64_t, int>, bool> entered_;
  std::set<std::pair<int64_t, int>> observed_;
  std::map<std::pair<int64_t, int>, std::string> complete_;
  std::map<std::pair<int64_t, int>, std::string> progress_;
  std::map<std::pair<int64_t, int>, std::pair<std::string, int64_t>> lost_;
  std::map<const HloInstruction*, int> rotation_dir_;
  std::map<const HloInstruction*, int> rotation_stream_;
  std::map<int, int64_t> inject_slot_;  // The slot fresh micro-batches first enter, per stream.
  std::map<const HloInstruction*, bool> wrap_read_;
  std::vector<std::string> events_;
  int64_t micro_batches_ = 0;
  std::string unknown_;
  std::string violation_;
};

}  // namespace

std::map<int, int64_t> StreamDims(const ProgramFacts& facts, const HloInstruction* loop, int axis) {
  std::map<int, int64_t> out;
  const HloComputation* body = loop->called_computation("body");
  const HloSharding* s = facts.annotations().Of(loop);
  if ((s == nullptr || !s->IsTuple()) && body != nullptr) {
    for (HloInstruction* p : body->parameters()) {
      if (p != nullptr) s = facts.annotations().Of(p);
    }
  }
  if (s == nullptr || !s->IsTuple() || body == nullptr || body->root() == nullptr ||
      body->root()->opcode() != HloOpcode::kTuple) {
    return out;
  }
  for (size_t e = 0; e < s->tuple_elements().size(); ++e) {
    if (static_cast<int64_t>(e) >= body->root()->operand_count()) break;
    const HloInstruction* back = body->root()->operand(e);
    while (back->opcode() == HloOpcode::kCopy) back = back->operand(0);
    if (back->opcode() == HloOpcode::kGetTupleElement &&
        back->operand(0)->opcode() == HloOpcode::kParameter && back->attrs().tuple_index == e) {
      continue;  // Invariant: weights or inputs.
    }
    std::optional<std::vector<std::vector<AxisPart>>> dims = facts.DimAxes(s->tuple_elements()[e]);
    if (!dims.has_value()) continue;
    for (size_t k = 0;
         k < dims->size() && k < static_cast<size_t>(s->tuple_elements()[e].TiledDataRank()); ++k) {
      bool has = false;
      for (const AxisPart& p : (*dims)[k]) has = has || p.axis == axis;
      if (has) {
        out[static_cast<int>(e)] = static_cast<int64_t>(k);
        break;
      }
    }
  }
  return out;
}

ScheduleRun RunSchedule(const ProgramFacts& facts, const PipelineFinding& pipeline) {
  ScheduleRun run;
  if (pipeline.loop == nullptr) {
    run.result = smt::ProofResult::Unknown("no loop");
    return run;
  }
  const LoopFact* loop = facts.LoopOf(pipeline.loop);
  if (loop == nullptr || loop->loop->called_computation("body") == nullptr) {
    run.result = smt::ProofResult::Unknown("the loop has no body");
    return run;
  }
  const std::map<int, int64_t> streams = StreamDims(facts, pipeline.loop, pipeline.axis);
  if (streams.empty()) {
    run.result = smt::ProofResult::Unknown(
        "no loop-state element split over the stage axis changes in the loop (the loop's state "
        "has no sharding annotation?)");
    return run;
  }
  if (!loop->trips.has_value()) {
    run.result = smt::ProofResult::Unknown("the loop's trip count is unknown");
    return run;
  }
  const int64_t trips = *loop->trips;
  if (trips > 100000) {
    run.result = smt::ProofResult::Unknown(absl::StrCat("the loop runs ", trips, " trips"));
    return run;
  }
  // First run: learn each stream's rotation direction.
  Simulator learn(facts, pipeline, *loop, streams, /*learning=*/true, {});
  if (!learn.Run(trips)) {
    run.result = smt::ProofResult::Unknown(learn.unknown());
    return run;
  }
  Simulator sim(facts, pipeline, *loop, streams, /*learning=*/false, learn.directions());
  const bool finished = sim.Run(trips);
  run.direction = sim.rotation_dirs();
  run.wrap_read = sim.wrap_read();
  run.micro_batches = sim.micro_batches();
  run.schedule = absl::StrJoin(sim.events(), ", ");
  if (!finished) {
    run.result = smt::ProofResult::Unknown(sim.unknown());
    return run;
  }
  sim.CheckEnd(trips);
  if (!sim.violation().empty()) {
    run.result = smt::ProofResult::Refuted(sim.violation());
  } else if (sim.micro_batches() == 0) {
    run.result = smt::ProofResult::Unknown(
        "no micro-batch is read from the state at a counter-dependent index");
  } else {
    run.result = smt::ProofResult::Proved();
  }
  return run;
}

}  // namespace spmdcheck::explain
