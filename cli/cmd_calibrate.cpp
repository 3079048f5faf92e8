// kevo calibrate: measure this machine's roof and store it.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/log.h"
#include "eval/roofs.h"
#include "knowledge/knowledge_base.h"
#include "targets/target.h"

namespace kevo::cli {

int cmd_calibrate(const Argv& argv) {
  Args a("calibrate", "calibrate [--target T] [--json] [--db PATH]",
         "Measures copy, non-temporal copy and triad bandwidth at working sets from 16 KiB to\n"
         "1 GiB on 1 and all threads, and the peak fp32 FMA rate, then stores them. kevo eval\n"
         "judges candidates against the latest roof stored for this machine.",
         {{"--target", "T", "the target to calibrate (default: cpu)"}, db_option(), json_option()},
         0, 0);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  auto target = make_target(a.value("--target").value_or(std::string(default_target())));
  Store store(store_path(a));
  const bool json = a.flag("--json");
  progress(fmt::format("calibrating {} ({})", target->name(), target->host_key()));
  Roof roof = calibrate_and_store(store, *target, [&](std::string_view line) {
    if (!json) fmt::print("  {}\n", line);
  });
  // The datasheet figures of the knowledge base, beside what was measured.
  std::optional<KbDoc> sheet;
  if (auto id = target->hardware_sheet()) {
    try {
      sheet = KnowledgeBase::open().hardware(*id);
    } catch (const std::exception& e) {
      log_warn("knowledge base: {}", e.what());
    }
  }
  if (json) {
    nlohmann::json j = roof.to_json();
    j["id"] = roof.id;
    if (sheet)
      j["knowledge_base"] = {{"id", sheet->id}, {"title", sheet->title}, {"figures", sheet->figures},
                             {"sources", sheet->source}};
    fmt::print("{}\n", j.dump(2));
  } else {
    if (sheet) {
      std::vector<std::string> figures;
      for (const auto& [name, value] : sheet->figures.items()) figures.push_back(fmt::format("{} {}", name, value.dump()));
      fmt::print("  knowledge base ({}): {}: {}\n", sheet->id, sheet->title, fmt::join(figures, ", "));
    }
    fmt::print("stored roof {} for {} at {}\n", roof.id, roof.host_key, roof.measured_at);
  }
  return 0;
}

}  // namespace kevo::cli
