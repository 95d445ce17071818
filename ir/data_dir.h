// Where spmdcheck's data (the XLA worker's scripts, pinned requirements, known findings; in a
// build tree, the whole checkout) is found at run time: nothing about the checkout is compiled
// in, so one build's objects serve every checkout (ccache) and an installed binary works alone.
#ifndef SPMDCHECK_IR_DATA_DIR_H_
#define SPMDCHECK_IR_DATA_DIR_H_

#include <string>

namespace spmdcheck {

// $SPMDCHECK_DATA_DIR when set; else share/spmdcheck beside the running binary's directory,
// canonical: PREFIX/share/spmdcheck for PREFIX/bin/spmdcheck (`cmake --install`), and for a
// build tree's build/tools/spmdcheck or build/tests/X, build/share/spmdcheck, the link to the
// checkout that CMake makes. "." when neither exists (what is looked up there is then missing,
// and the caller's message names the path).
std::string SpmdcheckDataDir();

}  // namespace spmdcheck

#endif  // SPMDCHECK_IR_DATA_DIR_H_
