#include "synth/llm_synthesizer.h"

#include <algorithm>
#include <filesystem>
#include <future>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/store.h"
#include "knowledge/knowledge_base.h"
#include "synth/llm/reply.h"
#include "targets/traits.h"

namespace kevo {

namespace {

const char* const kTemplates[] = {"system", "improve", "repair", "simplify"};

// Every placeholder a template may use.
const std::set<std::string> kPlaceholders = {
    "op",          "formula",       "tensors",   "scalars",   "shapes",     "dtype",
    "compare",     "target",        "language",  "entry_point", "abi",      "knob_syntax",
    "rules",       "knowledge",     "others",    "parent_label", "parent_result",
    "parent_source", "diagnosis",   "profile",   "hot_lines", "failures",   "error",
    "error_help",  "hardware"};

const char* const kKnobSyntax =
    "Knobs are optional compile-time parameters declared in comments and passed as -D defines:\n"
    "  // @kevo knob NAME DEFAULT {V1, V2, ...}\n"
    "  // @kevo require EXPRESSION   (over knob names: + - * / % comparisons && || !)\n"
    "Declare only knobs your code uses, and guard each with #ifndef NAME / #define NAME DEFAULT.";

// The knob syntax of the task's target (C's -D defines unless it says otherwise).
std::string knob_syntax_for(const std::string& target) {
  const TargetTraits* t = find_target_traits(target);
  return t && t->llm_knob_syntax ? t->llm_knob_syntax : kKnobSyntax;
}

// How sources of `language` are written ("c" or "python"), for reading replies.
std::string_view syntax_of(const std::string& language) {
  const TargetTraits* t = traits_of_language(language);
  return t ? t->syntax : "c";
}

std::string rules_for(const std::string& target) {
  const TargetTraits* t = find_target_traits(target);
  const bool python = t && std::string_view(t->syntax) == "python";
  std::string r =
      "- The kernel may only compute: no processes, files, network, environment, dlopen or raw "
      "system calls (such a kernel is refused before compiling).\n"
      "- Handle every shape the tensors declare, including row lengths that are not a multiple "
      "of your vector width (kevo checks small ragged shapes first).\n";
  r += python ? "- Return 0 on success; read sizes from the tensors' .shape (never assume the timed "
                "shape)."
              : "- Return 0 on success; read sizes from the tensors' shape[] and stride[].";
  if (t) r += t->llm_rules;
  return r;
}

std::string lines_or_none(const std::vector<std::string>& v) {
  if (v.empty()) return "(none)";
  std::string s;
  for (const auto& x : v) s += "- " + x + "\n";
  if (!s.empty()) s.pop_back();
  return s;
}

std::string or_none(const std::string& s) { return s.empty() ? "(none)" : s; }

// {{name}} -> value; a name outside kPlaceholders is an error naming the file.
std::string render(const std::string& tmpl, const std::map<std::string, std::string>& values,
                   const std::string& origin) {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    size_t open = tmpl.find("{{", i);
    if (open == std::string::npos) {
      out += tmpl.substr(i);
      break;
    }
    size_t close = tmpl.find("}}", open + 2);
    if (close == std::string::npos)
      throw UserError(fmt::format("{}: '{{{{' without '}}}}'", origin));
    out += tmpl.substr(i, open - i);
    std::string name = tmpl.substr(open + 2, close - open - 2);
    if (!kPlaceholders.count(name))
      throw UserError(fmt::format("{}: unknown placeholder {{{{{}}}}} (known: {})", origin, name,
                                  fmt::join(kPlaceholders, ", ")));
    auto it = values.find(name);
    if (it != values.end()) out += it->second;
    i = close + 2;
  }
  return out;
}

// The first `max_lines` lines of `text`, at most `max_chars` of them: the
// first error lines of a compiler log matter most.
std::string head_lines(const std::string& text, size_t max_lines, size_t max_chars) {
  size_t end = 0;
  for (size_t n = 0; n < max_lines && end < text.size(); ++n) {
    end = text.find('\n', end);
    end = end == std::string::npos ? text.size() : end + 1;
  }
  std::string out = text.substr(0, end);
  if (!out.empty() && out.back() != '\n') out += '\n';
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "\n[... cut]";
  return out;
}

}  // namespace

