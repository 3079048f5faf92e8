// A task's kernel families: where they are found (the folder of its
// operator on its target under KEVO_HOME, or the task's own "kernels"), and
// one family as a standalone source with a point's knob values baked in.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "core/space.h"
#include "core/task.h"

namespace kevo {

// The best kernel as one standalone source: the family's text with its knob
// values defined at the top (the @kevo declarations stay, for reference).
// `shape_defaults` ("NAME=VALUE", as shape_defines gives them) are defined
// too unless the compiler defines them, so that the file built elsewhere
// keeps the fast path for the shape it was searched at.
std::string standalone_source(const Family& family, const KnobValues& knobs,
                              const std::string& note,
                              const std::vector<std::string>& shape_defaults = {});

// The kernel files of the task's operator on its target (or the task's own
// "kernels" when it lists some), optionally only the named families. Throws
// UserError naming the folder when there are none.
std::vector<std::filesystem::path> family_files(const Task& task,
                                                const std::vector<std::string>& families);

}  // namespace kevo
