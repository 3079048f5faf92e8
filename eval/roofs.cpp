#include "eval/roofs.h"

#include <fmt/format.h>

#include "core/terminal.h"

namespace kevo {

Roof calibrate_and_store(Store& store, Target& target,
                         const std::function<void(std::string_view)>& progress) {
  Roof roof = target.calibrate(progress, {});
  roof.id = store.add_roof(roof);
  return roof;
}

Roof remeasure(Store& store, Target& target, double bytes,
               const std::function<void(std::string_view)>& progress) {
  Roof fresh = target.calibrate(progress, {bytes});
  fresh.id = store.add_roof(fresh);
  return Roof::best_of(store.roofs(target.name(), target.host_key()));
}

Roof roof_for(Store& store, Target& target, const std::function<void(std::string_view)>& progress) {
  std::vector<Roof> stored = store.roofs(target.name(), target.host_key());
  if (stored.empty()) {
    kevo::progress(fmt::format("no roof measured for {} yet: calibrating (once)", target.host_key()));
    return calibrate_and_store(store, target, progress);
  }
  return Roof::best_of(stored);
}

std::vector<Roof> roofs_by_host(Store& store, std::string_view target_name) {
  std::vector<Roof> out;
  for (const std::string& key : store.roof_host_keys(target_name))
    out.push_back(Roof::best_of(store.roofs(target_name, key)));
  return out;
}

}  // namespace kevo
