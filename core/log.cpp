#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace kevo {

namespace {
LogLevel initial_level() {
  const char* v = std::getenv("KEVO_LOG");
  if (!v) return LogLevel::info;
  if (!std::strcmp(v, "debug")) return LogLevel::debug;
  if (!std::strcmp(v, "warn")) return LogLevel::warn;
  if (!std::strcmp(v, "error")) return LogLevel::error;
  if (!std::strcmp(v, "off")) return LogLevel::off;
  return LogLevel::info;
}
std::atomic<LogLevel> g_level{initial_level()};
std::mutex g_mutex;
}  // namespace

void set_log_level(LogLevel level) { g_level = level; }
LogLevel log_level() { return g_level; }

void log_line(LogLevel level, std::string_view message) {
  static const char* names[] = {"debug", "info", "warning", "error"};
  std::lock_guard<std::mutex> lock(g_mutex);
  if (level == LogLevel::info)
    std::fprintf(stderr, "kevo: %.*s\n", static_cast<int>(message.size()), message.data());
  else
    std::fprintf(stderr, "kevo: %s: %.*s\n", names[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
}

}  // namespace kevo
