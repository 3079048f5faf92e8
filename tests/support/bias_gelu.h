// A fused bias + GELU(tanh) operator that kevo does not ship, defined the way
// a user would: a JSON definition, a C reference and seed kernels, written
// into a test's directory.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace kevo::test {

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

inline const char* kBiasGeluDefinition = R"json({
  "name": "bias_gelu", "formula": "y = alpha * gelu_tanh(x + b)",
  "sizes": ["M", "N"],
  "tensors": [
    {"name": "x", "role": "in", "shape": ["M", "N"], "distribution": {"lo": -3, "hi": 3}},
    {"name": "b", "role": "in", "shape": ["N"]},
    {"name": "y", "role": "out", "shape": ["M", "N"], "compare": "tol:1e-5,1e-3"}],
  "scalars": [{"name": "alpha", "default": 1.0}],
  "flops": "10 * M * N",
  "check_sizes": [{"M": 3, "N": 37}, {"M": 5, "N": 129}],
  "reference": "bias_gelu_ref.c"})json";

// f64 in and out, as kevo calls references.
inline const char* kBiasGeluReference = R"(#include <math.h>
#include "kevo_kernel.h"
int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* s, int n_s) {
  if (n_in != 2 || n_out != 1 || n_s != 1 || in[0].dtype != KEVO_F64) return KEVO_ERR_ARGS;
  const double *x = in[0].data, *b = in[1].data;
  double* y = out[0].data;
  const long m = in[0].shape[0], n = in[0].shape[1];
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      const double v = x[i * n + j] + b[j];
      y[i * n + j] = s[0] * 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
  return KEVO_OK;
}
)";

// The body of an f32 kernel: BODY computes y[i*n+j] from v = x + b.
inline std::string bias_gelu_kernel(const std::string& comment, const std::string& body) {
  return "/* " + comment + " */\n#include <math.h>\n#include \"kevo_kernel.h\"\n" +
         R"(int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out,
                const double* s, int n_s) {
  if (n_in != 2 || n_out != 1 || n_s != 1) return KEVO_ERR_ARGS;
  const float *x = in[0].data, *b = in[1].data;
  float* y = out[0].data;
  const float alpha = (float)s[0];
  const long m = in[0].shape[0], n = in[0].shape[1];
  for (long i = 0; i < m; ++i)
    for (long j = 0; j < n; ++j) {
      const float v = x[i * n + j] + b[j];
)" + body +
         R"(
    }
  return KEVO_OK;
}
)";
}

// Right, written plainly.
inline std::string bias_gelu_fast() {
  return bias_gelu_kernel("bias_gelu: one pass in f32",
                          "      y[i * n + j] = alpha * 0.5f * v * (1.0f + tanhf(0.7978845608f * "
                          "(v + 0.044715f * v * v * v)));");
}

// Right, but it computes every element 32 times, each from the volatile
// result of the last (0 * r is not 0 to a compiler: r could be NaN), so no
// compiler drops the repeats: the family a search must leave behind.
inline std::string bias_gelu_naive() {
  return bias_gelu_kernel("bias_gelu: deliberately slow",
                          "      volatile double r = 0;\n"
                          "      for (int k = 0; k < 32; ++k) r = 0.5 * v * (1.0 + "
                          "tanh(0.7978845608028654 * (v + 0.044715 * v * v * v) + 0 * r));\n"
                          "      y[i * n + j] = alpha * (float)r;");
}

// Wrong: forgets the bias.
inline std::string bias_gelu_wrong() {
  return bias_gelu_kernel("bias_gelu without the bias (wrong)",
                          "      const float w = x[i * n + j];\n"
                          "      y[i * n + j] = alpha * 0.5f * w * (1.0f + tanhf(0.7978845608f * "
                          "(w + 0.044715f * w * w * w))) + 0 * v;");
}

// Crashes: writes through a null pointer.
inline std::string bias_gelu_crash() {
  return bias_gelu_kernel("bias_gelu that crashes",
                          "      *(volatile float*)0 = v;\n      y[i * n + j] = v;");
}

}  // namespace kevo::test
