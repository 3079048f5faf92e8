// The compile cache: artifacts (and compile errors) keyed by a hash of the
// source text, knob values, language and the target's toolchain identity.
#pragma once

#include <filesystem>
#include <string>

#include "core/knobs.h"
#include "core/task.h"
#include "targets/target.h"

namespace kevo {

struct CompiledCandidate {
  bool ok = false;
  std::filesystem::path artifact;
  std::string log;
  double seconds = 0;  // compile time (0 on a hit)
  bool cache_hit = false;
  std::string key;
};

class CompileCache {
 public:
  // Artifacts go under dir/<target>/.
  explicit CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  // Compiles `source_text` (read from `origin`, whose folder is searched for
  // includes) with `knobs`, or returns the cached result. Compile errors are
  // cached too; timeouts are not (the machine may just have been busy).
  CompiledCandidate get(Target& target, const Task& task, const std::string& source_text,
                        const std::filesystem::path& origin, const std::string& language,
                        const KnobValues& knobs);

  std::string key(Target& target, const Task& task, const std::string& source_text,
                  const std::string& language, const KnobValues& knobs);

 private:
  std::filesystem::path dir_;
};

}  // namespace kevo
