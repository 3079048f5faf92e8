// The engine's use of the LLM synthesizer: in each batch it asks for new
// kernels (improvements of good candidates, repairs of the LLM's own failed
// ones), turns each reply into a family of its own, and proposes that
// family's default point beside the strategy's proposals. The strategy is
// told the results like any other, so it can tune the new family's knobs.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/kernel_headers.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/store.h"
#include "search/engine.h"
#include "search/timed.h"
#include "targets/traits.h"
#include "eval/roofline.h"

namespace kevo {

namespace {

constexpr const char* kLlmOrigin = "llm:";

std::string first_line(const std::string& s) {
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

void Engine::set_llm(LlmSynthesizer* llm) {
  llm_ = llm;
  llm_rng_.seed(config_.seed * 7919 + 17);
}

LlmTaskInfo Engine::llm_task_info() const {
  LlmTaskInfo t;
  const Operator& op = *task_.op;
  t.op = std::string(op.name());
  t.formula = std::string(op.formula());
  std::vector<std::string> tensors, scalars, shapes;
  for (size_t i = 0; i < op.tensors().size(); ++i) {
    const TensorDecl& d = op.tensor(i);
    // A tensor whose dtype is not the task's says so.
    const bool own = i < task_.dtypes.size() && task_.dtypes[i] != task_.dtype;
    tensors.push_back(fmt::format("{} {} {}{}", d.is_output ? "out" : "in", d.name, d.doc,
                                  own ? " " + std::string(dtype_name(task_.dtypes[i])) : ""));
    shapes.push_back(fmt::format("{} {}", d.name, shape_str(task_.main.shapes.at(i))));
  }
  for (size_t i = 0; i < op.scalars().size(); ++i)
    scalars.push_back(fmt::format("{} = {}", op.scalars()[i].name,
                                  i < task_.scalars.size() ? task_.scalars[i] : 0.0));
  t.tensors = fmt::format("{}", fmt::join(tensors, "; "));
  t.scalars = fmt::format("{}", fmt::join(scalars, ", "));
  t.shapes = fmt::format("{}", fmt::join(shapes, ", "));
  t.dtype = std::string(dtype_name(task_.dtype));
  t.compare = task_.compare_str();
  t.target = task_.target;
  t.language = space_.size_families() ? space_.family(0).language : "c";
  const TargetTraits* traits = find_target_traits(task_.target);
  t.entry_point = traits ? traits->entry_point : all_target_traits().front().entry_point;
  // The contract the kernel implements: the target's own file where it has
  // one (Triton's Python launch function), else the C ABI header.
  t.abi = traits && traits->llm_contract ? read_text_file(kevo_home() / traits->llm_contract)
                                         : read_text_file(host_.abi_header);
  // kevo's kernel headers for the target: their interfaces, not their bodies;
  // in full for the headers this task's families include, a line for the rest.
  std::set<std::string> used;
  for (size_t i = 0; i < space_.size_families(); ++i)
    for (const auto& name : kernel_headers_named(space_.family(i).text)) used.insert(name);
  if (std::string headers = kernel_header_interfaces(t.language, &used); !headers.empty())
    t.abi += "\n\n/* kevo's kernel headers: a kernel may include them by name; kevo inlines "
             "them. */\n" + headers;
  t.hardware = llm_hardware_;
  t.features = llm_features_;
  if (!task_.entry.empty()) {
    // A plain kernel: kevo writes the ABI entry point around the named function.
    const KernelEntry& e = task_.entry;
    t.entry_point = e.function;
    t.extra_rules = fmt::format(
        "\n- This task calls a plain {} `{}` with the arguments ({}) in that order (tensors as "
        "pointers of each tensor's dtype, inputs const; sizes as int64_t; scalars as double; "
        "knobs as their values). kevo writes the entry point around it{}: define `{}`, not the ABI "
        "entry point, and keep its parameters.",
        e.kind == "global" ? "CUDA __global__ function" : "C function", e.function,
        fmt::join(e.args, ", "),
        e.kind == "global" ? fmt::format(" and launches it with grid ({}) and block ({})",
                                         fmt::join(e.grid, ", "), fmt::join(e.block, ", "))
                           : "",
        e.function);
  }
  // The best few and a few others, so the model sees what was tried.
  std::vector<const Observation*> ok;
  for (const auto& o : history_)
    if (o.ok() && !o.reused) ok.push_back(&o);
  std::sort(ok.begin(), ok.end(), [](auto* a, auto* b) { return a->seconds < b->seconds; });
  std::vector<std::string> lines;
  for (size_t i = 0; i < ok.size() && lines.size() < 6; i += (i < 3 ? 1 : std::max<size_t>(1, ok.size() / 4))) {
    const Observation& o = *ok[i];
    lines.push_back(fmt::format("{} {}: {}, {:.0f}% of the roof ({})",
                                space_.family(o.point.family).name, knobs_to_string(o.point.knobs),
                                format_seconds(o.seconds), 100 * o.roof_fraction, o.synthesizer));
  }
  t.others = fmt::format("{}", fmt::join(lines, "\n"));
  return t;
}

LlmAsk Engine::llm_ask(const Observation& o, LlmAsk::Mode mode) const {
  LlmAsk a;
  a.mode = mode;
  a.parent = o.candidate;
  const Family& f = space_.family(o.point.family);
  a.parent_label = fmt::format("{} {}", f.name, knobs_to_string(o.point.knobs));
  // The family's own text, knob declarations included, so that edits apply
  // to it and a new kernel can keep (or change) its knobs.
  // kevo's kernel headers it includes are shown as their include lines (the
  // task's contract lists their interfaces), not their bodies.
  a.parent_source = fold_kernel_headers(f.text);
  a.bound = o.bound;
  a.bottleneck = o.bottleneck;
  // What the store knows of its evaluation: the verdict, the diagnosis, the
  // profile and, for a failure, the compiler's or the checker's words.
  const std::optional<int64_t> eval = store_.result_evaluation(o.candidate);
  const std::optional<EvalResult> e = eval ? store_.evaluation(*eval) : std::nullopt;
  if (e) {
    const std::string status(status_name(e->status));
    a.diagnosis = e->diagnosis ? e->diagnosis->why : std::string();
    if (!o.bottleneck.empty()) a.diagnosis += fmt::format(" Profile bottleneck: {}.", o.bottleneck);
    a.parent_result = o.ok() ? fmt::format("ok: {}, {:.0f}% of the roof", format_seconds(o.seconds),
                                           100 * o.roof_fraction)
                             : fmt::format("{}: {}", status, e->detail);
    if (!o.ok()) {
      a.error = e->detail;
      // (A Triton compile error's detail is its whole log: said once.)
      if (!e->compile_log.empty() && e->compile_log != e->detail) a.error += "\n" + e->compile_log;
      if (!e->stderr_text.empty()) a.error += "\n" + e->stderr_text;
    }
    std::vector<ProfileRow> prof = store_.profile(*eval);
    std::stable_sort(prof.begin(), prof.end(), [](const ProfileRow& x, const ProfileRow& y) {
      return x.source_line != y.source_line ? x.source_line < y.source_line : x.metric < y.metric;
    });
    std::vector<std::pair<double, std::string>> hot;
    for (const ProfileRow& p : prof) {
      const std::string& metric = p.metric;
      const std::string& unit = p.unit;
      const double* v = p.value ? &*p.value : nullptr;
      const int64_t* line = p.source_line ? &p.source_line : nullptr;
      // The machine's state says how the time was taken, and kevo's own costs
      // (eval.*: the checks; profile.*: the profiler's run) what measuring it
      // took, not what the kernel does; they would also make the prompt
      // differ between two identical runs.
      if (!v || is_measuring_metric(metric) || metric.rfind("profile.", 0) == 0)
        continue;
      if (line && *line > 0) {
        // The line's text from the family source (line numbers are the file's).
        auto code = [&] {
          size_t pos = 0;
          for (int64_t l = 1; l < *line && pos != std::string::npos; ++l) {
            pos = f.text.find('\n', pos);
            if (pos != std::string::npos) ++pos;
          }
          return pos == std::string::npos ? std::string() : first_line(f.text.substr(pos));
        };
        // Ranked: stall shares (0..1) by their share; on the CPU, the loops
        // the compiler did not vectorize, then those it did.
        if (metric == "ncu.line.stall_share")
          hot.push_back({*v, fmt::format("line {}: {:.0f}% of the stall samples: {}", *line,
                                         100 * *v, code())});
        else if (metric == "cc.vec.line.missed")
          hot.push_back({-1, fmt::format("line {}: a loop the compiler did not vectorize: {}", *line,
                                         code())});
        else if (metric == "cc.vec.line.vectorized")
          hot.push_back({-2, fmt::format("line {}: a loop the compiler vectorized{}: {}", *line,
                                         *v <= 0           ? ""
                                         : unit == "bytes" ? fmt::format(" ({:.0f}-byte vectors)", *v)
                                                           : fmt::format(" ({:.0f} lanes)", *v),
                                         code())});
      } else if (a.profile.size() < 40) {
        a.profile.push_back(fmt::format("{} = {:.4g} {}", metric, *v, unit));
      }
    }
    std::stable_sort(hot.begin(), hot.end(), [](auto& x, auto& y) { return x.first > y.first; });
    for (size_t i = 0; i < hot.size() && i < 5; ++i) a.hot_lines.push_back(hot[i].second);
    // Without a profiler's figures the prompt says why rather than leaving a
    // blank: the compiler's report (cpu) or ncu's (cuda) is the profile.
    const bool profiled = std::any_of(prof.begin(), prof.end(), [](const ProfileRow& p) {
      return p.metric.rfind("ncu.", 0) == 0 || p.metric.rfind("cc.vec.", 0) == 0;
    });
    const std::string why = e->diagnosis ? e->diagnosis->why : std::string();
    const size_t at = why.find("not profiled: ");
    if (!o.ok())
      a.profile.push_back("not profiled: it was not measured correct");
    else if (at != std::string::npos)
      a.profile.push_back(why.substr(at, why.find(';', at) - at));
    else if (!profiled && config_.profile_top <= 0)
      a.profile.push_back("not profiled: this run profiles nothing (search.profile_top is 0)");
    else if (!profiled)
      a.profile.push_back(fmt::format(
          "not profiled: kevo profiles the best {} candidates of a run as they are found, and "
          "this one was not among them",
          config_.profile_top));
    // The CPU's counters were asked for, but the machine gave no hardware ones.
    if (o.ok() && std::any_of(prof.begin(), prof.end(), [](const ProfileRow& p) {
          return p.metric == "cpu.hardware_events" && p.value && *p.value == 0;
        }))
      a.profile.push_back("cpu hardware counters (cycles, instructions, cache misses): none were "
                          "read for this measurement (the machine gives kevo none)");
  }
  if (auto c = llm_chain_of_.find(o.candidate); c != llm_chain_of_.end())
    a.failures = llm_chains_.at(c->second).failures;
  return a;
}

int Engine::llm_family(const std::string& source, const std::string& model,
                       const std::string& language, std::string& why_not) {
  const std::string name = "llm-" + sha256_hex(source).substr(0, 10);
  if (int f = space_.find_family(name); f >= 0) return f;
  Family fam;
  try {
    // Like the task's other families, it gets the config's tune_params.
    fam = make_family(name, std::string(kLlmOrigin) + model, source, language, task_.config_knobs);
  } catch (const UserError& e) {
    why_not = fmt::format("its knob declarations cannot be read: {}", e.what());
    return -1;
  }
  // The family joins the space enumerated in full: knobs that span more
  // points than any seed family does (the largest, ~9 million) would hang
  // the search or exhaust memory.
  constexpr double kMaxLlmFamilyPoints = 1 << 24;
  double points = 1;
  for (const KnobDecl& d : fam.space.knobs()) points *= static_cast<double>(d.values.size());
  if (points > kMaxLlmFamilyPoints) {
    why_not = fmt::format("its knobs span {:.3g} points; a kernel the model writes may span at most {}",
                          points, static_cast<int64_t>(kMaxLlmFamilyPoints));
    return -1;
  }
  {
    Timed t(stats_.store_s);
    store_.put_source(fam.text, fam.origin.string(), fam.language);
  }
  defaults_.push_back(fam.space.defaults());
  return space_.add_family(std::move(fam));
}

std::optional<Engine::LlmRequests> Engine::llm_start() {
  const llm::LlmConfig& cfg = llm_->config();
  if (llm_->exhausted()) return std::nullopt;
  LlmRequests requests;
  std::vector<LlmAsk>& asks = requests.asks;
  std::vector<int64_t>& chains = requests.chains;
  while (!llm_repairs_.empty() && asks.size() < static_cast<size_t>(cfg.per_batch)) {
    const int64_t cand = llm_repairs_.front();
    llm_repairs_.pop_front();
    auto o = by_candidate_.find(cand);
    if (o == by_candidate_.end()) continue;
    const int64_t chain = llm_chain_of_.at(cand);
    LlmChain& c = llm_chains_[chain];
    ++c.attempts;
    asks.push_back(llm_ask(o->second, c.failed_in_row >= cfg.simplify_after ? LlmAsk::Mode::simplify
                                                                            : LlmAsk::Mode::repair));
    chains.push_back(chain);
  }
  std::vector<const Observation*> ok;
  for (const auto& o : history_)
    if (o.ok()) ok.push_back(&o);
  std::sort(ok.begin(), ok.end(), [](auto* a, auto* b) {
    return a->seconds != b->seconds ? a->seconds < b->seconds : a->candidate < b->candidate;
  });
  for (size_t k = 0; asks.size() < static_cast<size_t>(cfg.per_batch) && !ok.empty(); ++k) {
    // Alternately one of the best three and any correct candidate (diversity).
    const size_t range = k % 2 == 0 ? std::min<size_t>(3, ok.size()) : ok.size();
    const Observation* parent = ok[std::uniform_int_distribution<size_t>(0, range - 1)(llm_rng_)];
    asks.push_back(llm_ask(*parent, LlmAsk::Mode::improve));
    chains.push_back(0);
  }
  if (asks.empty()) return std::nullopt;
  {
    Timed t(stats_.searcher_s);
    requests.flight = llm_->start(llm_task_info(), asks, llm_rng_);
  }
  return requests;
}

std::vector<Proposal> Engine::llm_proposals(LlmRequests& requests,
                                            std::map<std::string, LlmPending>& made) {
  const llm::LlmConfig& cfg = llm_->config();
  const std::vector<LlmAsk>& asks = requests.asks;
  const std::vector<int64_t>& chains = requests.chains;
  if (on_stage) on_stage(fmt::format("waiting for the LLM's {} kernels", asks.size()));
  std::vector<LlmOutcome> outcomes;
  {
    Timed t(stats_.searcher_s);
    outcomes = llm_->finish(*requests.flight);
  }
  std::vector<Proposal> out;
  for (size_t i = 0; i < asks.size(); ++i) {
    const LlmOutcome& r = outcomes[i];
    const LlmAsk& ask = asks[i];
    std::string why_not = r.why_not;
    int fam = -1;
    if (!r.source.empty()) {
      const Observation& parent = by_candidate_.at(ask.parent);
      fam = llm_family(r.source, r.model, space_.family(parent.point.family).language, why_not);
    }
    std::optional<Point> point;
    if (fam >= 0) {
      point = space_.seed(fam);
      if (!space_.valid(*point)) point = random_point(space_, fam, llm_rng_);
      if (!point) why_not = "its knob constraints admit no point";
    }
    if (!point) {
      ++stats_.llm_unusable;
      log_warn("llm ({}): {}", r.model, why_not);
      if (chains[i]) {  // a failed repair attempt: try again while attempts remain
        LlmChain& c = llm_chains_[chains[i]];
        c.failures.push_back(fmt::format("attempt {}: {}", c.attempts + 1, first_line(why_not)));
        ++c.failed_in_row;
        if (c.attempts < cfg.repair_attempts) llm_repairs_.push_back(ask.parent);
      }
      continue;
    }
    ++stats_.llm_sources;
    const char* kind = ask.mode == LlmAsk::Mode::improve  ? "llm"
                       : ask.mode == LlmAsk::Mode::repair ? "llm-repair"
                                                          : "llm-simplify";
    made[space_.key(*point)] = {r.call, chains[i]};
    out.push_back({*point, {ask.parent}, fmt::format("{}:{}", kind, r.model), 0});
  }
  return out;
}

void Engine::llm_after(const std::map<std::string, LlmPending>& made,
                       const std::vector<Observation>& told) {
  const llm::LlmConfig& cfg = llm_->config();
  for (const auto& [key, pending] : made) {
    auto cand = known_.find(key);
    if (cand == known_.end()) continue;
    llm_->link(pending.call, cand->second);
    if (!llm_chain_of_.count(cand->second))
      llm_chain_of_[cand->second] = pending.chain ? pending.chain : cand->second;
  }
  for (const Observation& o : told) {
    auto chain = llm_chain_of_.find(o.candidate);
    if (chain == llm_chain_of_.end() || o.duplicate_of) continue;
    if (o.synthesizer.rfind("llm", 0) != 0) continue;  // the strategy's moves in an LLM family
    LlmChain& c = llm_chains_[chain->second];
    if (o.ok()) {
      c.failed_in_row = 0;
      continue;
    }
    c.failures.push_back(fmt::format("attempt {}: {}", c.attempts + 1, status_name(o.status)));
    if (o.synthesizer.rfind("llm:", 0) != 0) ++c.failed_in_row;  // a failed repair
    if (c.attempts < cfg.repair_attempts) llm_repairs_.push_back(o.candidate);
  }
}

// A resumed run gets back the families its LLM wrote (their sources are in
// the store), its chains and the repairs left to do.
void Engine::llm_load_families() {
  for (const SourceRecord& s : store_.sources_of_run(run_)) {
    if (s.origin.rfind(kLlmOrigin, 0) != 0) continue;
    const std::string& text = s.text;
    const std::string& origin = s.origin;
    std::string language = s.language;
    if (language.empty()) language = "c";
    std::string why_not;
    if (llm_family(text, origin.substr(std::string(kLlmOrigin).size()), language, why_not) < 0)
      log_warn("a kernel the LLM wrote in run {} cannot be searched again: {}", run_, why_not);
  }
}

void Engine::llm_resume(const std::vector<Observation>& told) {
  const llm::LlmConfig& cfg = llm_->config();
  std::set<int64_t> repaired;  // candidates a repair was asked of
  std::vector<const Observation*> failed;
  for (const Observation& o : told) {
    if (o.synthesizer.rfind("llm", 0) != 0) continue;
    const int64_t parent = o.parents.empty() ? 0 : o.parents[0];
    const bool repair = o.synthesizer.rfind("llm:", 0) != 0;
    auto up = llm_chain_of_.find(parent);
    const int64_t chain = repair && up != llm_chain_of_.end() ? up->second : o.candidate;
    llm_chain_of_[o.candidate] = chain;
    LlmChain& c = llm_chains_[chain];
    if (repair) {
      ++c.attempts;
      repaired.insert(parent);
    }
    if (o.ok()) {
      c.failed_in_row = 0;
    } else {
      c.failures.push_back(fmt::format("attempt {}: {}", c.attempts + 1, status_name(o.status)));
      if (repair) ++c.failed_in_row;
      failed.push_back(&o);
    }
  }
  for (const Observation* o : failed)
    if (!repaired.count(o->candidate) && llm_chains_[llm_chain_of_[o->candidate]].attempts < cfg.repair_attempts)
      llm_repairs_.push_back(o->candidate);
}

}  // namespace kevo
