// kevo kb: search the knowledge base, show a document, look up compiler errors.
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/paths.h"
#include "knowledge/knowledge_base.h"

namespace kevo::cli {

namespace {

Option corpus_option() {
  return {"--corpus", "DIR", "the corpus (default: $KEVO_HOME/knowledge/corpus)"};
}

// Parses; prints the help and returns false when --help was given.
bool parse(Args& a, const Argv& argv) {
  a.parse(argv);
  if (a.help()) fmt::print("{}", a.help_text());
  return !a.help();
}

KnowledgeBase open_kb(const Args& a) {
  if (auto dir = a.value("--corpus")) return KnowledgeBase::open(std::filesystem::path(*dir));
  return KnowledgeBase::open();
}

std::string list(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& w : v) s += (s.empty() ? "" : ",") + w;
  return s.empty() ? "-" : s;
}

nlohmann::json doc_json(const KbDoc& d) {
  nlohmann::json j = {{"id", d.id},           {"kind", d.kind},
                      {"title", d.title},     {"source", d.source},
                      {"targets", d.targets}, {"ops", d.ops},
                      {"bounds", d.bounds},   {"file", d.file.generic_string()}};
  if (d.kind == "hardware") j["figures"] = d.figures;
  return j;
}

int kb_search(const Argv& argv) {
  Args a("kb search",
         "kb search \"TEXT\" [--target T] [--op O] [--bound B] [--kind K] [-k N] [--json]",
         "Ranks the knowledge base's documents by BM25 over their words (a title word counts\n"
         "more than a body word) and prints the best: id, score, title, source and a snippet.\n"
         "TEXT is plain words; operators and quotes are ignored. A tag filter also keeps\n"
         "documents tagged 'any'. Example:\n"
         "  kevo kb search \"warp shuffle reduce sum\" --target cuda",
         {{"--target", "T", "cpu, cuda, triton or trainium"},
          {"--op", "O", "elementwise, reduction, softmax, norm or gemm"},
          {"--bound", "B",
           "memory, compute, latency, dram-bandwidth, l2-bandwidth, memory-latency, occupancy, spills or launch"},
          {"--kind", "K", "pattern, hardware or error"},
          {"-k", "N", "how many documents (default 5)"},
          corpus_option(),
          json_option()},
         1, 1);
  if (!parse(a, argv)) return 0;
  KbFilter f;
  f.target = a.value("--target").value_or("");
  f.op = a.value("--op").value_or("");
  f.bound = a.value("--bound").value_or("");
  f.kind = a.value("--kind").value_or("");
  size_t k = 5;
  if (auto v = a.value("-k")) k = static_cast<size_t>(parse_id(*v, "-k"));
  const auto hits = open_kb(a).search(a.positional()[0], f, k);
  if (a.flag("--json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& h : hits) {
      nlohmann::json j = doc_json(h.doc);
      j["score"] = h.score;
      j["snippet"] = h.snippet;
      out.push_back(j);
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  if (hits.empty()) fmt::print("no matching documents\n");
  for (size_t i = 0; i < hits.size(); ++i) {
    const KbDoc& d = hits[i].doc;
    fmt::print("{}. {}  [{}, score {:.2f}]  {}\n", i + 1, d.id, d.kind, hits[i].score, d.title);
    fmt::print("   source: {}\n", d.source);
    if (!hits[i].snippet.empty()) fmt::print("   {}\n", hits[i].snippet);
  }
  return 0;
}

int kb_show(const Argv& argv) {
  Args a("kb show", "kb show ID [--json]",
         "Prints one document of the knowledge base: its tags, source and text (for hardware,\n"
         "the figures too).",
         {corpus_option(), json_option()}, 1, 1);
  if (!parse(a, argv)) return 0;
  const std::string& id = a.positional()[0];
  auto d = open_kb(a).get(id);
  if (!d)
    throw UserError(fmt::format("kevo kb show: no document '{}' (kevo kb search finds ids)", id));
  if (a.flag("--json")) {
    nlohmann::json j = doc_json(*d);
    j["body"] = d->body;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}  [{}]\n{}\n", d->id, d->kind, d->title);
  fmt::print("targets: {}  ops: {}  bounds: {}\nsource: {}\nfile: {}\n\n{}\n", list(d->targets),
             list(d->ops), list(d->bounds), d->source, d->file.generic_string(), d->body);
  return 0;
}

int kb_stats(const Argv& argv) {
  Args a("kb stats", "kb stats [--json]",
         "Counts the knowledge base's documents by kind and target and its error entries by\n"
         "compiler; names the corpus, its hash and the index (built now or reused).",
         {corpus_option(), json_option()}, 0, 0);
  if (!parse(a, argv)) return 0;
  const KbStats s = open_kb(a).stats();
  auto counts = [](const std::vector<std::pair<std::string, size_t>>& v) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, n] : v) j[name] = n;
    return j;
  };
  if (a.flag("--json")) {
    nlohmann::json j = {
        {"corpus", s.corpus.string()},      {"index", s.index.string()},
        {"corpus_hash", s.corpus_hash},     {"built_now", s.built_now},
        {"documents", s.documents},         {"by_kind", counts(s.by_kind)},
        {"by_target", counts(s.by_target)}, {"errors_by_compiler", counts(s.by_compiler)},
        {"rules_files", s.rules_files}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  auto line = [](const std::vector<std::pair<std::string, size_t>>& v) {
    std::string out;
    for (const auto& [name, n] : v) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, name);
    return out.empty() ? std::string("none") : out;
  };
  fmt::print("corpus: {} ({} documents, {} rules file{})\n", s.corpus.string(), s.documents,
             s.rules_files, s.rules_files == 1 ? "" : "s");
  fmt::print("  by kind:   {}\n  by target: {}\n  errors:    {}\n", line(s.by_kind),
             line(s.by_target), line(s.by_compiler));
  fmt::print("index: {} ({}; corpus hash {})\n", s.index.string(),
             s.built_now ? "built now" : "reused", s.corpus_hash.substr(0, 16));
  return 0;
}

int kb_errors(const Argv& argv) {
  Args a("kb errors", "kb errors FILE|- [--target T] [-k N] [--json]",
         "Reads compiler output (a file, or stdin for -) and prints the error entries whose\n"
         "pattern matches one of its lines, most specific first: what it means and the fix.",
         {{"--target", "T", "only entries for cpu, cuda, triton or trainium"},
          {"-k", "N", "how many entries at most (default 10)"},
          corpus_option(),
          json_option()},
         1, 1);
  if (!parse(a, argv)) return 0;
  const std::string& file = a.positional()[0];
  const std::string text = file == "-" ? std::string(std::istreambuf_iterator<char>(std::cin),
                                                     std::istreambuf_iterator<char>())
                                       : read_text_file(file);
  size_t k = 10;
  if (auto v = a.value("-k")) k = static_cast<size_t>(parse_id(*v, "-k"));
  const auto found = open_kb(a).match_errors(text, a.value("--target").value_or(""), k);
  if (a.flag("--json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : found)
      out.push_back({{"id", e.id},
                     {"compiler", e.compiler},
                     {"targets", e.targets},
                     {"pattern", e.pattern},
                     {"meaning", e.meaning},
                     {"fix", e.fix},
                     {"source", e.source},
                     {"line", e.line}});
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  if (found.empty()) fmt::print("no known error in the output\n");
  for (const auto& e : found) {
    fmt::print("{} ({}): {}\n", e.id, e.compiler, e.meaning);
    fmt::print("  fix:    {}\n  line:   {}\n  source: {}\n", e.fix, e.line, e.source);
  }
  return 0;
}

}  // namespace

int cmd_kb(const Argv& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    fmt::print(
        "usage: kevo kb SUBCOMMAND [ARGS...]   (kevo kb SUBCOMMAND --help)\n\n"
        "  search \"TEXT\"   rank patterns, hardware sheets and error entries for TEXT\n"
        "  show ID         print one document\n"
        "  stats           count the documents; name the corpus and its index\n"
        "  errors FILE|-   explain compiler output with the error index\n");
    return argv.empty() ? 2 : 0;
  }
  const Argv rest(argv.begin() + 1, argv.end());
  if (argv[0] == "search") return kb_search(rest);
  if (argv[0] == "show") return kb_show(rest);
  if (argv[0] == "stats") return kb_stats(rest);
  if (argv[0] == "errors") return kb_errors(rest);
  throw UserError(fmt::format(
      "kevo kb: unknown subcommand '{}' (expected: search, show, stats, errors)", argv[0]));
}

}  // namespace kevo::cli
