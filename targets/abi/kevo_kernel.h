/* kevo_kernel.h — the C ABI every kevo candidate kernel implements.
 *
 * A candidate is one source file plus knob values. kevo compiles it with the
 * knobs passed as -D defines and calls one entry point:
 *
 *   CPU:  int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out,
 *                         int n_out, const double* scalars, int n_scalars);
 *   CUDA: int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out,
 *                         int n_out, const double* scalars, int n_scalars,
 *                         cudaStream_t stream);
 *
 * Tensors come in the operator's declared order (see `kevo targets` /
 * README.md). Pointers are host memory on the CPU and device memory on CUDA.
 * Shapes and strides count elements, not bytes; kevo passes row-major,
 * contiguous tensors whose data is at least 64-byte aligned (rows of a ragged
 * shape are not). Return KEVO_OK (0) on success; any other value is recorded
 * as the candidate's failure.
 *
 * Knobs are declared in comments that kevo reads:
 *   // @kevo knob BLOCK 256 {64, 128, 256, 512}
 *   // @kevo require BLOCK * VEC <= 4096
 * `require` expressions may use knob names, integer literals, + - * / %,
 * comparisons, && || !, parentheses and the builtin NCPU (online CPUs).
 */
#ifndef KEVO_KERNEL_H
#define KEVO_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum kevo_dtype {
  KEVO_F32 = 0,
  KEVO_F64 = 1,
  KEVO_F16 = 2,
  KEVO_BF16 = 3,
  KEVO_I32 = 4,
  KEVO_I8 = 5,
};

enum kevo_status {
  KEVO_OK = 0,
  KEVO_ERR_UNSUPPORTED = 1, /* dtype, rank or layout this kernel does not handle */
  KEVO_ERR_ARGS = 2,        /* wrong number of tensors or scalars */
  KEVO_ERR_RUNTIME = 3,     /* anything else the kernel detected */
  KEVO_ERR_LAUNCH = 4,      /* the device cannot launch this configuration (more threads per
                               block than the compiled kernel allows, too much shared memory):
                               not a candidate on this device, rejected rather than a crash */
};

#define KEVO_MAX_RANK 8

typedef struct {
  void* data;
  int32_t dtype; /* enum kevo_dtype */
  int32_t rank;
  int64_t shape[KEVO_MAX_RANK];
  int64_t stride[KEVO_MAX_RANK]; /* in elements */
} kevo_tensor;

#if defined(__GNUC__)
#define KEVO_EXPORT __attribute__((visibility("default")))
#else
#define KEVO_EXPORT
#endif

#if defined(__CUDACC__)
KEVO_EXPORT int kevo_launch(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars, cudaStream_t stream);
#else
KEVO_EXPORT int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                            const double* scalars, int n_scalars);
#endif

/* Number of elements of a tensor (product of its shape). */
static inline int64_t kevo_numel(const kevo_tensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; ++i) n *= t->shape[i];
  return n;
}

/* Rows and row length when a tensor is seen as [rows, last dim]. */
static inline int64_t kevo_row_len(const kevo_tensor* t) {
  return t->rank > 0 ? t->shape[t->rank - 1] : 1;
}
static inline int64_t kevo_rows(const kevo_tensor* t) {
  int64_t last = kevo_row_len(t);
  return last > 0 ? kevo_numel(t) / last : 0;
}

/* 1 when the tensor is row-major contiguous. */
static inline int kevo_is_contiguous(const kevo_tensor* t) {
  int64_t expect = 1;
  for (int i = t->rank - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->stride[i] != expect) return 0;
    expect *= t->shape[i];
  }
  return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* KEVO_KERNEL_H */
