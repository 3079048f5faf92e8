// libkevo-inputs.so: kevo's own input generator for runners that are not C++
// (the triton target's Python runner loads it with ctypes), so that every
// runner feeds a candidate exactly the values kevo's CPU reference sees.
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/defined_operator.h"
#include "core/dtype.h"
#include "core/operator.h"
#include "core/tensor.h"

extern "C" {

// Fills `out` (the tensor's bytes, row-major) with input `index` of the
// operator `op` (a built-in's name) or of the operator `definition` (its JSON
// definition, as runner jobs carry it; NULL for a built-in) under `seed`.
// Returns 0, or 1 with the reason in `err` (NUL-terminated, at most
// `err_len` bytes).
__attribute__((visibility("default"))) int kevo_generate_input(
    const char* op, const char* definition, size_t index, int dtype, int rank,
    const int64_t* shape, uint64_t seed, void* out, char* err, size_t err_len) {
  try {
    nlohmann::json def;
    if (definition && *definition) def = nlohmann::json::parse(definition);
    std::shared_ptr<const kevo::Operator> holder;
    const kevo::Operator& o = kevo::job_operator(op ? op : "", def, holder);
    if (index >= o.n_inputs()) throw std::runtime_error("no such input");
    kevo::Shape s(shape, shape + rank);
    kevo::generate_input(o, index, kevo::TensorView{static_cast<kevo::DType>(dtype), s, out}, seed);
    return 0;
  } catch (const std::exception& e) {
    if (err && err_len) {
      std::strncpy(err, e.what(), err_len - 1);
      err[err_len - 1] = 0;
    }
    return 1;
  }
}
}