std::string prompt_difference(const std::string& recorded, const std::string& now) {
  // The requests' messages, role by role and line by line.
  auto messages = [](const std::string& request) {
    std::vector<std::pair<std::string, std::string>> out;
    const nlohmann::json j = nlohmann::json::parse(request, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return out;
    if (j.contains("system") && j["system"].is_string())  // Anthropic's own field
      out.push_back({"system", j["system"].get<std::string>()});
    if (j.contains("messages") && j["messages"].is_array())
      for (const auto& m : j["messages"]) {
        if (!m.is_object()) continue;
        const std::string role = m.value("role", std::string("?"));
        std::string text;
        if (m.contains("content") && m["content"].is_string()) text = m["content"].get<std::string>();
        else if (m.contains("content")) text = m["content"].dump();
        out.push_back({role, text});
      }
    return out;
  };
  const auto a = messages(recorded), b = messages(now);
  auto clip = [](std::string s) {
    if (s.size() > 120) s = s.substr(0, 117) + "...";
    return "'" + s + "'";
  };
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] == b[i]) continue;
    if (a[i].first != b[i].first)
      return fmt::format("message {} is '{}', was '{}'", i + 1, b[i].first, a[i].first);
    std::istringstream x(a[i].second), y(b[i].second);
    std::string lx, ly;
    for (int line = 1;; ++line) {
      const bool gx = static_cast<bool>(std::getline(x, lx));
      const bool gy = static_cast<bool>(std::getline(y, ly));
      if (!gx && !gy) break;
      if (gx && gy && lx == ly) continue;
      return fmt::format("the {} message, line {}: now {}, recorded {}", a[i].first, line,
                         gy ? clip(ly) : "(ends)", gx ? clip(lx) : "(ended)");
    }
  }
  if (a.size() != b.size())
    return fmt::format("{} messages now, {} recorded", b.size(), a.size());
  return "the messages are the same; the request's other settings (model, endpoint, limits) differ";
}

struct LlmSynthesizer::Recorded {
  std::string response;
  int64_t in = 0, out = 0;
};

LlmSynthesizer::LlmSynthesizer(llm::LlmConfig config, Store& store, const KnowledgeBase* kb,
                               LlmClientFactory factory)
    : config_(std::move(config)),
      store_(store),
      kb_(kb),
      limiter_(std::make_shared<llm::Limiter>(config_.concurrency)),
      budget_(std::make_shared<llm::Budget>(config_.budget_tokens, config_.budget_usd)),
      factory_(std::move(factory)) {
  if (config_.models.empty() && config_.cache != "only")
    throw UserError("search.llm.models: at least one model is needed");
  if (!factory_) factory_ = [](const llm::ModelConfig& m, auto lim, auto bud) {
    return llm::make_client(m, std::move(lim), std::move(bud));
  };
  clients_.resize(config_.models.size());
  const std::filesystem::path dir = config_.prompts_dir;
  std::map<std::string, std::string> dummy;
  for (const auto& p : kPlaceholders) dummy[p] = "x";
  for (const char* name : kTemplates) {
    const auto file = dir / (std::string(name) + ".md");
    std::string text = read_text_file(file);
    render(text, dummy, file.string());  // checks the placeholders now, not mid-run
    templates_[name] = std::move(text);
  }
  // A language's own templates (prompts/triton/system.md, ...) take the
  // place of the common ones for its tasks; any of the four may be there.
  for (const TargetTraits& t : all_target_traits())
    for (const TargetLanguage& l : t.languages)
      for (const char* name : kTemplates) {
        const auto file = dir / l.name / (std::string(name) + ".md");
        if (!std::filesystem::is_regular_file(file)) continue;
        std::string text = read_text_file(file);
        render(text, dummy, file.string());
        templates_[fmt::format("{}/{}", l.name, name)] = std::move(text);
      }
}

