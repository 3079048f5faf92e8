// libFuzzer target: an LLM's reply (which may be hostile) through parse_reply
// against a fixed parent kernel. parse_reply never throws: a reply it cannot
// use is kind `none` with a reason.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "synth/llm/reply.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string parent =
      "// @kevo knob BLOCK 256 {128, 256}\n"
      "int kevo_kernel(void) {\n"
      "  int x = 0;\n"
      "  return x;\n"
      "}\n";
  std::string reply(reinterpret_cast<const char*>(data), size);
  using Kind = kevo::llm::ParsedReply::Kind;
  kevo::llm::ParsedReply p = kevo::llm::parse_reply(reply, parent);
  switch (p.kind) {
    case Kind::kernel:
      if (p.source.empty() || !p.edits.empty()) std::abort();
      break;
    case Kind::edits:
      if (p.edits.empty()) std::abort();
      break;
    case Kind::none:
      if (p.refusal.empty() || !p.source.empty()) std::abort();
      break;
  }
  return 0;
}
