#include "targets/runner_io.h"

#include <unistd.h>

#include <cerrno>

namespace kevo {

std::string hostname_str() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

EventReader::~EventReader() {
  if (fd_ >= 0) close(fd_);
}

void EventReader::read_available(std::vector<std::string>& lines) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd_, buf, sizeof(buf));
    if (n > 0) {
      if (partial_.size() < kMaxLine) partial_.append(buf, static_cast<size_t>(n));
      size_t pos;
      while ((pos = partial_.find('\n')) != std::string::npos) {
        lines.push_back(partial_.substr(0, pos));
        partial_.erase(0, pos + 1);
      }
      continue;
    }
    if (n == 0) {
      close(fd_);
      fd_ = -1;
    } else if (errno == EINTR) {
      continue;
    }
    return;
  }
}

void write_line(int fd, const std::string& line) {
  std::string s = line + "\n";
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0 && fd >= 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // the runner is gone; its exit tells the rest
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

const char* kernel_rc_name(int rc) {
  switch (rc) {
    case 1: return "KEVO_ERR_UNSUPPORTED";
    case 2: return "KEVO_ERR_ARGS";
    case 3: return "KEVO_ERR_RUNTIME";
    default: return "an error";
  }
}

}  // namespace kevo
