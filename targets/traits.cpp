#include "targets/traits.h"

namespace kevo {

namespace {

// CUDA: work on a stream of its own escapes the timing (the runner measures
// the stream it passes and every blocking stream); the rest changes the
// device for whoever runs next.
const std::vector<BannedUse> kBannedCuda = {
    {"makes streams of its own (launch on the stream kevo passes)",
     "cudaStreamCreate|cudaStreamCreateWithFlags|cudaStreamCreateWithPriority|cudaStreamPerThread"},
    {"changes or resets the device",
     "cudaDeviceReset|cudaSetDevice|cudaDeviceSetLimit|cudaDeviceSetCacheConfig|cudaSetDeviceFlags|"
     "cudaCtxResetPersistingL2Cache|cudaDeviceSetMemPool"},
    {"uses managed or host-mapped memory",
     "cudaMallocManaged|cudaHostAlloc|cudaMallocHost|cudaHostRegister"},
    {"creates multicast objects", "cuMulticastCreate"},
};

// How knobs reach a Python candidate (triton, trainium): the first lines of
// their llm_knob_syntax.
#define KEVO_PYTHON_KNOBS                                                                  \
  "Knobs are optional compile-time parameters declared in comments; kevo sets each as a " \
  "module global (an int) before the module runs:\n"                                      \
  "  # @kevo knob NAME DEFAULT {V1, V2, ...}\n"                                            \
  "  # @kevo require EXPRESSION   (over knob names: + - * / % comparisons && || !)\n"

}  // namespace

const std::vector<TargetTraits>& all_target_traits() {
  static const std::vector<TargetTraits> traits = {
      {"cpu",
       "this machine's CPU: C/C++ kernels built with the host compiler, run in a sandboxed child",
       "kevo_kernel",
       "function",
       false,
       {{"c", ".c"}, {"c++", ".cpp"}},
       {},
       "\n- Plain C (or C++ with extern \"C\" entry point); threads only as the seed kernels use "
       "them (the THREADS knob, pthreads).",
       "",
       "",
       "",
       "",
       true,
       true,
       false},
      {"cuda",
       "NVIDIA GPUs: CUDA kernels built with nvcc, one kevo-cuda-runner per GPU",
       "kevo_launch",
       "global",
       true,
       {{"cuda", ".cu"}},
       kBannedCuda,
       "\n- Launch on the stream kevo passes; make no streams, no device resets or limits, no "
       "managed or host-mapped memory. bf16 I/O, fp32 math.",
       "ptxas.spill_store_bytes",
       "ptxas",
       "ptxas.registers",
       "CUDA",
       true,
       false,
       true},
      {"triton",
       "NVIDIA GPUs: Triton kernels in Python, one kevo-triton-runner per GPU (torch and Triton "
       "from KEVO_PYTHON)",
       "kevo_launch",
       "",
       false,
       {{"triton", ".py"}},
       {},
       "\n- Triton in Python: @triton.jit kernels and def kevo_launch(inputs, outputs, scalars) "
       "over torch tensors (kevo's tensor order), launched on torch's current stream. Import only "
       "torch, triton, triton.language and math. Knobs are module globals (pass them to the "
       "kernel as tl.constexpr, num_warps=, num_stages=). No triton.autotune: kevo is the tuner. "
       "No private (_name) or dunder attributes, no setattr/getattr/exec/eval/open, no assignments "
       "to torch's or triton's attributes. bf16 I/O, fp32 math.",
       "",
       "",
       "",
       "Triton",
       true,
       false,
       false,
       "python",
       KEVO_PYTHON_KNOBS
       "Declare only knobs your code uses; pass them to the kernels as tl.constexpr arguments or "
       "as the launch's num_warps= / num_stages=. Keep every other constant in the code.",
       "targets/abi/kevo_triton.py",
       R"(^(torch|triton|math|triton\.language(\.[A-Za-z_][A-Za-z0-9_]*)*|triton\.tools\.tensor_descriptor)$)",
       "torch, triton, triton.language and math"},
      {"trainium",
       "AWS Trainium / Inferentia: NKI 0.4 kernels in Python, not verified on Trainium; "
       "KEVO_NKI_MODEL=1 runs them in kevo's NumPy model of NKI",
       "kevo_nki",
       "",
       false,
       {{"nki", ".py"}},
       {},
       "\n- NKI 0.4 in Python: import nki, nki.isa as nisa, nki.language as nl (and math); "
       "@nki.jit def kevo_nki(<inputs>, <scalars>) returns its output(s) as "
       "nl.ndarray(shape, dtype, buffer=nl.shared_hbm); tensors of rank 3 or more arrive as "
       "[rows, last]. Engines compute on SBUF/PSUM tiles of at most 128 partitions; "
       "nisa.dma_copy moves HBM <-> SBUF; nisa.nc_matmul writes PSUM.",
       "",
       "",
       "",
       "",
       false,
       false,
       false,
       "python",
       KEVO_PYTHON_KNOBS
       "Declare only knobs your code uses (tile sizes, engine choices).",
       "targets/abi/kevo_nki.py",
       R"(^(nki|nki\.language|nki\.isa|math)$)",
       "nki, nki.language, nki.isa and math"},
  };
  return traits;
}

const TargetTraits* find_target_traits(std::string_view name) {
  for (const TargetTraits& t : all_target_traits())
    if (name == t.name) return &t;
  return nullptr;
}

std::string_view default_target() {
  return all_target_traits().front().name;
}

const TargetTraits* traits_of_language(std::string_view language) {
  for (const TargetTraits& t : all_target_traits())
    for (const TargetLanguage& l : t.languages)
      if (language == l.name) return &t;
  return nullptr;
}

std::string source_extension(std::string_view language) {
  for (const TargetTraits& t : all_target_traits())
    for (const TargetLanguage& l : t.languages)
      if (language == l.name) return l.extension;
  return ".cpp";
}

}  // namespace kevo
