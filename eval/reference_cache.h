// Reference outputs, computed once per (task, shapes, seed) and cached on
// disk and in memory: big references (a 1024^3 gemm in fp64) cost seconds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/task.h"

namespace kevo {

struct ReferenceOutputs {
  std::vector<DType> dtypes;             // the outputs' dtypes
  std::vector<Shape> shapes;             // the outputs' shapes
  std::vector<std::vector<char>> data;   // one buffer per output
  bool from_disk = false;
  double compute_s = 0;
  std::vector<ConstTensorView> views() const;
  size_t bytes() const;
};

class ReferenceCache {
 public:
  // `dir` empty: memory only. `memory_budget` 0: a quarter of the machine's
  // memory, at most 16 GiB (the checks of one evaluation use three
  // references: a big elementwise task's are over a GiB, and a cache that
  // cannot hold them reads them from disk at every evaluation).
  explicit ReferenceCache(std::filesystem::path dir, size_t memory_budget = 0);

  std::shared_ptr<const ReferenceOutputs> get(const Task& task, const ShapeSet& shapes,
                                              uint64_t seed);
  // The inputs for `shapes` and `seed`, as the runner generates them.
  static std::vector<std::vector<char>> make_inputs(const Task& task, const ShapeSet& shapes,
                                                    uint64_t seed);
  static std::string key(const Task& task, const ShapeSet& shapes, uint64_t seed);

 private:
  std::shared_ptr<const ReferenceOutputs> load(const std::filesystem::path& path,
                                               const Task& task, const ShapeSet& shapes);
  void save(const std::filesystem::path& path, const ReferenceOutputs& r);
  void remember(const std::string& key, std::shared_ptr<const ReferenceOutputs> r);

  std::filesystem::path dir_;
  size_t budget_;
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const ReferenceOutputs>>> lru_;
};

}  // namespace kevo