std::pair<const std::string*, std::string> LlmSynthesizer::template_for(const std::string& language,
                                                                       const char* name) const {
  const std::string own = fmt::format("{}/{}", language, name);
  if (auto it = templates_.find(own); it != templates_.end())
    return {&it->second, fmt::format("{}/{}.md", config_.prompts_dir, own)};
  return {&templates_.at(name), fmt::format("{}/{}.md", config_.prompts_dir, name)};
}

LlmSynthesizer::~LlmSynthesizer() = default;

int64_t LlmSynthesizer::tokens() const { return budget_->tokens_used(); }
double LlmSynthesizer::cost_usd() const { return budget_->usd_used(); }

std::string LlmSynthesizer::knowledge_for(const LlmTaskInfo& task, const LlmAsk& ask) const {
  if (!kb_ || config_.knowledge == 0) return "(none)";
  std::string query = task.op + " " + ask.bound + " " + ask.bottleneck + " " + ask.diagnosis;
  if (ask.mode != LlmAsk::Mode::improve) query += " " + ask.error.substr(0, 400);
  const size_t k = static_cast<size_t>(config_.knowledge);
  KbFilter f;
  f.target = task.target;
  f.kind = "pattern";
  f.features = task.features;
  // Patterns for the parent's bottleneck first (the profile's word), then
  // for its bound (the roofline's), then any: each pass keeps its BM25 order.
  std::vector<KbHit> hits;
  std::set<std::string> seen;
  auto add = [&](const std::string& bound) {
    KbFilter g = f;
    g.bound = bound;
    for (KbHit& h : kb_->search(query, g, k))
      if (hits.size() < k && seen.insert(h.doc.id).second) hits.push_back(std::move(h));
  };
  std::string s;
  try {
    const auto& words = kb_tag_words("bound");
    for (const std::string& b : {ask.bottleneck, ask.bound})
      if (hits.size() < k && !b.empty() && std::find(words.begin(), words.end(), b) != words.end())
        add(b);
    if (hits.size() < k) add("");
    for (const KbHit& h : hits) {
      std::string body = h.doc.body;
      if (body.size() > 1500) body = body.substr(0, 1500) + " [...]";
      s += fmt::format("### {} ({})\n{}\n\n", h.doc.title, h.doc.id, body);
    }
  } catch (const std::exception& e) {
    log_warn("knowledge base: {}", e.what());
  }
  return s.empty() ? "(none)" : s;
}

std::string LlmSynthesizer::error_help(const LlmTaskInfo& task, const LlmAsk& ask) const {
  if (!kb_ || ask.error.empty()) return "(none)";
  std::string s;
  try {
    for (const KbError& e : kb_->match_errors(ask.error, task.target, 4))
      s += fmt::format("- `{}`: {} Fix: {}\n", e.line, e.meaning, e.fix);
  } catch (const std::exception& e) {
    log_warn("knowledge base: {}", e.what());
  }
  return s.empty() ? "(none)" : s;
}

std::vector<llm::Message> LlmSynthesizer::prompt(const LlmTaskInfo& task, const LlmAsk& ask) const {
  std::map<std::string, std::string> v = {
      {"op", task.op},
      {"formula", task.formula},
      {"tensors", task.tensors},
      {"scalars", or_none(task.scalars)},
      {"shapes", task.shapes},
      {"dtype", task.dtype},
      {"compare", task.compare},
      {"target", task.target},
      {"language", task.language},
      {"entry_point", task.entry_point},
      {"abi", task.abi},
      {"hardware", or_none(task.hardware)},
      {"knob_syntax", knob_syntax_for(task.target)},
      {"rules", rules_for(task.target) + task.extra_rules},
      {"knowledge", knowledge_for(task, ask)},
      {"others", or_none(task.others)},
      {"parent_label", ask.parent_label},
      {"parent_result", or_none(ask.parent_result)},
      {"parent_source", ask.parent_source},
      {"diagnosis", or_none(ask.diagnosis)},
      {"profile", lines_or_none(ask.profile)},
      {"hot_lines", lines_or_none(ask.hot_lines)},
      {"failures", lines_or_none(ask.failures)},
      {"error", or_none(head_lines(ask.error, 60, 6000))},
      {"error_help", error_help(task, ask)},
  };
  const char* which = ask.mode == LlmAsk::Mode::improve  ? "improve"
                      : ask.mode == LlmAsk::Mode::repair ? "repair"
                                                         : "simplify";
  const auto [system, system_file] = template_for(task.language, "system");
  const auto [user, user_file] = template_for(task.language, which);
  return {{"system", render(*system, v, system_file)}, {"user", render(*user, v, user_file)}};
}

