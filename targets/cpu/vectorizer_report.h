// What a C compiler's vectorizer says of one source file: gcc's
// -fopt-info-vec-optimized-missed and clang's -Rpass*=loop-vectorize remarks,
// per loop (its source line), as profile figures and one sentence for the
// diagnosis. The cpu target's compiler_report() runs the compiler; this only
// reads what it printed.
#pragma once

#include <string>

#include "targets/target.h"

namespace kevo {

// `remarks`: the compiler's output; only remarks on `file` (its name, the
// candidate's source) count, not those on the headers it includes. Metrics:
// cc.vec.loops_vectorized, cc.vec.loops_missed, and per loop
// cc.vec.line.vectorized (value: the vector width, in bytes (gcc) or lanes
// (clang), 0 when not said) or
// cc.vec.line.missed (value 1), with its source line. Not ok, with a note,
// when there is no remark on the file at all.
ProfileOutcome parse_vectorizer_remarks(const std::string& remarks, const std::string& file);

}  // namespace kevo
