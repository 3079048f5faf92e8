/* kevo_reference.h — what an operator's reference may use beyond kevo_kernel.h.
 *
 * kevo calls a reference on f64 copies of the task's tensors (every kevo_tensor
 * it gets has dtype KEVO_F64) and rounds the f64 outputs to each output's dtype
 * itself. A reference that must also round an intermediate result the way the
 * task stores it (add_rmsnorm: y is the norm of h = x + r as stored in the task
 * dtype) defines kevo_reference instead of kevo_kernel: kevo then also passes
 * each tensor's task dtype and its own rounding function.
 *
 * References are compiled with -pthread: one may use threads (C++:
 * kevo_parallel_for below) for large shapes. kevo calls it in a forked child.
 */
#ifndef KEVO_REFERENCE_H
#define KEVO_REFERENCE_H

#include "kevo_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  /* The dtype (enum kevo_dtype) each tensor has in the task, in ABI order:
     the inputs, then the outputs (n_in + n_out entries). */
  const int32_t* dtypes;
  /* v stored in `dtype` and read back, exactly as kevo stores outputs:
     nearest-even for f32, f16 and bf16, saturating for i32 and i8. */
  double (*round)(double v, int32_t dtype);
} kevo_reference_context;

KEVO_EXPORT int kevo_reference(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                               const double* scalars, int n_scalars,
                               const kevo_reference_context* ctx);

#ifdef __cplusplus
}

#include <algorithm>
#include <thread>
#include <vector>

/* Calls f(begin, end) on contiguous ranges covering [0, n) from up to one
   thread per CPU, each range at least `grain` long. */
template <class F>
static void kevo_parallel_for(int64_t n, int64_t grain, F f) {
  const int64_t cpus = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t chunks =
      std::min<int64_t>(cpus, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> threads;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    threads.emplace_back([=] { f(begin, end); });
  }
  for (auto& t : threads) t.join();
}
#endif

#endif /* KEVO_REFERENCE_H */
