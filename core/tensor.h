// Shapes and non-owning views of contiguous row-major tensors.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace kevo {

using Shape = std::vector<int64_t>;

int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[4096, 4096]"
// Row-major coordinates of a flat index, e.g. "[3, 17]".
std::string coords_str(const Shape& s, int64_t flat);

struct TensorView {
  DType dtype = DType::f32;
  Shape shape;
  void* data = nullptr;
  size_t bytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
};

struct ConstTensorView {
  DType dtype = DType::f32;
  Shape shape;
  const void* data = nullptr;
  ConstTensorView() = default;
  ConstTensorView(DType d, Shape s, const void* p) : dtype(d), shape(std::move(s)), data(p) {}
  ConstTensorView(const TensorView& t) : dtype(t.dtype), shape(t.shape), data(t.data) {}
  size_t bytes() const { return static_cast<size_t>(numel(shape)) * dtype_size(dtype); }
  double at(int64_t i) const { return load_element(dtype, data, static_cast<size_t>(i)); }
};

// Runs body(begin, end) over [0, n) split across up to `threads` std::threads
// (all online CPUs when 0). For kevo's own heavy loops: references, inputs.
// `grain`: the fewest items worth a thread (4096 elements by default; a
// caller whose items are whole rows passes fewer).
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body, int threads = 0,
                  int64_t grain = 4096);

}  // namespace kevo
