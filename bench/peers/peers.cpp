// The peer operations (see peers.h): setup, the timed call, and the fp64 checks.
#include "peers.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "timing.h"

namespace peers {

namespace {

// kevo's scaled_softmax task multiplies x by this before the softmax.
constexpr double kSoftmaxScale = 0.125;
constexpr float kLayernormEps = 1e-5F;

// kevo's input laws (operators/*.json, "distribution"). Softmax rows are
// offset by up to 600 so that x * scale reaches ~80; the peer gets x already
// multiplied by the scale, so its output is kevo's softmax(x * scale).
const Distribution kSoftmaxX{-64.0, 64.0, 7, 100.0, kSoftmaxScale};
const Distribution kLayernormX{-8.0, -4.0, 5, 3.0};  // row means from -6 to +6
const Distribution kLayernormW{0.5, 1.5};
const Distribution kLayernormB{-1.0, 1.0};
const Distribution kGemmIn{-1.0, 1.0};

int64_t product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// ---- oneDNN ------------------------------------------------------------------

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::desc row_major(const Shape& shape) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return {dims, dnnl::memory::data_type::f32, strides};
}

// softmax over the last dim, forward inference, src and dst apart.
class Softmax final : public Prepared {
 public:
  Softmax(const Shape& shape, uint64_t seed)
      : x(static_cast<size_t>(product(shape))), y(x.size()), stream_(cpu_engine()) {
    fill(x, shape.back(), kSoftmaxX, seed, 0);
    const auto md = row_major(shape);
    const dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::softmax_accurate, md, md,
                                           static_cast<int>(shape.size()) - 1);
    pd_ = dnnl::softmax_v2_forward::primitive_desc(d, cpu_engine());
    prim_ = dnnl::softmax_v2_forward(pd_);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(md, cpu_engine(), x.data())},
             {DNNL_ARG_DST, dnnl::memory(md, cpu_engine(), y.data())}};
  }
  void call() override {
    prim_.execute(stream_, args_);
    stream_.wait();
  }
  std::string impl() const override { return pd_.impl_info_str(); }
  std::string note() const override {
    return "unscaled softmax(x') with x' = x*0.125 pre-multiplied in the input: kevo's "
           "scaled_softmax computes softmax(x*0.125), the peer skips that multiply; " +
           library_version(Op::softmax) + ", impl " + impl();
  }

  Buffer x, y;

 private:
  dnnl::stream stream_;
  dnnl::softmax_v2_forward::primitive_desc pd_;
  dnnl::softmax_v2_forward prim_;
  std::unordered_map<int, dnnl::memory> args_;
};

