// kevo eval: one candidate through the whole cascade, its verdict printed and
// everything stored.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/knobs.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/space.h"
#include "core/store.h"
#include "core/task.h"
#include "eval/evaluator.h"
#include "eval/roofline.h"
#include "eval/roofs.h"

namespace kevo::cli {

namespace {

std::string tail_lines(const std::string& text, size_t n) {
  size_t pos = text.size();
  size_t count = 0;
  while (pos > 0 && count <= n) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
    ++count;
  }
  std::string t = text.substr(pos == 0 ? 0 : pos + 1);
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

void print_indented(const char* label, const std::string& text) {
  bool first = true;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    fmt::print("{:<10}{}\n", first ? label : "", text.substr(pos, eol - pos));
    first = false;
    pos = eol + 1;
  }
}

void print_result(const Task& task, const std::string& kernel, const KnobValues& knobs,
                  const EvalResult& r, int64_t run, int64_t candidate, int64_t evaluation,
                  const std::string& db) {
  fmt::print("{} {} {} on {}: {} {}\n", task.op->name(), timed_shapes_str(task),
             dtype_name(task.dtype), task.target, kernel, knobs_to_string(knobs));
  fmt::print("{:<10}{}{}\n", "verdict", status_name(r.status),
             r.detail.empty() ? "" : " — " + r.detail);
  if (!r.checks.empty()) {
    std::vector<std::string> passed;
    for (const auto& c : r.checks)
      if (c.passed) passed.push_back(c.label);
    double max_abs = 0, max_ulp = 0;
    for (const auto& c : r.checks) {
      max_abs = std::max(max_abs, c.max_abs_err);
      max_ulp = std::max(max_ulp, c.max_ulp);
    }
    fmt::print("{:<10}{} of {} passed; max abs err {:.3g}, max {:.0f} ulp (compared by {})\n",
               "checks", passed.size(), r.checks.size(), max_abs, max_ulp, task.compare_str());
  }
  if (r.timing) {
    const auto& t = *r.timing;
    fmt::print("{:<10}{}median {} (p20 {}, p80 {}; {} samples x {} call{}, {} warm-up calls)\n",
               "time", task.multi_shape() ? "weighted geometric mean of the shapes' medians: " : "", format_seconds(t.median_s), format_seconds(t.p20_s),
               format_seconds(t.p80_s), t.samples_s.size(), t.calls_per_sample,
               t.calls_per_sample > 1 ? "s" : "", t.warmup_calls);
  }
  for (const ShapeTime& st : shape_times(r.profile))
    if (st.index < task.timed.size())
      fmt::print("{:<10}{}: median {} (p20 {}, p80 {}), weight {:g}, {:.0f}% of its roof\n",
                 st.index == 0 ? "per shape" : "", shape_str(task.timed[st.index].shapes[0]),
                 format_seconds(st.median_s), format_seconds(st.p20_s), format_seconds(st.p80_s),
                 st.weight, st.roof_pct);
  if (r.diagnosis) print_indented("roofline", r.diagnosis->why);
  if (r.status == Status::compile_error && !r.compile_log.empty())
    print_indented("compiler", tail_lines(r.compile_log, 12));
  if (!r.stderr_text.empty()) print_indented("stderr", tail_lines(r.stderr_text, 8));
  if (!r.stdout_text.empty()) print_indented("stdout", tail_lines(r.stdout_text, 8));
  fmt::print("{:<10}compile {}, run {}\n", "cost",
             r.compile_cached ? std::string("cached") : format_seconds(r.compile_s),
             format_seconds(r.run_s));
  fmt::print("{:<10}evaluation {} (candidate {}, run {}) in {}\n", "stored", evaluation, candidate,
             run, db);
}

}  // namespace

int cmd_eval(const Argv& argv) {
  Args a("eval", "eval --task TASK KERNEL [--knob K=V]... [--json] [--db PATH]",
         "Compiles KERNEL with its knobs, checks it against the CPU reference on small ragged\n"
         "shapes and the task's shape, times it, re-checks it on fresh inputs, and diagnoses\n"
         "it against this machine's measured roof (calibrated on first use). Everything is\n"
         "stored. Exit status: 0 when the verdict is ok, 1 for any other verdict, 2 for bad\n"
         "input.",
         {{"--task", "TASK", "the task config (JSON), e.g. configs/cpu/softmax-4096.json"},
          {"--knob", "K=V", "set a knob (default: the kernel's declared defaults)", true},
          db_option(),
          json_option()},
         1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  auto task_path = a.value("--task");
  if (!task_path) throw UserError("kevo eval: --task TASK is required (see kevo eval --help)");
  Task task = load_task(*task_path);
  std::unique_ptr<Target> target = make_target(task.target);

  const std::filesystem::path kernel = a.positional()[0];
  CandidateSource src;
  src.origin = kernel;
  src.language = target->language_of(kernel);
  Family family = make_family(kernel.stem().string(), kernel, read_text_file(kernel),
                              src.language, task.config_knobs);
  src.text = family.text;  // kevo's kernel headers inlined, as a search stores it
  KnobSpace space = std::move(family.space);
  for (const auto& [name, values] : task.knob_restrictions)
    if (space.find(name)) space.restrict(name, values);
  std::vector<std::pair<std::string, int64_t>> overrides;
  for (const auto& k : a.values("--knob")) overrides.push_back(parse_knob_assignment(k));
  const KnobValues knobs = space.resolve(overrides);

  const std::string db = store_path(a);
  Store store(db);
  Roof roof = roof_for(store, *target, [](std::string_view line) { log_debug("{}", line); });

  ReferenceCache references(cache_dir() / "ref");
  CompileCache compiles(cache_dir());
  Evaluator evaluator(task, *target, roof, references, compiles);
  evaluator.remeasure_roof = [&](double bytes) {
    return remeasure(store, *target, bytes, [](std::string_view line) { log_debug("{}", line); });
  };

  nlohmann::json config = {{"kernel", kernel.string()}, {"knobs", knobs}};
  const int64_t run = store.begin_run("eval", task, config);
  const std::string hash = store.put_source(src.text, kernel.string(), src.language);
  const int64_t candidate =
      store.add_candidate(run, hash, knobs, kernel.stem().string(), "manual");
  EvalResult r;
  {
    StatusLine status;
    evaluator.on_stage = [&](std::string_view stage) { status.set(stage); };
    r = evaluator.evaluate(src, knobs);
  }
  const int64_t evaluation = store.add_evaluation(candidate, r);
  store.finish_run(run, "done");

  if (a.flag("--json")) {
    nlohmann::json j = {{"run_id", run},
                        {"candidate_id", candidate},
                        {"evaluation_id", evaluation},
                        {"task", task.resolved},
                        {"kernel", kernel.string()},
                        {"knobs", knobs},
                        {"result", r.to_json()}};
    fmt::print("{}\n", j.dump(2));
  } else {
    print_result(task, kernel.string(), knobs, r, run, candidate, evaluation, db);
  }
  return r.status == Status::ok ? 0 : 1;
}

}  // namespace kevo::cli
