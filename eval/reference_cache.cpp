#include "eval/reference_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/defined_operator.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"

namespace kevo {

namespace {
// Bump when input generation or any reference changes meaning.
constexpr const char* kReferenceVersion = "ref-v1";
constexpr char kMagic[8] = {'K', 'E', 'V', 'O', 'R', 'E', 'F', '1'};
}  // namespace

std::vector<ConstTensorView> ReferenceOutputs::views() const {
  std::vector<ConstTensorView> v;
  for (size_t i = 0; i < data.size(); ++i) v.emplace_back(dtypes[i], shapes[i], data[i].data());
  return v;
}

size_t ReferenceOutputs::bytes() const {
  size_t n = 0;
  for (const auto& d : data) n += d.size();
  return n;
}

namespace {

size_t default_budget() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t floor = size_t{1} << 30, cap = size_t{16} << 30;
  if (pages <= 0 || page <= 0) return floor;
  return std::clamp(static_cast<size_t>(pages) * static_cast<size_t>(page) / 4, floor, cap);
}

}  // namespace

ReferenceCache::ReferenceCache(std::filesystem::path dir, size_t memory_budget)
    : dir_(std::move(dir)), budget_(memory_budget ? memory_budget : default_budget()) {}

std::string ReferenceCache::key(const Task& task, const ShapeSet& shapes, uint64_t seed) {
  nlohmann::json k = {{"v", kReferenceVersion},
                      {"op", std::string(task.op->name())},
                      {"dtype", std::string(dtype_name(task.dtype))},
                      {"shapes", shapes.shapes},
                      {"scalars", task.scalars},
                      {"seed", seed}};
  // A defined operator's name says little: its definition and reference may
  // change (a built-in's too, when operators/ is edited and kevo rebuilt).
  if (auto* d = dynamic_cast<const DefinedOperator*>(task.op))
    k["definition"] = d->identity_hash();
  return sha256_hex(k.dump()).substr(0, 32);
}

std::vector<std::vector<char>> ReferenceCache::make_inputs(const Task& task, const ShapeSet& shapes,
                                                           uint64_t seed) {
  std::vector<std::vector<char>> in;
  for (size_t i = 0; i < task.op->n_inputs(); ++i) {
    in.emplace_back(static_cast<size_t>(numel(shapes.shapes[i])) * dtype_size(task.dtypes[i]));
    generate_input(*task.op, i, TensorView{task.dtypes[i], shapes.shapes[i], in.back().data()},
                   seed);
  }
  return in;
}

std::shared_ptr<const ReferenceOutputs> ReferenceCache::get(const Task& task,
                                                            const ShapeSet& shapes, uint64_t seed) {
  const std::string k = key(task, shapes, seed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->first == k) {
        lru_.splice(lru_.begin(), lru_, it);
        return it->second;
      }
    }
  }
  std::filesystem::path path;
  if (!dir_.empty()) {
    path = dir_ / k.substr(0, 2) / (k + ".ref");
    if (auto r = load(path, task, shapes)) {
      remember(k, r);
      return r;
    }
  }
  const Operator& op = *task.op;
  const double t0 = monotonic_seconds();
  auto inputs = make_inputs(task, shapes, seed);
  std::vector<ConstTensorView> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.emplace_back(task.dtypes[i], shapes.shapes[i], inputs[i].data());
  auto r = std::make_shared<ReferenceOutputs>();
  std::vector<TensorView> out;
  for (size_t i = op.n_inputs(); i < shapes.shapes.size(); ++i) {
    r->dtypes.push_back(task.dtypes[i]);
    r->shapes.push_back(shapes.shapes[i]);
    r->data.emplace_back(static_cast<size_t>(numel(shapes.shapes[i])) * dtype_size(task.dtypes[i]));
  }
  for (size_t i = 0; i < r->data.size(); ++i)
    out.push_back(TensorView{r->dtypes[i], r->shapes[i], r->data[i].data()});
  op.reference(in, task.scalars, out);
  r->compute_s = monotonic_seconds() - t0;
  if (r->compute_s > 0.5)
    log_debug("reference for {} computed in {:.1f} s", shape_str(shapes.shapes[0]), r->compute_s);
  if (!path.empty()) {
    try {
      save(path, *r);
    } catch (const std::exception& e) {
      log_warn("cannot cache a reference ({}); going on without", e.what());
    }
  }
  remember(k, r);
  return r;
}

std::shared_ptr<const ReferenceOutputs> ReferenceCache::load(const std::filesystem::path& path,
                                                             const Task& task,
                                                             const ShapeSet& shapes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  char magic[8];
  uint64_t header_len = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 ||
      !in.read(reinterpret_cast<char*>(&header_len), 8) || header_len > (1 << 20))
    return nullptr;
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len))) return nullptr;
  auto r = std::make_shared<ReferenceOutputs>();
  r->from_disk = true;
  for (size_t i = task.op->n_inputs(); i < shapes.shapes.size(); ++i) {
    r->dtypes.push_back(task.dtypes[i]);
    r->shapes.push_back(shapes.shapes[i]);
  }
  try {
    auto h = nlohmann::json::parse(header);
    if (h.at("shapes").get<std::vector<Shape>>() != r->shapes) return nullptr;
  } catch (const std::exception&) {
    return nullptr;
  }
  for (size_t i = 0; i < r->shapes.size(); ++i) {
    r->data.emplace_back(static_cast<size_t>(numel(r->shapes[i])) * dtype_size(r->dtypes[i]));
    if (!in.read(r->data.back().data(), static_cast<std::streamsize>(r->data.back().size())))
      return nullptr;  // truncated: recompute
  }
  return r;
}

void ReferenceCache::save(const std::filesystem::path& path, const ReferenceOutputs& r) {
  std::string header = nlohmann::json({{"shapes", r.shapes}}).dump();
  uint64_t len = header.size();
  std::string blob(kMagic, 8);
  blob.append(reinterpret_cast<const char*>(&len), 8);
  blob += header;
  for (const auto& d : r.data) blob.append(d.data(), d.size());
  write_file_atomic(path, blob.data(), blob.size());
}

void ReferenceCache::remember(const std::string& key, std::shared_ptr<const ReferenceOutputs> r) {
  std::lock_guard<std::mutex> lock(mutex_);
  lru_.emplace_front(key, std::move(r));
  size_t total = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    // The newest entry always stays, even when it alone exceeds the budget.
    if (it != lru_.begin() && total + it->second->bytes() > budget_) {
      it = lru_.erase(it);
    } else {
      total += it->second->bytes();
      ++it;
    }
  }
}

}  // namespace kevo