// Layer normalization over the last dim with gamma (scale) and beta (shift).
class Layernorm final : public Prepared {
 public:
  Layernorm(const Shape& shape, uint64_t seed)
      : x(static_cast<size_t>(product(shape))),
        w(static_cast<size_t>(shape.back())),
        b(w.size()),
        y(x.size()),
        stream_(cpu_engine()) {
    fill(x, shape.back(), kLayernormX, seed, 0);
    fill(w, shape.back(), kLayernormW, seed, 1);
    fill(b, shape.back(), kLayernormB, seed, 2);
    const auto md = row_major(shape);
    const dnnl::layer_normalization_forward::desc d(
        dnnl::prop_kind::forward_inference, md, kLayernormEps,
        dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
    pd_ = dnnl::layer_normalization_forward::primitive_desc(d, cpu_engine());
    prim_ = dnnl::layer_normalization_forward(pd_);
    const auto wmd = row_major({shape.back()});
    args_ = {{DNNL_ARG_SRC, dnnl::memory(md, cpu_engine(), x.data())},
             {DNNL_ARG_DST, dnnl::memory(md, cpu_engine(), y.data())},
             {DNNL_ARG_SCALE, dnnl::memory(wmd, cpu_engine(), w.data())},
             {DNNL_ARG_SHIFT, dnnl::memory(wmd, cpu_engine(), b.data())}};
    // Inference computes the row statistics itself; give them memory only if
    // this implementation asks for it.
    for (int arg : {DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}) {
      const auto smd = pd_.query_md(dnnl::query::exec_arg_md, arg);
      if (smd.get_size() > 0) args_.emplace(arg, dnnl::memory(smd, cpu_engine()));
    }
  }
  void call() override {
    prim_.execute(stream_, args_);
    stream_.wait();
  }
  std::string impl() const override { return pd_.impl_info_str(); }
  std::string note() const override {
    return "scale+shift (gamma, beta), eps 1e-5, same work as kevo's layernorm; " +
           library_version(Op::layernorm) + ", impl " + impl();
  }

  Buffer x, w, b, y;

 private:
  dnnl::stream stream_;
  dnnl::layer_normalization_forward::primitive_desc pd_;
  dnnl::layer_normalization_forward prim_;
  std::unordered_map<int, dnnl::memory> args_;
};

// ---- OpenBLAS ----------------------------------------------------------------

// C = A·B, row-major, alpha 1, beta 0; shape M x K x N.
class Sgemm final : public Prepared {
 public:
  Sgemm(const Shape& shape, uint64_t seed)
      : m(shape[0]),
        k(shape[1]),
        n(shape[2]),
        a(static_cast<size_t>(m * k)),
        bm(static_cast<size_t>(k * n)),
        c(static_cast<size_t>(m * n)) {
    fill(a, k, kGemmIn, seed, 0);
    fill(bm, n, kGemmIn, seed, 1);
  }
  void call() override {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0F, a.data(), static_cast<int>(k), bm.data(),
                static_cast<int>(n), 0.0F, c.data(), static_cast<int>(n));
  }
  // OpenBLAS picks its kernels by CPU model at load; a model it does not know
  // gets the SSE3 "Prescott" kernels unless OPENBLAS_CORETYPE names a core.
  std::string impl() const override {
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    return std::string("core ") + openblas_get_corename() +
           (forced ? std::string(" (OPENBLAS_CORETYPE=") + forced + ")" : " (detected)");
  }
  std::string note() const override {
    return "C = A*B row-major, alpha 1, beta 0, same work as kevo's gemm; " +
           library_version(Op::sgemm) + ", " + impl();
  }

  int64_t m, k, n;
  Buffer a, bm, c;
};

// ---- checks --------------------------------------------------------------------

// |got - want| <= atol + rtol * |want| over all elements, as kevo's "tol:".
struct Compare {
  double max_abs = 0;
  int64_t mismatches = 0;
  int64_t first = -1;
};
Compare compare(const float* got, const std::vector<double>& want, double atol, double rtol) {
  Compare c;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    c.max_abs = std::max(c.max_abs, std::isnan(err) ? INFINITY : err);
    if (!(err <= atol + rtol * std::fabs(want[i]))) {
      if (c.mismatches++ == 0) c.first = static_cast<int64_t>(i);
    }
  }
  return c;
}

void add_line(VerifyReport& r, bool ok, const std::string& what, const Prepared& p) {
  r.ok = r.ok && ok;
  r.lines.push_back(std::string(ok ? "ok    " : "FAIL  ") + what + " [" + p.impl() + "]");
}

std::string cmp_line(const char* what, const Shape& shape, const Compare& c, double atol,
                     double rtol) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s: max abs err %.3g (tol %g + %g*|ref|), %lld mismatches",
                what, shape_str(shape).c_str(), c.max_abs, atol, rtol,
                static_cast<long long>(c.mismatches));
  std::string s = buf;
  if (c.first >= 0) s += ", first at flat index " + std::to_string(c.first);
  return s;
}

