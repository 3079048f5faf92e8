#include "eval/roofs.h"

namespace kevo {

Roof calibrate_and_store(Store& store, Target& target,
                         const std::function<void(std::string_view)>& progress) {
  Roof roof = target.calibrate(progress);
  roof.id = store.add_roof(roof);
  return roof;
}

Roof roof_for(Store& store, Target& target, const std::function<void(std::string_view)>& progress) {
  if (auto r = store.latest_roof(target.name(), target.host_key())) return *r;
  return calibrate_and_store(store, target, progress);
}

}  // namespace kevo