std::optional<LlmSynthesizer::Recorded> LlmSynthesizer::recorded(const std::string& key,
                                                                 int64_t occurrence) const {
  std::optional<LlmCallRecord> c = store_.recorded_llm_call(key, occurrence);
  if (!c) return std::nullopt;
  Recorded r;
  r.response = std::move(c->response);
  r.in = c->prompt_tokens;
  r.out = c->completion_tokens;
  return r;
}

struct LlmSynthesizer::InFlight {
  struct Pending {
    size_t model = 0;
    llm::Request request;
    std::string key, request_json;
    std::optional<Recorded> hit;
    std::optional<LlmCallRecord> scripted_failure;  // a replay: the recorded call failed so
    std::string off_script;                         // a replay: why the recording cannot answer
    std::future<llm::Reply> reply;
  };
  std::vector<LlmAsk> asks;
  std::vector<Pending> pending;
  std::string_view syntax = "c";  // how the task's kernels are written (for the replies)
};

std::vector<LlmOutcome> LlmSynthesizer::generate(const LlmTaskInfo& task,
                                                 const std::vector<LlmAsk>& asks,
                                                 std::mt19937_64& rng) {
  return finish(*start(task, asks, rng));
}

std::shared_ptr<LlmSynthesizer::InFlight> LlmSynthesizer::start(const LlmTaskInfo& task,
                                                                const std::vector<LlmAsk>& asks,
                                                                std::mt19937_64& rng) {
  auto batch = std::make_shared<InFlight>();
  batch->asks = asks;
  batch->syntax = syntax_of(task.language);
  std::vector<InFlight::Pending>& pending = batch->pending;
  pending.resize(asks.size());
  std::vector<double> weights;
  for (const auto& m : config_.models) weights.push_back(m.weight);
  // Decisions first, in order, on this thread: which model, which prompt,
  // whether a recorded reply answers it.
  for (size_t i = 0; i < asks.size(); ++i) {
    InFlight::Pending& p = pending[i];
    if (!weights.empty()) {
      std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
      p.model = pick(rng);
    }
    p.request.messages = prompt(task, asks[i]);
    const llm::ModelConfig* m = weights.empty() ? nullptr : &config_.models[p.model];
    p.request_json = m ? llm::request_json(*m, p.request) : "";
    p.key = sha256_hex(fmt::format("{}|{}|{}|{}", m ? m->api : "", m ? m->endpoint : "",
                                   m ? m->model : "", p.request_json));
    if (script_) {  // a replay: the run's calls in order, each for the same prompt
      const size_t n = script_next_++;
      if (n >= script_->size()) {
        p.off_script = fmt::format("the recorded run made only {} LLM calls; this is call {}",
                                   script_->size(), n + 1);
      } else if ((*script_)[n].prompt_hash != p.key) {
        p.off_script = fmt::format("the prompt of LLM call {} differs from the recording's: {}",
                                   n + 1, prompt_difference((*script_)[n].prompt, p.request_json));
      } else if ((*script_)[n].status == "failed") {
        p.scripted_failure = (*script_)[n];
      } else {
        p.hit = Recorded{(*script_)[n].response, (*script_)[n].prompt_tokens,
                         (*script_)[n].completion_tokens};
      }
      if (!p.off_script.empty() && divergence_.empty()) divergence_ = p.off_script;
      continue;
    }
    const int64_t occurrence = occurrences_[p.key]++;
    if (config_.cache != "off") p.hit = recorded(p.key, occurrence);
    if (p.hit || config_.cache == "only" || !m) continue;
    if (!clients_[p.model]) clients_[p.model] = factory_(*m, limiter_, budget_);
    llm::Client* client = clients_[p.model].get();
    p.reply = std::async(std::launch::async, [client, req = p.request] { return client->complete(req); });
  }
  return batch;
}

