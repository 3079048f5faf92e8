#include "core/redact.h"

#include <algorithm>
#include <cstdlib>
#include <vector>
#include <mutex>
#include <set>

extern char** environ;

namespace kevo {

namespace {

std::mutex& secrets_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& secrets() {
  static std::set<std::string> s;
  return s;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

void add_secret(std::string_view value) {
  if (value.size() < 8) return;
  std::lock_guard<std::mutex> lock(secrets_mutex());
  secrets().emplace(value);
}

void add_secret_from_env(std::string_view name) {
  if (const char* v = std::getenv(std::string(name).c_str())) add_secret(v);
}

void add_secrets_from_environment() {
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq);
    if (ends_with(name, "_KEY") || ends_with(name, "_TOKEN") || ends_with(name, "_SECRET") ||
        ends_with(name, "_PASSWORD"))
      add_secret(entry.substr(eq + 1));
  }
}

std::string redact_secrets(std::string_view text) {
  std::string out(text);
  std::lock_guard<std::mutex> lock(secrets_mutex());
  // Longest first: a secret that holds a shorter one is replaced whole.
  std::vector<const std::string*> order;
  for (const std::string& s : secrets()) order.push_back(&s);
  std::sort(order.begin(), order.end(),
            [](const std::string* a, const std::string* b) { return a->size() > b->size(); });
  for (const std::string* secret : order) {
    const std::string& s = *secret;
    size_t pos = 0;
    while ((pos = out.find(s, pos)) != std::string::npos) {
      out.replace(pos, s.size(), "[redacted]");
      pos += 10;
    }
  }
  return out;
}

}  // namespace kevo
