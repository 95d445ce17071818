// Programs evaluated in a wider float type than they are written in. Partitioning reorders
// additions, and a reordered sum rounds differently; evaluating both programs of a comparison in a
// wider type makes those roundings agree (narrow floats in f32: check/check_pipeline.cc) or
// shrinks them below anything the comparison can see (f32 in f64: CheckEquivalence's second look
// at an f32 mismatch, oracle/equivalence.h).
#ifndef SPMDCHECK_ORACLE_FLOAT_WIDENING_H_
#define SPMDCHECK_ORACLE_FLOAT_WIDENING_H_

#include <memory>

#include "ir/hlo_module.h"
#include "ir/literal.h"

namespace spmdcheck::oracle {

enum class FloatWidening {
  kNarrowToF32,  // bf16, f16 and the f8 formats become f32.
  kF32ToF64,     // f32 becomes f64.
};

// True when some instruction of `module` has a type `widening` changes.
bool HasWidenableFloats(const HloModule& module, FloatWidening widening);

// True when `module` computes in floats and every float or complex value in it is an f32.
bool AllFloatsAreF32(const HloModule& module);

// `literal` with the element types `widening` changes widened, values kept (every value of the
// narrower type is exact in the wider one). Elided literals are returned as they are.
Literal WidenLiteral(const Literal& literal, FloatWidening widening);

// A copy of `module` with every type `widening` changes widened (instruction shapes and constants;
// layouts kept as they are, the rank is the same). nullptr when widening would change what the
// program means: a bitcast-convert reinterprets the bits of its operand's type.
std::unique_ptr<HloModule> WidenFloats(const HloModule& module, FloatWidening widening);

}  // namespace spmdcheck::oracle

#endif  // SPMDCHECK_ORACLE_FLOAT_WIDENING_H_
