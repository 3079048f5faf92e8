#include "targets/cpu/vectorizer_report.h"

#include <map>
#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace kevo {

namespace {

struct Loop {
  bool vectorized = false;
  double width = 0;  // gcc: vector bytes; clang: lanes
  std::string unit;
  std::string why_not;  // the first reason given ("" when none)
};

}  // namespace

ProfileOutcome parse_vectorizer_remarks(const std::string& remarks, const std::string& file) {
  // "PATH:LINE:COL: KIND: TEXT" (gcc: optimized|missed; clang: remark).
  static const std::regex line_re(R"(^(.*):(\d+):\d+: (optimized|missed|remark): (.*)$)");
  static const std::regex gcc_bytes(R"(vectorized using (\d+) byte vectors)");
  static const std::regex clang_width(R"(vectorization width: (\d+))");
  std::map<int64_t, Loop> loops;
  std::istringstream in(remarks);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    const std::string path = m[1].str();
    if (path != file && (path.size() < file.size() + 1 ||
                         path.compare(path.size() - file.size() - 1, std::string::npos,
                                      "/" + file) != 0))
      continue;
    const int64_t at = std::stoll(m[2].str());
    std::string text = m[4].str();
    if (auto bracket = text.rfind(" [-R"); bracket != std::string::npos) text.resize(bracket);
    // Loop-level remarks make a loop of their line; reasons attach to a loop
    // of the same line; remarks on single statements are left out.
    const bool vectorized_loop = text.rfind("loop vectorized", 0) == 0 ||  // gcc
                                 text.rfind("vectorized loop", 0) == 0;    // clang
    const bool missed_loop = text.rfind("couldn't vectorize loop", 0) == 0 ||  // gcc
                             text.rfind("loop not vectorized", 0) == 0;        // clang
    const std::string lead = text.rfind("not vectorized: ", 0) == 0 ? "not vectorized: "
                             : text.rfind("loop not vectorized: ", 0) == 0 ? "loop not vectorized: "
                                                                           : "";
    if (!vectorized_loop && !missed_loop && lead.empty()) continue;
    Loop& loop = loops[at];  // gcc gives the reason after the loop's line, at the same place
    std::smatch b;
    if (vectorized_loop) {
      loop.vectorized = true;
      if (std::regex_search(text, b, gcc_bytes)) {
        loop.width = std::stod(b[1].str());
        loop.unit = "bytes";
      } else if (std::regex_search(text, b, clang_width)) {
        loop.width = std::stod(b[1].str());
        loop.unit = "lanes";
      }
      continue;
    }
    if (!lead.empty() && loop.why_not.empty()) {
      std::string why = text.substr(lead.size());
      while (!why.empty() && (why.back() == '.' || why.back() == ' ')) why.pop_back();
      loop.why_not = why;
    }
  }
  ProfileOutcome out;
  if (loops.empty()) {
    out.note = "the compiler's vectorizer said nothing of this file (no loops it looked at)";
    return out;
  }
  int64_t vectorized = 0, missed = 0;
  std::vector<std::string> misses;
  double widest = 0;
  std::string widest_unit;
  for (const auto& [at, loop] : loops) {
    // A loop the vectorizer vectorized in one version (an epilogue, a
    // versioned copy) counts as vectorized.
    if (loop.vectorized) {
      ++vectorized;
      if (loop.width > widest) {
        widest = loop.width;
        widest_unit = loop.unit;
      }
      out.metrics.push_back({"cc.vec.line.vectorized", loop.width, loop.unit, at});
    } else {
      ++missed;
      out.metrics.push_back({"cc.vec.line.missed", 1, "", at});
      misses.push_back(fmt::format("line {} ({})", at,
                                   loop.why_not.empty() ? "no reason given" : loop.why_not));
    }
  }
  out.metrics.push_back({"cc.vec.loops_vectorized", static_cast<double>(vectorized), "loops", 0});
  out.metrics.push_back({"cc.vec.loops_missed", static_cast<double>(missed), "loops", 0});
  out.ok = true;
  out.why = fmt::format("the compiler vectorized {} of {} loops{}", vectorized, vectorized + missed,
                        widest <= 0             ? ""
                        : widest_unit == "bytes" ? fmt::format(" (up to {:.0f}-byte vectors)", widest)
                                                 : fmt::format(" (up to {:.0f} lanes)", widest));
  if (!misses.empty()) {
    const size_t shown = std::min<size_t>(misses.size(), 4);
    out.why += "; not vectorized: ";
    for (size_t i = 0; i < shown; ++i) out.why += (i ? ", " : "") + misses[i];
    if (misses.size() > shown) out.why += fmt::format(" and {} more", misses.size() - shown);
  }
  return out;
}

}  // namespace kevo
