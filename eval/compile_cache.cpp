#include "eval/compile_cache.h"

#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "core/hash.h"
#include "core/paths.h"
#include "targets/traits.h"

namespace kevo {

namespace {
constexpr const char* kPlaceholder = "@KEVO_CANDIDATE@";
}  // namespace

std::string CompileCache::key(Target& target, const Task& task, const std::string& source_text,
                              const std::string& language, const KnobValues& knobs) {
  Sha256 h;
  h.field(source_text).field(knobs_to_json(knobs)).field(language).field(
      target.toolchain_id(task, language));
  // Kernels may specialize on the task's shapes (passed as defines).
  h.field(fmt::format("{}", fmt::join(shape_defines(task), " ")));
  // A plain kernel is compiled inside a wrapper generated from the entry.
  if (!task.entry.empty()) h.field(task.entry.spec.dump());
  return h.hex().substr(0, 32);
}

CompiledCandidate CompileCache::get(Target& target, const Task& task,
                                    const std::string& source_text,
                                    const std::filesystem::path& origin,
                                    const std::string& language, const KnobValues& knobs) {
  CompiledCandidate c;
  c.key = key(target, task, source_text, language, knobs);
  const auto dir = dir_ / std::string(target.name()) / c.key.substr(0, 2);
  const auto artifact = dir / (c.key + target.artifact_extension());
  const auto error_log = dir / (c.key + ".err");
  c.artifact = artifact;
  const auto ok_log = dir / (c.key + ".log");
  if (std::filesystem::exists(artifact)) {
    c.ok = c.cache_hit = true;
    // The compiler's report (warnings, ptxas resource usage) of the build.
    if (std::filesystem::exists(ok_log)) c.log = read_text_file(ok_log);
    return c;
  }
  // Logs are stored with a placeholder for the file name and shown with the
  // name of the file this candidate came from.
  const std::string ext =
      origin.has_extension() ? origin.extension().string() : source_extension(language);
  const std::string shown = origin.empty() ? "candidate" + ext : origin.string();
  auto show = [&](std::string log) {
    for (size_t pos; (pos = log.find(kPlaceholder)) != std::string::npos;)
      log.replace(pos, std::strlen(kPlaceholder), shown);
    return log;
  };
  if (std::filesystem::exists(error_log)) {
    c.cache_hit = true;
    c.log = show(read_text_file(error_log));
    return c;
  }
  // Compile a private copy of exactly the text that was hashed.
  std::filesystem::create_directories(dir);
  const std::string tag = fmt::format("{}.{}", c.key, getpid());
  const auto src = dir / (tag + ext);
  const auto tmp = dir / (tag + ".tmp" + target.artifact_extension());
  write_file_atomic(src, source_text.data(), source_text.size());
  CompileRequest req;
  req.task = &task;
  req.source = src;
  req.language = language;
  req.knobs = knobs;
  req.output = tmp;
  if (!origin.empty()) req.include_dirs.push_back(std::filesystem::absolute(origin).parent_path());
  CompileOutcome out = target.compile(req);
  std::filesystem::remove(src);
  c.seconds = out.seconds;
  std::string log = out.log;
  for (size_t pos; (pos = log.find(src.string())) != std::string::npos;)
    log.replace(pos, src.string().size(), kPlaceholder);
  c.log = show(log);
  if (out.ok) {
    write_file_atomic(ok_log, c.log.data(), c.log.size());
    std::filesystem::rename(tmp, artifact);
    c.ok = true;
  } else {
    std::filesystem::remove(tmp);
    if (!out.timed_out) write_file_atomic(error_log, log.data(), log.size());
  }
  return c;
}

}  // namespace kevo
