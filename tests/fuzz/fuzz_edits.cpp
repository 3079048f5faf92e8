// libFuzzer target: the SEARCH/REPLACE applier (llm::apply_edits) driven
// directly. The input is NUL-separated fields: the parent source, then SEARCH
// and REPLACE texts in turn. They are put in the form parse_reply gives them
// (whole lines, each ending in '\n', no CR), as the applier assumes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "synth/llm/reply.h"

namespace {

std::string as_lines(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != '\r') out += c;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> fields;
  for (size_t start = 0;;) {
    size_t nul = in.find('\0', start);
    fields.push_back(in.substr(start, nul == std::string_view::npos ? nul : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  std::string parent(fields[0]);
  std::vector<kevo::llm::Edit> edits;
  for (size_t i = 1; i + 1 < fields.size(); i += 2)
    edits.push_back({as_lines(fields[i]), as_lines(fields[i + 1])});
  using Kind = kevo::llm::ParsedReply::Kind;
  kevo::llm::ParsedReply p = kevo::llm::apply_edits(edits, parent);
  if (p.kind == Kind::edits) {
    if (p.edits.size() != edits.size()) std::abort();
  } else if (p.kind != Kind::none || p.refusal.empty() || !p.source.empty()) {
    std::abort();
  }
  return 0;
}
