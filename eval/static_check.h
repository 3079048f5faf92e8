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
// changing device limits).
std::optional<std::string> static_check(const std::string& source, const std::string& entry_point,
                                        const std::string& language = "c");

// The source with comments and string/char literals blanked (same length,
// newlines kept), so checks see only code.
std::string strip_comments_and_strings(const std::string& source);

}  // namespace kevo
