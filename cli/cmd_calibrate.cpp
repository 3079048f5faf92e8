// kevo calibrate: measure this machine's roof and store it.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "eval/roofs.h"
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
  auto target = make_target(a.value("--target").value_or("cpu"));
  Store store(store_path(a));
  const bool json = a.flag("--json");
  progress(fmt::format("calibrating {} ({})", target->name(), target->host_key()));
  Roof roof = calibrate_and_store(store, *target, [&](std::string_view line) {
    if (!json) fmt::print("  {}\n", line);
  });
  if (json) {
    nlohmann::json j = roof.to_json();
    j["id"] = roof.id;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("stored roof {} for {} at {}\n", roof.id, roof.host_key, roof.measured_at);
  }
  return 0;
}

}  // namespace kevo::cli