void verify_softmax(VerifyReport& r) {
  constexpr double kAtol = 1e-7, kRtol = 1e-4;  // kevo's f32 tolerance for scaled_softmax
  constexpr double kSumTol = 1e-5;
  for (const Shape& shape : {Shape{7, 1003}, Shape{3, 2, 17}, Shape{64, 256}}) {
    Softmax s(shape, 1);
    std::fill(s.y.data(), s.y.data() + s.y.size(), NAN);
    s.call();
    const int64_t n = shape.back(), rows = product(shape) / n;
    std::vector<double> want(s.x.size());
    double worst_sum = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const float* x = s.x.data() + i * n;
      double mx = -INFINITY, sum = 0, got_sum = 0;
      for (int64_t j = 0; j < n; ++j) mx = std::max(mx, static_cast<double>(x[j]));
      for (int64_t j = 0; j < n; ++j) sum += (want[i * n + j] = std::exp(x[j] - mx));
      for (int64_t j = 0; j < n; ++j) want[i * n + j] /= sum;
      for (int64_t j = 0; j < n; ++j) got_sum += s.y[i * n + j];
      const double dev = std::fabs(got_sum - 1.0);
      worst_sum = std::max(worst_sum, std::isnan(dev) ? INFINITY : dev);
    }
    const Compare c = compare(s.y.data(), want, kAtol, kRtol);
    add_line(r, c.mismatches == 0, cmp_line("softmax vs fp64 exp/sum", shape, c, kAtol, kRtol), s);
    char buf[160];
    std::snprintf(buf, sizeof buf, "softmax row sums %s: max |sum - 1| %.3g (tol %g)",
                  shape_str(shape).c_str(), worst_sum, kSumTol);
    add_line(r, worst_sum <= kSumTol, buf, s);
  }
}

void verify_layernorm(VerifyReport& r) {
  constexpr double kAtol = 1e-6, kRtol = 1e-5;  // kevo's f32 tolerance for the norms
  constexpr double kMomentTol = 1e-5;
  for (const Shape& shape : {Shape{7, 1003}, Shape{5, 4096}, Shape{130, 61}}) {
    const int64_t rows = shape[0], n = shape[1];
    Layernorm ln(shape, 1);

    // Without gamma/beta each output row must have mean 0 and variance
    // var / (var + eps), var being the input row's.
    std::vector<float> w(ln.w.data(), ln.w.data() + n), b(ln.b.data(), ln.b.data() + n);
    std::fill(ln.w.data(), ln.w.data() + n, 1.0F);
    std::fill(ln.b.data(), ln.b.data() + n, 0.0F);
    std::fill(ln.y.data(), ln.y.data() + ln.y.size(), NAN);
    ln.call();
    double worst_mean = 0, worst_var = 0;
    std::vector<double> mean(rows), rstd(rows);
    for (int64_t i = 0; i < rows; ++i) {
      const float* x = ln.x.data() + i * n;
      const float* y = ln.y.data() + i * n;
      double m = 0, v = 0, ym = 0, yv = 0;
      for (int64_t j = 0; j < n; ++j) m += x[j];
      m /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) v += (x[j] - m) * (x[j] - m);
      v /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) ym += y[j];
      ym /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j) yv += (y[j] - ym) * (y[j] - ym);
      yv /= static_cast<double>(n);
      mean[i] = m;
      rstd[i] = 1.0 / std::sqrt(v + kLayernormEps);
      const double dm = std::fabs(ym), dv = std::fabs(yv - v / (v + kLayernormEps));
      worst_mean = std::max(worst_mean, std::isnan(dm) ? INFINITY : dm);
      worst_var = std::max(worst_var, std::isnan(dv) ? INFINITY : dv);
    }
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "layernorm moments %s (gamma 1, beta 0): max |mean| %.3g, max |var - "
                  "var/(var+eps)| %.3g (tol %g)",
                  shape_str(shape).c_str(), worst_mean, worst_var, kMomentTol);
    add_line(r, worst_mean <= kMomentTol && worst_var <= kMomentTol, buf, ln);

    // With gamma/beta, against the fp64 formula.
    std::copy(w.begin(), w.end(), ln.w.data());
    std::copy(b.begin(), b.end(), ln.b.data());
    std::fill(ln.y.data(), ln.y.data() + ln.y.size(), NAN);
    ln.call();
    std::vector<double> want(ln.x.size());
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j)
        want[i * n + j] = (ln.x[i * n + j] - mean[i]) * rstd[i] * w[j] + b[j];
    const Compare c = compare(ln.y.data(), want, kAtol, kRtol);
    add_line(r, c.mismatches == 0, cmp_line("layernorm vs fp64", shape, c, kAtol, kRtol), ln);
  }
}

