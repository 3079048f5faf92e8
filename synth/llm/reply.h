// Reading an LLM's answer: either one whole kernel in a fenced code block, or
// SEARCH/REPLACE edits to the parent kernel, applied all or nothing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kevo::llm {

struct Edit {
  std::string search, replace;  // whole lines, each ending in '\n', CRs dropped
};

struct ParsedReply {
  enum class Kind { kernel, edits, none } kind = Kind::none;
  // kernel: the block's text; edits: the parent with every edit applied.
  std::string source;
  std::vector<Edit> edits;
  // none: why, for the log and the next prompt ("edit 2 of 3: SEARCH text not
  // found in the parent").
  std::string refusal;
};

// A reply holding
//     <<<<<<< SEARCH
//     ...lines of the parent...
//     =======
//     ...new lines...
//     >>>>>>> REPLACE
// one or more times (inside fenced blocks or not) is a set of edits: each
// SEARCH must match whole lines of the parent, as changed by the edits before
// it, in exactly one place; lines may differ only in trailing whitespace or
// CRLF endings. If any edit fails, none is applied. Any other reply must hold
// a fenced block: for `syntax` "c" (C, C++, CUDA: ```, ```c, ```cpp, ```cuda,
// ```cu, ...) the largest C, C++ or CUDA block (or untagged block) is the
// kernel; for "python" (Triton) the largest ```python, ```py or untagged one.
ParsedReply parse_reply(const std::string& reply_text, const std::string& parent_source,
                        std::string_view syntax = "c");

// Applies `edits` in order to `parent_source`, all or nothing: kind `edits`
// with the new source, or kind `none` with the refusal of the first edit that
// does not apply. parse_reply's second half, for edits already scanned.
ParsedReply apply_edits(std::vector<Edit> edits, const std::string& parent_source);

}  // namespace kevo::llm
