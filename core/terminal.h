// What kevo shows on stderr while it works: progress lines (the log at level
// info), one status line rewritten in place on a terminal, and whether
// stdout and stderr are terminals at all.
#pragma once

#include <string_view>

namespace kevo {

bool stdout_is_tty();
bool stderr_is_tty();
// A progress line on stderr ("kevo: ...").
void progress(std::string_view line);
// One status line on a terminal, rewritten in place; silent when stderr is
// not a terminal (logs get the final result only).
class StatusLine {
 public:
  StatusLine();
  ~StatusLine() { clear(); }
  void set(std::string_view text);
  void clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

}  // namespace kevo
