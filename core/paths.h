// Where kevo finds its own files (kernel families, ABI header, configs) and
// keeps its caches.
#pragma once

#include <filesystem>

namespace kevo {

// $KEVO_HOME, else the source tree kevo was built from.
std::filesystem::path kevo_home();
// $KEVO_CACHE_DIR, else $XDG_CACHE_HOME/kevo, else ~/.cache/kevo (created).
std::filesystem::path cache_dir();
// The folder of the running executable.
std::filesystem::path executable_dir();
// Writes `data` to `path` atomically (temporary file, then rename).
void write_file_atomic(const std::filesystem::path& path, const void* data, size_t size);
std::string read_text_file(const std::filesystem::path& path);

}  // namespace kevo
