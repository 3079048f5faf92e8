// kevo export: a run's results as a file, kevo's JSON or the T4 results schema.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/paths.h"
#include "report/export.h"

namespace kevo::cli {

int cmd_export(const Argv& argv) {
  Args a("export", "export RUN [RUN...] [-o FILE] [--format json|t4] [--db PATH]",
         "Writes the results of runs as one file: the task, target, host and measured roof, and\n"
         "every candidate with its family, knobs, status, median/p20/p80, raw timing samples,\n"
         "fraction of roof, bound, diagnosis and lineage. `kevo compare` reads it. With\n"
         "--format t4, one run in the T4 results schema that Kernel Tuner and KTT read (times\n"
         "in milliseconds, every candidate's knobs and family as its configuration).",
         {db_option(),
          {"-o", "FILE", "write there instead of stdout"},
          {"--format", "FORMAT", "json (kevo's, the default) or t4"}},
         1, 1000);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const std::string format = a.value("--format").value_or("json");
  if (format != "json" && format != "t4")
    throw UserError(fmt::format("--format: expected json or t4, got '{}'", format));
  std::vector<int64_t> runs;
  for (const auto& p : a.positional()) runs.push_back(parse_id(p, "kevo export RUN"));
  if (format == "t4" && runs.size() != 1)
    throw UserError("kevo export --format t4: a T4 file holds one tuning run; give one RUN");
  Store store(store_path(a), /*read_only=*/true);
  nlohmann::json doc = export_runs(store, runs);
  if (format == "t4") doc = to_t4(doc["runs"][0]);
  const std::string text = doc.dump(2) + "\n";
  if (auto out = a.value("-o")) {
    try {
      write_file_atomic(*out, text.data(), text.size());
    } catch (const std::filesystem::filesystem_error& e) {  // its folder cannot be made
      throw UserError(fmt::format("cannot write {}: {}", *out, e.code().message()));
    }
  } else {
    fmt::print("{}", text);
  }
  return 0;
}

}  // namespace kevo::cli
