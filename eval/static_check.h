// Static checks before compiling: a candidate must define the target's entry
// point and must not reach outside its sandbox (processes, files, network,
// environment). A refusal is the `rejected` status, not an error.
#pragma once

#include <optional>
#include <string>

namespace kevo {

// The reason a source is refused, or nullopt when it may be compiled.
std::optional<std::string> static_check(const std::string& source, const std::string& entry_point);

// The source with comments and string/char literals blanked (same length,
// newlines kept), so checks see only code.
std::string strip_comments_and_strings(const std::string& source);

}  // namespace kevo
