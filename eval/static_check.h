// Static checks before compiling: a candidate must define the target's entry
// point and must not reach outside its sandbox (processes, files, network,
// environment). A refusal is the `rejected` status, not an error.
#pragma once

#include <optional>
#include <string>

namespace kevo {

// The reason a source is refused, or nullopt when it may be compiled.
// Code in a target's language is also held to that target's rules
// (TargetTraits::banned: on CUDA, calls that would escape the measurement or
// harm the GPU's other users: own streams, device resets, managed memory,
// changing device limits). A target whose sources are Python (triton) has
// rules of its own: imports only of torch, triton, triton.language and math;
// no private or special names; none of the names that reach files,
// processes, the environment, the network, Triton's runtime or torch's
// global settings; no global state; no assignment to the modules' attributes.
std::optional<std::string> static_check(const std::string& source, const std::string& entry_point,
                                        const std::string& language = "c");

// The source with comments and string/char literals blanked (same length,
// newlines kept), so checks see only code.
std::string strip_comments_and_strings(const std::string& source);
// The same for Python: # comments and string literals blanked; an f-string
// is kept (what its braces hold is code).
std::string strip_python_comments_and_strings(const std::string& source);

}  // namespace kevo
