// Logging to stderr with a level set once (KEVO_LOG=debug|info|warn|error or
// the CLI's --verbose / --quiet).
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace kevo {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_line(LogLevel level, std::string_view message);

template <class... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::debug) log_line(LogLevel::debug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::info) log_line(LogLevel::info, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (log_level() <= LogLevel::warn) log_line(LogLevel::warn, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace kevo
