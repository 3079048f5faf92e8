#include "eval/static_check.h"

#include <regex>

#include <fmt/format.h>

#include "targets/traits.h"

namespace kevo {

namespace {

// Calls a kernel has no business making, by what they reach.
struct Banned {
  const char* what;
  const char* names;  // alternatives for a regex
};
const Banned kBanned[] = {
    {"starts processes", "fork|vfork|clone|clone3|system|popen|posix_spawnp?|exec[lv]p?e?|execvpe"},
    {"signals or traces other processes", "kill|tgkill|ptrace"},
    {"opens files", "fopen|freopen|open|openat|creat|unlink|remove|rename|mkdir|rmdir|chdir|truncate"},
    {"uses the network", "socket|connect|bind|listen|accept|sendto|recvfrom|getaddrinfo"},
    {"reads or changes the environment", "getenv|setenv|putenv|unsetenv"},
    {"loads code or makes raw system calls", "dlopen|dlsym|syscall|mprotect|setrlimit|prctl"},
};

}  // namespace

std::string strip_comments_and_strings(const std::string& s) {
  std::string out = s;
  enum { code, line_comment, block_comment, str, chr } state = code;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    char next = i + 1 < s.size() ? s[i + 1] : '\0';
    switch (state) {
      case code:
        if (c == '/' && next == '/') state = line_comment, out[i] = ' ';
        else if (c == '/' && next == '*') state = block_comment, out[i] = ' ';
        else if (c == '"') state = str;
        else if (c == '\'') state = chr;
        break;
      case line_comment:
        if (c == '\n') state = code;
        else out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case str:
      case chr:
        if (c == '\\' && next) {
          out[i] = ' ';
          if (next != '\n') out[i + 1] = ' ';
          ++i;
        } else if ((state == str && c == '"') || (state == chr && c == '\'')) {
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

std::optional<std::string> static_check(const std::string& source, const std::string& entry_point,
                                        const std::string& language) {
  const std::string code = strip_comments_and_strings(source);
  if (!std::regex_search(code, std::regex("\\b" + entry_point + "\\s*\\(")))
    return fmt::format("does not define the entry point {}()", entry_point);
  for (const Banned& b : kBanned) {
    std::regex call(std::string("(^|[^A-Za-z0-9_.>:])(") + b.names + ")\\s*\\(");
    std::smatch m;
    if (std::regex_search(code, m, call)) {
      size_t line = 1 + static_cast<size_t>(std::count(code.begin(), code.begin() + m.position(2), '\n'));
      return fmt::format("line {}: calls {}(), which {}: kernels may only compute", line,
                         m[2].str(), b.what);
    }
  }
  // The target's own rules for code in its language (targets/traits.cpp).
  if (const TargetTraits* t = traits_of_language(language))
    for (const BannedUse& b : t->banned) {
      std::regex use(std::string("(^|[^A-Za-z0-9_])(") + b.names + ")\\b");
      std::smatch m;
      if (std::regex_search(code, m, use)) {
        size_t line =
            1 + static_cast<size_t>(std::count(code.begin(), code.begin() + m.position(2), '\n'));
        return fmt::format("line {}: uses {}, which {}", line, m[2].str(), b.what);
      }
    }
  return std::nullopt;
}

}  // namespace kevo
