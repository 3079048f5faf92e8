// kevo report: what a search run or a batch found, as Markdown, one
// self-contained HTML page, or JSON (bench/report.h).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/paths.h"
#include "report/report.h"
#include "search/batch.h"

namespace kevo::cli {

namespace {

// md, html or json: --format, else the extension of -o, else md.
std::string report_format(const Args& a) {
  if (auto f = a.value("--format")) {
    if (*f != "md" && *f != "html" && *f != "json")
      throw UserError(fmt::format("--format expects md, html or json, got '{}'", *f));
    return *f;
  }
  if (auto out = a.value("-o")) {
    const std::string ext = std::filesystem::path(*out).extension().string();
    if (ext == ".html" || ext == ".htm") return "html";
    if (ext == ".json") return "json";
  }
  return "md";
}

}  // namespace

int cmd_report(const Argv& argv) {
  Args a(
      "report", "report RUN|BATCH [--format md|html|json] [-o FILE] [--db PATH]",
      "Reports what a search found: the best kernel (source with its knobs baked in, time\n"
      "with spread, speedups over the best seed and the naive family, fraction of the\n"
      "measured roof), convergence plots, a roofline of every correct candidate, the best\n"
      "kernel's lineage, failures by status, the top candidates with their diagnoses and\n"
      "the time per stage. RUN is a run id; BATCH is batch:ID or a batch's name (its latest\n"
      "batch), as kevo batch prints them. HTML is one page with inline SVG and no script;\n"
      "Markdown written with -o gets its plots as SVG files beside it (FILE's stem + -NAME.svg).",
      {db_option(),
       {"--format", "md|html|json", "the output format (default: from -o's extension, else md)"},
       {"-o", "FILE", "write there instead of stdout"},
       {"--top", "K", "candidates in the top table (default 10)"}},
      1, 1);
  a.parse(argv);
  if (a.help()) {
    fmt::print("{}", a.help_text());
    return 0;
  }
  const std::string format = report_format(a);
  int top = 10;
  if (auto k = a.value("--top")) top = static_cast<int>(parse_id(*k, "--top"));
  const std::string db = store_path(a);
  Store store(db, /*read_only=*/true);
  const std::string& ref = a.positional()[0];
  nlohmann::json report;
  if (!ref.empty() && ref.find_first_not_of("0123456789") == std::string::npos) {
    report = run_report(store, parse_id(ref, "kevo report"), top);
  } else if (auto batch = find_batch(store, ref)) {
    report = batch_report(store, *batch);
  } else {
    throw UserError(
        fmt::format("no run or batch '{}' in {} (give a run id, batch:ID or a batch "
                    "name)",
                    ref, db));
  }

  const std::optional<std::string> out = a.value("-o");
  std::string text;
  if (format == "json") {
    text = report.dump(2) + "\n";
  } else if (format == "html") {
    text = render_html(report);
  } else {
    // Plots go beside the Markdown, named after it: report.md, report-roofline.svg.
    std::string prefix;
    if (out) {
      const std::filesystem::path p(*out);
      prefix = p.stem().string() + "-";
      for (const Plot& plot : report_plots(report)) {
        const std::filesystem::path file = p.parent_path() / (prefix + plot.name + ".svg");
        write_file_atomic(file, plot.svg.data(), plot.svg.size());
      }
    }
    text = render_markdown(report, prefix);
  }
  if (out)
    write_file_atomic(*out, text.data(), text.size());
  else
    fmt::print("{}", text);
  return 0;
}

}  // namespace kevo::cli