std::vector<LlmOutcome> LlmSynthesizer::finish(InFlight& batch) {
  const std::vector<LlmAsk>& asks = batch.asks;
  std::vector<InFlight::Pending>& pending = batch.pending;
  std::vector<LlmOutcome> out(asks.size());
  for (size_t i = 0; i < asks.size(); ++i) {
    InFlight::Pending& p = pending[i];
    LlmOutcome& o = out[i];
    o.model = config_.models.empty() ? "recorded" : config_.models[p.model].name;
    const std::string endpoint = config_.models.empty() ? "" : config_.models[p.model].endpoint;
    std::string text, status = "ok", failure;
    int64_t in = 0, out_tokens = 0;
    double cost = 0, latency = 0;
    int64_t attempts = 0;
    if (p.hit) {
      text = p.hit->response;
      in = p.hit->in;
      out_tokens = p.hit->out;
      status = "cached";
      o.cached = true;
      ++cached_;
    } else if (p.scripted_failure) {
      // Failed as the recorded call failed, for the same reason.
      status = "failed";
      failure = p.scripted_failure->failure.empty() ? "replayed" : p.scripted_failure->failure;
      o.why_not = p.scripted_failure->response;
      text = o.why_not;
      ++failed_;
      ++failures_[failure];
      last_failure_ = o.why_not;
      if (failure == "budget") exhausted_ = true;
    } else if (!p.off_script.empty()) {
      status = "failed";
      failure = "replay";
      o.why_not = p.off_script;
      text = o.why_not;
      ++failed_;
      ++failures_[failure];
      last_failure_ = o.why_not;
    } else if (!p.reply.valid()) {
      status = "failed";
      failure = "cache";
      o.why_not = "cache only: no recorded reply for this prompt";
      text = o.why_not;
      ++failed_;
      ++failures_[failure];
    } else {
      try {
        llm::Reply r = p.reply.get();
        text = r.text;
        in = r.input_tokens;
        out_tokens = r.output_tokens;
        cost = r.cost_usd;
        latency = r.latency_s;
        attempts = r.attempts;
        ++calls_;
      } catch (const std::exception& e) {
        // A failed call is a result too: recorded, and the search goes on.
        status = "failed";
        o.why_not = fmt::format("the call failed: {}", e.what());
        text = o.why_not;
        ++failed_;
        const auto* le = dynamic_cast<const llm::LlmError*>(&e);
        failure = le ? le->kind : "error";
        ++failures_[failure];
        if (le) attempts = le->attempts;
        last_failure_ = e.what();
        if (le && le->kind == "budget") {
          if (!exhausted_) log_warn("LLM budget spent: the search goes on without the LLM ({})", e.what());
          exhausted_ = true;
        }
      }
    }
    if (status != "failed") {
      llm::ParsedReply parsed = llm::parse_reply(text, asks[i].parent_source, batch.syntax);
      if (parsed.kind == llm::ParsedReply::Kind::none)
        o.why_not = "the reply gave no usable kernel: " + parsed.refusal;
      else
        o.source = parsed.source;
    }
    LlmCallRecord call;
    if (run_) call.run = run_;
    call.model = o.model;
    call.endpoint = endpoint;
    call.prompt_hash = p.key;
    call.prompt = p.request_json;
    call.response = text;
    call.prompt_tokens = in;
    call.completion_tokens = out_tokens;
    call.cost_usd = cost;
    call.latency_s = latency;
    call.status = status;
    call.attempts = attempts;
    call.failure = failure;
    o.call = store_.add_llm_call(call);
  }
  return out;
}

void LlmSynthesizer::link(int64_t call, int64_t candidate) {
  store_.link_llm_call(call, candidate);
}

}  // namespace kevo
