#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kevo {

// kevo's kernel headers: targets/<target>/include/kevo_*.h (or .cuh), the
// layer the seed families of a target share (vector types, masked loads and
// stores, exp, reductions), shipped beside the ABI header.
//
// A candidate is one text. When a family is loaded (make_family), each line
// `#include "kevo_NAME.h"` naming a header of its target's include folder is
// replaced by the header's text between two marker comments; the header's
// own includes of kevo headers are inlined the same way, each header once.
// So the text kevo hashes, stores, compiles, caches and writes out is the
// whole kernel: changing a header changes the hash of every family that uses
// it (recompiled, never answered from older measurements), and a best kernel
// written by `kevo run -o`, a report or an export is one standalone file.
// fold_kernel_headers turns the markers back into the include lines, for the
// LLM prompt, which shows a header's interface (kernel_header_interfaces)
// rather than its body. A text compiled as it is (a test, a tool) still
// finds the headers: the targets pass the folder with -I, and the compile
// cache's key includes kernel_headers_hash.

// The folder of kevo's kernel headers for a source language ("c", "cuda"):
// kevo_home()/targets/<target>/include; empty when the language has no target.
std::filesystem::path kernel_include_dir(std::string_view language);

// `text` with kevo's kernel headers inlined (see above). Lines naming a file
// that is not in the folder (the ABI header kevo_kernel.h, a missing header)
// are left as they are: the compiler reports what is missing.
std::string inline_kernel_headers(const std::string& text, std::string_view language);

// The inverse of inline_kernel_headers: each marked block back to its
// include line. Text without markers is returned unchanged.
std::string fold_kernel_headers(const std::string& text);

// A hash of every header in the language's folder (names and contents):
// part of the compile cache's key, so a text that still names a header (one
// compiled without being loaded as a family) is rebuilt when a header changes.
std::string kernel_headers_hash(std::string_view language);

// For the LLM: each header of the language's folder under a line naming it,
// empty when the target has none. A header in `used` (those the task's
// families include) comes as its leading comment block, its documented
// interface; any other as the comment's first line only, so the model knows
// it is there without paying for its interface in every prompt. No `used`:
// every header in full.
std::string kernel_header_interfaces(std::string_view language, const std::set<std::string>* used = nullptr);

// The kevo headers a kernel text names: its include lines, and the headers
// inlined into it (their begin markers).
std::set<std::string> kernel_headers_named(const std::string& text);

}  // namespace kevo
