#include "oracle/float_widening.h"

#include <utility>
#include <vector>

#include "ir/primitive_type.h"
#include "ir/shape.h"

namespace spmdcheck::oracle {
namespace {

// The type `type` becomes under `widening`; `type` itself when it does not change.
PrimitiveType WidenedType(PrimitiveType type, FloatWidening widening) {
  switch (widening) {
    case FloatWidening::kNarrowToF32:
      return IsFloatingType(type) && type != PrimitiveType::kF32 && type != PrimitiveType::kF64
                 ? PrimitiveType::kF32
                 : type;
    case FloatWidening::kF32ToF64:
      return type == PrimitiveType::kF32 ? PrimitiveType::kF64 : type;
  }
  return type;
}

// Widens the array leaves of `shape` in place; true when one changed.
bool WidenShape(Shape& shape, FloatWidening widening) {
  bool changed = false;
  if (shape.IsTuple()) {
    for (Shape& e : shape.mutable_tuple_shapes()) changed = WidenShape(e, widening) || changed;
    return changed;
  }
  if (!shape.IsArray()) return false;
  const PrimitiveType wide = WidenedType(shape.element_type(), widening);
  if (wide == shape.element_type()) return false;
  shape.set_element_type(wide);
  return true;
}

// Calls visit(leaf type) for every array leaf of `shape`.
template <typename Visit>
void ForEachArrayType(const Shape& shape, Visit&& visit) {
  if (shape.IsTuple()) {
    for (const Shape& e : shape.tuple_shapes()) ForEachArrayType(e, visit);
  } else if (shape.IsArray()) {
    visit(shape.element_type());
  }
}

}  // namespace

bool HasWidenableFloats(const HloModule& module, FloatWidening widening) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      Shape shape = i->shape();
      if (WidenShape(shape, widening)) return true;
    }
  }
  return false;
}

bool AllFloatsAreF32(const HloModule& module) {
  bool f32 = false;
  bool other = false;
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      ForEachArrayType(i->shape(), [&](PrimitiveType type) {
        if (type == PrimitiveType::kF32) {
          f32 = true;
        } else if (IsFloatingType(type) || IsComplexType(type)) {
          other = true;
        }
      });
    }
  }
  return f32 && !other;
}

Literal WidenLiteral(const Literal& literal, FloatWidening widening) {
  if (literal.shape().IsTuple()) {
    std::vector<Literal> elements;
    for (const Literal& e : literal.tuple_elements()) {
      elements.push_back(WidenLiteral(e, widening));
    }
    return Literal::Tuple(std::move(elements));
  }
  Shape shape = literal.shape();
  if (literal.elided() || !WidenShape(shape, widening)) return literal;
  Literal wide(shape);
  for (int64_t i = 0; i < literal.element_count(); ++i) wide.SetDouble(i, literal.GetDouble(i));
  return wide;
}

std::unique_ptr<HloModule> WidenFloats(const HloModule& module, FloatWidening widening) {
  for (const auto& c : module.computations()) {
    for (const auto& i : c->instructions()) {
      if (i->opcode() == HloOpcode::kBitcastConvert) return nullptr;
    }
  }
  std::unique_ptr<HloModule> copy = module.Clone();
  for (const auto& c : copy->computations()) {
    for (const auto& i : c->instructions()) {
      Shape shape = i->shape();
      if (WidenShape(shape, widening)) i->set_shape(shape);
      if (i->literal().has_value()) i->set_literal(WidenLiteral(*i->literal(), widening));
    }
  }
  return copy;
}

}  // namespace spmdcheck::oracle