void verify_sgemm(VerifyReport& r) {
  for (const Shape& shape :
       {Shape{7, 129, 1003}, Shape{130, 61, 67}, Shape{1, 1, 1}, Shape{256, 256, 256}}) {
    Sgemm g(shape, 1);
    std::fill(g.c.data(), g.c.data() + g.c.size(), NAN);
    g.call();
    std::vector<double> want(g.c.size(), 0.0);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t p = 0; p < g.k; ++p)
        for (int64_t j = 0; j < g.n; ++j)
          want[i * g.n + j] += static_cast<double>(g.a[i * g.k + p]) * g.bm[p * g.n + j];
    // kevo's f32 gemm tolerance: K terms of size <= 1 lose about K * 2^-24.
    const double atol = 5e-7 * static_cast<double>(g.k), rtol = 1e-5;
    const Compare c = compare(g.c.data(), want, atol, rtol);
    add_line(r, c.mismatches == 0, cmp_line("sgemm vs naive fp64 (MxKxN)", shape, c, atol, rtol),
             g);
  }
}

}  // namespace

const std::vector<OpInfo>& all_ops() {
  static const std::vector<OpInfo> ops = {
      {Op::softmax, "softmax", "onednn", "[..., N], e.g. 4096x4096", {{4096, 4096}, {65536, 256}}},
      {Op::layernorm, "layernorm", "onednn", "MxN", {{4096, 4096}}},
      {Op::sgemm, "sgemm", "openblas", "MxKxN, or N for NxNxN", {{1024, 1024, 1024}}},
  };
  return ops;
}

const OpInfo& info(Op op) {
  for (const auto& i : all_ops())
    if (i.op == op) return i;
  std::abort();  // every Op is in the table
}

std::optional<Op> parse_op(std::string_view name) {
  for (const auto& i : all_ops())
    if (name == i.name) return i.op;
  return std::nullopt;
}

std::string shape_error(Op op, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 1) return "dimensions must be positive";
  if (product(shape) > (int64_t{1} << 31)) return "more than 2^31 elements";
  switch (op) {
    case Op::softmax:
      if (shape.empty() || shape.size() > 6) return "needs 1 to 6 dims";
      return "";
    case Op::layernorm:
      if (shape.size() != 2) return "needs 2 dims";
      return "";
    case Op::sgemm:
      if (shape.size() != 1 && shape.size() != 3) return "needs 3 dims or 1";
      return "";
  }
  return "unknown op";
}

Shape canonical_shape(Op op, const Shape& shape) {
  if (op == Op::sgemm && shape.size() == 1) return {shape[0], shape[0], shape[0]};
  return shape;
}

double call_bytes(Op op, const Shape& s) {
  const double elems = static_cast<double>(product(s));
  switch (op) {
    case Op::softmax:
      return 2 * 4 * elems;
    case Op::layernorm:
      return 2 * 4 * elems + 2 * 4 * static_cast<double>(s.back());
    case Op::sgemm:
      return 4.0 * static_cast<double>(s[0] * s[1] + s[1] * s[2] + s[0] * s[2]);
  }
  return 0;
}

double call_flops(Op op, const Shape& s) {
  return op == Op::sgemm ? 2.0 * static_cast<double>(s[0]) * static_cast<double>(s[1]) *
                               static_cast<double>(s[2])
                         : 0.0;
}

std::unique_ptr<Prepared> prepare(Op op, const Shape& shape, uint64_t seed) {
  switch (op) {
    case Op::softmax:
      return std::make_unique<Softmax>(shape, seed);
    case Op::layernorm:
      return std::make_unique<Layernorm>(shape, seed);
    case Op::sgemm:
      return std::make_unique<Sgemm>(shape, seed);
  }
  return nullptr;
}

VerifyReport verify(Op op) {
  VerifyReport r;
  switch (op) {
    case Op::softmax:
      verify_softmax(r);
      break;
    case Op::layernorm:
      verify_layernorm(r);
      break;
    case Op::sgemm:
      verify_sgemm(r);
      break;
  }
  return r;
}

std::string shape_str(const Shape& shape) {
  std::string out;
  for (int64_t d : shape) {
    if (!out.empty()) out += 'x';
    out += std::to_string(d);
  }
  return out;
}

std::string library_version(Op op) {
  if (op == Op::sgemm) {
    std::string config = openblas_get_config();
    while (!config.empty() && config.back() == ' ') config.pop_back();
    return config;
  }
  const dnnl_version_t* v = dnnl_version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "other runtime";
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " (" + runtime + ")";
}

}  // namespace peers
