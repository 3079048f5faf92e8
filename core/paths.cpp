#include "core/paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"

namespace kevo {

std::filesystem::path kevo_home() {
  if (const char* h = std::getenv("KEVO_HOME"); h && *h) return h;
  return KEVO_SOURCE_DIR;
}

std::filesystem::path cache_dir() {
  std::filesystem::path dir;
  if (const char* c = std::getenv("KEVO_CACHE_DIR"); c && *c) {
    dir = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = std::filesystem::path(x) / "kevo";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    dir = std::filesystem::path(home) / ".cache" / "kevo";
  } else {
    dir = std::filesystem::temp_directory_path() / "kevo-cache";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw UserError(fmt::format("cannot create cache directory '{}': {} (set KEVO_CACHE_DIR)",
                                dir.string(), ec.message()));
  return dir;
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : exe.parent_path();
}

void write_file_atomic(const std::filesystem::path& path, const void* data, size_t size) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::string tmp = fmt::format("{}.tmp.{}", path.string(), getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UserError(fmt::format("cannot write '{}': {}", tmp, strerror(errno)));
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      unlink(tmp.c_str());
      throw UserError(fmt::format("cannot write '{}': {}", tmp, strerror(e)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw UserError(fmt::format("cannot rename '{}': {}", tmp, strerror(e)));
  }
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read '{}': no such file or not readable", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kevo
