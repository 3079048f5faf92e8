// The peer operations: oneDNN softmax and layer normalization, OpenBLAS sgemm.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace peers {

using Shape = std::vector<int64_t>;

enum class Op { softmax, layernorm, sgemm };

struct OpInfo {
  Op op;
  const char* name;  // as given to --op
  const char* peer;  // library
  const char* shape_form;
  std::vector<Shape> default_shapes;
};

const std::vector<OpInfo>& all_ops();
const OpInfo& info(Op op);
std::optional<Op> parse_op(std::string_view name);

// Empty when `shape` suits `op`, else why not (OpInfo::shape_form says what fits). sgemm shapes are
// M x K x N (A is M x K, B is K x N); a single N means N x N x N.
std::string shape_error(Op op, const Shape& shape);
Shape canonical_shape(Op op, const Shape& shape);

// Work done by one call, for the table's rate column: bytes read once and
// written once for the row ops, 2 M N K flops for sgemm.
double call_bytes(Op op, const Shape& shape);
double call_flops(Op op, const Shape& shape);

// One operation set up on a shape: inputs filled, outputs in buffers of their
// own, the primitive built. `call` runs it once and waits for it.
class Prepared {
 public:
  virtual ~Prepared() = default;
  virtual void call() = 0;
  // The library's implementation that runs, e.g. "jit:avx512_core" or
  // "OpenBLAS core SkylakeX (forced)".
  virtual std::string impl() const = 0;
  // What the measurement is, for the JSON "note": caveats, library, impl().
  virtual std::string note() const = 0;
};

// Sets up `op` on `shape`. Call after the thread count is set.
std::unique_ptr<Prepared> prepare(Op op, const Shape& shape, uint64_t seed);

// Checks `op` against an fp64 reference on small shapes, with kevo's
// tolerances. Returns one line per check; `ok` false if any failed.
struct VerifyReport {
  bool ok = true;
  std::vector<std::string> lines;
};
VerifyReport verify(Op op);

// "4096x4096": dims joined by x, as --shape takes them.
std::string shape_str(const Shape& shape);

// Library identification, e.g. "oneDNN 2.6.3" or "OpenBLAS 0.3.21 ...".
std::string library_version(Op op);

}  // namespace peers
