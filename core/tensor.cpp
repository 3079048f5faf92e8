#include "core/tensor.h"

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "core/knobs.h"

namespace kevo {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::string coords_str(const Shape& s, int64_t flat) {
  std::vector<int64_t> c(s.size());
  for (size_t i = s.size(); i-- > 0;) {
    c[i] = s[i] > 0 ? flat % s[i] : 0;
    flat = s[i] > 0 ? flat / s[i] : 0;
  }
  return fmt::format("[{}]", fmt::join(c, ", "));
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body, int threads,
                  int64_t grain) {
  if (threads <= 0) threads = online_cpus();
  int64_t chunks = std::min<int64_t>(threads, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (chunks <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t c = 1; c < chunks; ++c)
    pool.emplace_back([&, c] { body(n * c / chunks, n * (c + 1) / chunks); });
  body(0, n / chunks);
  for (auto& t : pool) t.join();
}

}  // namespace kevo
