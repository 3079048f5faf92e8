#include "core/terminal.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "core/log.h"

namespace kevo {

bool stdout_is_tty() { return isatty(1); }
bool stderr_is_tty() { return isatty(2); }

void progress(std::string_view line) { log_info("{}", line); }

StatusLine::StatusLine() : enabled_(stderr_is_tty()) {}

void StatusLine::set(std::string_view text) {
  if (!enabled_) return;
  fmt::print(stderr, "\r\033[Kkevo: {}...", text);
  std::fflush(stderr);
  shown_ = true;
}

void StatusLine::clear() {
  if (!shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace kevo
