// Line-oriented talk with a runner process, shared by the cpu and cuda
// targets: reading JSON event lines from a pipe without blocking, writing a
// command line, naming the kernel's return codes.
#pragma once

#include <string>
#include <vector>

namespace kevo {

std::string hostname_str();

// A line reader over a runner's event pipe (non-blocking descriptor).
class EventReader {
 public:
  explicit EventReader(int fd) : fd_(fd) {}
  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;
  ~EventReader();
  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  // Reads what is available; complete lines go to `lines`.
  void read_available(std::vector<std::string>& lines);

 private:
  static constexpr size_t kMaxLine = 64u << 20;
  int fd_;
  std::string partial_;
};

// Writes `line` and a newline; a runner that is gone is not an error here
// (its exit tells the rest).
void write_line(int fd, const std::string& line);

// "KEVO_ERR_UNSUPPORTED" for 1, ...
const char* kernel_rc_name(int rc);

}  // namespace kevo
