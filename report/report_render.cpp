// Renders a report's data (bench/report_data.cpp) as plots, Markdown and
// HTML. Both texts show the same sections in the same order; each section
// is one function per format, reading only the JSON.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "eval/roofline.h"
#include "report/machine_text.h"
#include "report/report.h"
#include "report/svg.h"

namespace kevo {

namespace {

using nlohmann::json;

std::string secs(const json& v) {
  return v.is_number() ? format_seconds(v.get<double>()) : "-";
}
std::string pct(const json& v) {
  return v.is_number() ? fmt::format("{:.0f}%", 100 * v.get<double>()) : "-";
}
std::string times(const json& v) {
  return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-";
}
std::string str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}
std::string spread(const json& row) {
  return row["p20_s"].is_number() ? secs(row["p20_s"]) + " - " + secs(row["p80_s"]) : "-";
}

// The time unit that reads best for values up to `max_s`.
std::pair<std::string, double> time_unit(double max_s) {
  if (max_s >= 1) return {"s", 1};
  if (max_s >= 1e-3) return {"ms", 1e-3};
  if (max_s >= 1e-6) return {"us", 1e-6};
  return {"ns", 1e-9};
}

// ---- plots -------------------------------------------------------------

std::vector<Plot> convergence_plots(const json& r) {
  const bool batch = r["kind"] == "batch";
  double max_s = 0;
  for (const auto& s : r["convergence"])
    for (const auto& p : s["points"]) max_s = std::max(max_s, p["best_s"].get<double>());
  const auto [unit, scale] = batch ? std::pair<std::string, double>{"", 1} : time_unit(max_s);
  const std::string y_label =
      batch ? "best so far / the task's final best" : "best median so far (" + unit + ")";
  std::vector<Plot> out;
  for (const bool by_time : {false, true}) {
    if (batch && by_time) break;  // tasks of a batch run one after another: evaluations only
    const std::string name = by_time ? "convergence-time" : "convergence-evals";
    SvgPlot plot("plot-" + name,
                 by_time ? "Best so far against wall time" : "Best so far against evaluations",
                 {by_time ? "wall time since the run started (s)"
                          : "evaluations (answers from the store included)",
                  false},
                 {y_label, true});
    for (const auto& s : r["convergence"]) {
      PlotSeries series{str(s["label"]), "series", PlotSeries::Style::steps, {}, {}};
      for (const auto& p : s["points"])
        series.points.push_back(
            {p[by_time ? "t_s" : "n"].get<double>(), p["best_s"].get<double>() / scale});
      plot.add(std::move(series));
    }
    out.push_back({name, plot.render(540, 380)});  // two side by side in the HTML
  }
  return out;
}

std::optional<Plot> roofline_plot(const json& r) {
  const json& rl = r["roofline"];
  const double ai = rl["arithmetic_intensity"].get<double>();
  if (!(ai > 0)) return std::nullopt;
  SvgPlot plot("plot-roofline", "Roofline: every correct candidate against the measured roofs",
               {"arithmetic intensity (FLOP/byte)", true}, {"achieved GFLOP/s", true});
  const double xlo = ai / 100, xhi = ai * 100;
  plot.set_x_range(xlo, xhi);
  double ylo = std::numeric_limits<double>::infinity(), yhi = 0;
  PlotSeries points{"correct candidates", "points", PlotSeries::Style::markers, {}, {}};
  for (const auto& p : rl["points"]) {
    const double g = p["gflops"].get<double>();
    ylo = std::min(ylo, g);
    yhi = std::max(yhi, g);
    points.markers.push_back(
        {ai,
         g,
         fmt::format("#{} {} {}: {} ({:.3g} GFLOP/s, {:.3g} GB/s)", p["candidate"].get<int64_t>(),
                     str(p["family"]), str(p["knobs_text"]), secs(p["median_s"]), g,
                     p["gbps"].get<double>()),
         {{"candidate", std::to_string(p["candidate"].get<int64_t>())},
          {"median-s", fmt::format("{:.6g}", p["median_s"].get<double>())}}});
  }
  plot.add(std::move(points));
  // The y range spans the candidates and every roof at this intensity; the
  // memory roofs' lines climb out of it on the right (clipped).
  for (const auto& l : rl["roofs"]) {
    const double v = l["value"].get<double>();
    const bool memory = l["kind"] == "memory";
    PlotSeries line{str(l["label"]),
                    "roof",
                    memory ? PlotSeries::Style::line : PlotSeries::Style::dashed,
                    {},
                    {}};
    if (memory)
      line.points = {{xlo, v * xlo}, {xhi, v * xhi}};
    else
      line.points = {{xlo, v}, {xhi, v}};
    yhi = std::max(yhi, memory ? v * ai : v);
    plot.add(std::move(line));
  }
  if (yhi > 0) plot.set_y_range(std::isfinite(ylo) ? ylo / 3 : yhi / 1000, yhi * 3);
  return Plot{"roofline", plot.render()};
}

const Plot* find_plot(const std::vector<Plot>& plots, const std::string& name) {
  for (const auto& p : plots)
    if (p.name == name) return &p;
  return nullptr;
}

// ---- text helpers ------------------------------------------------------

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string md_table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  std::string o = "|";
  for (const auto& h : header) o += " " + md_cell(h) + " |";
  o += "\n|";
  for (size_t i = 0; i < header.size(); ++i) o += "---|";
  o += "\n";
  for (const auto& row : rows) {
    o += "|";
    for (const auto& c : row) o += " " + md_cell(c) + " |";
    o += "\n";
  }
  return o;
}

std::string html_table(const std::string& cls, const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::string o = fmt::format("<table class=\"{}\">\n<thead><tr>", cls);
  for (const auto& h : header) o += "<th>" + xml_escape(h) + "</th>";
  o += "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    o += "<tr>";
    for (const auto& c : row) o += "<td>" + xml_escape(c) + "</td>";
    o += "</tr>\n";
  }
  return o + "</tbody>\n</table>\n";
}

// ---- sections shared by both formats, as rows of text -----------------

std::vector<std::pair<std::string, std::string>> run_facts(const json& r) {
  const json& run = r["run"];
  // One timed shape (an object), or several (a list of them: "; " between).
  std::string shapes;
  const json one = run["shapes"].is_array() ? run["shapes"] : json::array({run["shapes"]});
  for (const auto& given : one) {
    if (!shapes.empty()) shapes += ";";
    if (!given.is_object()) continue;
    std::string these;
    for (auto it = given.begin(); it != given.end(); ++it)
      these += fmt::format(" {}={}", it.key(), it.value().dump());
    shapes += these;
  }
  if (!shapes.empty() && shapes.front() == ' ') shapes.erase(0, 1);
  return {
      {"task", fmt::format("{} ({} {} {} on {})", str(run["task"]), str(run["operator"]),
                           str(run["dtype"]), shapes, str(run["target"]))},
      {"run", fmt::format("{} ({}), strategy {}", run["id"].get<int64_t>(), str(run["kind"]),
                          str(run["strategy"]))},
      {"status", str(run["status"]) +
                     (str(run["stop_reason"]).empty() ? "" : ": " + str(run["stop_reason"]))},
      {"when", fmt::format("{} to {} on {}", str(run["started_at"]),
                           str(run["finished_at"]).empty() ? "-" : str(run["finished_at"]),
                           str(run["hostname"]))},
      {"candidates", fmt::format("{} with a result ({} answered from earlier measurements), {} "
                                 "correct",
                                 run["candidates"].get<int64_t>(), run["reused"].get<int64_t>(),
                                 r["ok_candidates"].get<int64_t>())},
  };
}

// The best kernel in sentences (no source).
std::vector<std::string> best_lines(const json& r) {
  const json& b = r["best"];
  std::vector<std::string> lines;
  std::string when = b["confirmed"].get<bool>()
                         ? fmt::format("; re-measured, {} when found", secs(b["search_median_s"]))
                         : "";
  lines.push_back(fmt::format(
      "median {} (p20-p80 {}, {} samples{})", secs(b["median_s"]), spread(b),
      b["n_samples"].is_number() ? fmt::format("{:.0f}", b["n_samples"].get<double>()) : "?",
      when));
  // The confirmation's rounds, each in a runner of its own: the figure is
  // their median.
  std::vector<double> rounds;
  for (const auto& x : b.value("rounds_s", json::array()))
    if (x.is_number()) rounds.push_back(x.get<double>());
  if (!rounds.empty()) {
    std::string list;
    for (double x : rounds) list += (list.empty() ? "" : ", ") + format_seconds(x);
    lines.push_back(fmt::format("confirmation rounds: {} (the median stands)", list));
  }
  // Whether "best" held against the next best re-measured, round by round.
  if (const json& u = r.value("runner_up", json()); u.is_object()) {
    std::string knobs;
    for (auto it = u["knobs"].begin(); it != u["knobs"].end(); ++it)
      knobs += fmt::format("{}{}={}", knobs.empty() ? "" : " ", it.key(), it.value().dump());
    lines.push_back(fmt::format(
        "runner-up: candidate {} ({} {}), {}: {}", u["candidate"].get<int64_t>(), str(u["family"]), knobs,
        secs(u["median_s"]),
        u["verdict"] == "apart"
            ? fmt::format("the best is {:.2f}x faster, apart in every round",
                          u["best_over_runner_up"].get<double>())
            : fmt::format("inconclusive, the best {:.2f}x by the medians but faster in {} of {} "
                          "rounds whose times overlap",
                          u["best_over_runner_up"].get<double>(), u["best_faster"].get<int64_t>(),
                          u["rounds"].get<int64_t>())));
  }
  lines.push_back(fmt::format("candidate {}: family {}, knobs {}, made by {}",
                              b["candidate"].get<int64_t>(), str(b["family"]),
                              str(b["knobs_text"]).empty() ? "(none)" : str(b["knobs_text"]),
                              str(b["synthesizer"])));
  lines.push_back(
      fmt::format("{} of the measured roof: {}", pct(b["roof_fraction"]), str(b["diagnosis"])));
  for (const char* key : {"seed", "naive"}) {
    const json& s = r[key];
    if (s.is_null()) {
      // Measured and failed is not the same as never measured.
      const std::string failed = failure_counts_text(r.value(std::string(key) + "_failures", json()));
      lines.push_back(failed.empty() ? fmt::format("{}: not measured", key)
                                     : fmt::format("{}: failed ({})", key, failed));
      continue;
    }
    // Round by round (both were timed in each confirmation round): how often
    // the best was the faster one.
    std::string wins;
    const json& theirs = s.value("rounds_s", json::array());
    if (!rounds.empty() && theirs.size() == b["rounds_s"].size()) {
      int won = 0, paired = 0;
      for (size_t i = 0; i < theirs.size(); ++i)
        if (b["rounds_s"][i].is_number() && theirs[i].is_number()) {
          ++paired;
          won += b["rounds_s"][i].get<double>() < theirs[i].get<double>();
        }
      if (paired > 0) wins = fmt::format("; faster in {} of {} rounds", won, paired);
    }
    lines.push_back(fmt::format("{} the {} ({} {}, candidate {}: {}{})", times(s["speedup"]),
                                std::string(key) == "seed" ? "best seed" : "naive family",
                                str(s["family"]), str(s["knobs_text"]),
                                s["candidate"].get<int64_t>(), secs(s["median_s"]), wins));
  }
  // The machine's drift over the run, seen on the family defaults.
  const json& drift = r.value("drift", json::array());
  if (!drift.empty()) {
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& d : drift) {
      lo = std::min(lo, d["change"].get<double>());
      hi = std::max(hi, d["change"].get<double>());
    }
    lines.push_back(fmt::format(
        "drift: the family defaults re-measured {:+.1f}% .. {:+.1f}% from their search figures "
        "({} famil{}; the machine's drift and noise over the run, not the winner's curse)",
        100 * lo, 100 * hi, drift.size(), drift.size() == 1 ? "y" : "ies"));
  }
  // The GPU's clocks held back while the run timed: its figures are the
  // capped clock's, which a short timing elsewhere (a peer harness, a fresh
  // GPU) need not see. Shown where any evaluation was throttled or the SM
  // clock moved by 5% or more.
  if (const std::string held = clocks_held_text(r.value("machine", json())); !held.empty())
    lines.push_back(fmt::format(
        "machine: {}. A compute-bound kernel's time follows the clock: this run's figures are "
        "at the clocks it had, and a shorter timing elsewhere may read faster. The confirmation "
        "timed the leaders in alternating rounds, so a clock that moved between rounds moved "
        "for both",
        held));
  return lines;
}

std::string roofline_note(const json& r) {
  const json& rl = r["roofline"];
  std::string roofs;
  for (const auto& l : rl["roofs"]) roofs += (roofs.empty() ? "" : "; ") + str(l["label"]);
  return fmt::format(
      "{} correct candidates at the task's arithmetic intensity, {:.3g} FLOP/byte ({:.3g} GFLOP "
      "over {:.3g} MB moved{}). Roofs measured on this machine: {}.",
      rl["points"].size(), rl["arithmetic_intensity"].get<double>(),
      r["run"]["flops"].get<double>() / 1e9, r["run"]["bytes"].get<double>() / 1e6,
      r.value("shapes", json::array()).empty()
          ? ""
          : "; several timed shapes: weighted geometric means over them, as the time is",
      roofs.empty() ? "none stored" : roofs);
}

// The lineage of the best as a tree: each candidate with the ones it was
// made from (a crossover has two), each candidate shown once.
struct LineageNode {
  std::string text;
  std::vector<LineageNode> parents;
};

std::optional<LineageNode> lineage_tree(const json& r) {
  std::map<int64_t, const json*> nodes;
  for (const auto& n : r["lineage"]) nodes[n["candidate"].get<int64_t>()] = &n;
  std::set<int64_t> seen;
  std::function<std::optional<LineageNode>(int64_t)> build = [&](int64_t c) {
    auto it = nodes.find(c);
    if (it == nodes.end() || !seen.insert(c).second) return std::optional<LineageNode>();
    const json& n = *it->second;
    LineageNode node{
        fmt::format("#{} {} {} - made by {} - {}", c, str(n["family"]), str(n["knobs_text"]),
                    str(n["synthesizer"]),
                    n["median_s"].is_number() ? secs(n["median_s"]) : str(n["status"])),
        {}};
    for (const auto& p : n["parents"])
      if (auto parent = build(p.get<int64_t>())) node.parents.push_back(std::move(*parent));
    return std::optional<LineageNode>(std::move(node));
  };
  if (r["lineage"].empty()) return std::nullopt;
  return build(r["lineage"][0]["candidate"].get<int64_t>());
}

std::string lineage_markdown(const LineageNode& n, int depth) {
  std::string o = std::string(2 * depth, ' ') + "- " + n.text + "\n";
  for (const auto& p : n.parents) o += lineage_markdown(p, depth + 1);
  return o;
}

std::string lineage_html(const LineageNode& n) {
  std::string o = "<li>" + xml_escape(n.text);
  if (!n.parents.empty()) {
    o += "\n<ul>\n";
    for (const auto& p : n.parents) o += lineage_html(p);
    o += "</ul>\n";
  }
  return o + "</li>\n";
}

std::vector<std::vector<std::string>> failure_rows(const json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : r["failures"]) {
    std::string examples;
    for (const auto& e : f["examples"])
      examples += fmt::format("{}#{} {} {}: {}", examples.empty() ? "" : "; ",
                              e["candidate"].get<int64_t>(), str(e["family"]), str(e["knobs_text"]),
                              str(e["detail"]));
    rows.push_back({str(f["status"]), str(f["count"]), examples});
  }
  return rows;
}

const std::vector<std::string> kTopHeader = {
    "rank", "candidate", "family", "knobs", "synthesizer", "median", "p20 - p80", "re-measured",
    "roof", "bound", "diagnosis"};

// The confirmation's figure of a top candidate: its median round, the
// status it failed with when measured again, or "-" if it was not.
std::string remeasured(const json& t) {
  if (t["confirmed_median_s"].is_number()) return secs(t["confirmed_median_s"]);
  const std::string status = str(t["confirm_status"]);
  return status.empty() ? "-" : status + " when measured again";
}

std::vector<std::vector<std::string>> top_rows(const json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r["top"]) {
    std::string diagnosis = str(t["diagnosis"]);
    if (!str(t["bottleneck"]).empty()) diagnosis += " (profile: " + str(t["bottleneck"]) + ")";
    rows.push_back({str(t["rank"]), str(t["candidate"]), str(t["family"]), str(t["knobs_text"]),
                    str(t["synthesizer"]), secs(t["median_s"]), spread(t), remeasured(t),
                    pct(t["roof_fraction"]), str(t["bound"]), diagnosis});
  }
  return rows;
}

const std::vector<std::string> kUnheldHeader = {"candidate", "family", "knobs", "search's median",
                                                 "re-measured", "ratio"};

// The candidates whose search figure the confirmation did not bear out.
std::vector<std::vector<std::string>> unheld_rows(const json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& u : r.value("did_not_hold", json::array())) {
    const bool timed = u["confirmed_median_s"].is_number();
    rows.push_back({str(u["candidate"]), str(u["family"]), str(u["knobs_text"]),
                    secs(u["search_median_s"]),
                    timed ? secs(u["confirmed_median_s"])
                          : str(u["confirm_status"]) + " when measured again",
                    timed ? fmt::format("{:.2f}x", u["ratio"].get<double>()) : "-"});
  }
  return rows;
}

std::string unheld_intro(const json& r) {
  return fmt::format(
      "The search's figure of these candidates was not borne out when they were measured again "
      "at the end (off by more than {:.2f}x either way, or failed): the search steered by "
      "figures a busy machine or a lucky round gave. Rank by the re-measured column.",
      r.value("held_factor", 1.25));
}

const std::vector<std::string> kShapesHeader = {"shape", "weight", "chosen kernel", "of its roof",
                                                "fastest at this shape alone", "chosen / fastest"};

// One row per timed shape of a multi-shape task.
std::vector<std::vector<std::string>> shape_rows(const json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : r.value("shapes", json::array())) {
    std::vector<std::string> row = {str(s["shape"]), fmt::format("{:g}", s["weight"].get<double>())};
    if (s.contains("chosen")) {
      row.push_back(secs(s["chosen"]["median_s"]));
      row.push_back(fmt::format("{:.0f}%", s["chosen"]["roof_pct"].get<double>()));
    } else {
      row.insert(row.end(), {"-", "-"});
    }
    if (s.contains("best")) {
      const json& b = s["best"];
      std::string knobs;
      for (auto it = b["knobs"].begin(); it != b["knobs"].end(); ++it)
        knobs += fmt::format(" {}={}", it.key(), it.value().dump());
      row.push_back(fmt::format("candidate {} ({}{}), {}", b["candidate"].get<int64_t>(),
                                str(b["family"]), knobs, secs(b["median_s"])));
    } else {
      row.push_back("-");
    }
    const std::string verdict = s.value("verdict", std::string());
    row.push_back(verdict == "the chosen kernel" ? "the same kernel"
                  : verdict == "faster"
                      ? fmt::format("{:.2f}x", s["chosen_over_best"].get<double>())
                  : verdict == "inconclusive"
                      ? fmt::format("{:.2f}x, inconclusive (within the p20-p80 spread)",
                                    s["chosen_over_best"].get<double>())
                      : "-");
    rows.push_back(std::move(row));
  }
  return rows;
}

constexpr const char* kShapesNote =
    "The chosen kernel minimizes the weighted geometric mean of the shapes' median times; "
    "beside it, the run's fastest kernel at each shape alone (`kevo run --per-shape DIR` writes "
    "those). Per-shape figures are the search's measurements.";

std::vector<std::vector<std::string>> time_rows(const json& r) {
  const json& t = r["time"];
  const double clock = t["elapsed_s"].is_number() ? t["elapsed_s"].get<double>() : 0;
  auto row = [&](const std::string& stage, const json& v, const std::string& what) {
    std::string share = v.is_number() && clock > 0 ? pct(v.get<double>() / clock) : "-";
    return std::vector<std::string>{stage, secs(v), share, what};
  };
  return {
      row("compile", t["compile_s"],
          fmt::format("sum over the run's {} measurements (compiles run "
                      "in parallel)",
                      t["evaluations"].dump())),
      row("run", t["run_s"], "checks and timing, summed over the same measurements"),
      row("searcher", t["searcher_s"], "strategy and synthesizers (the last process of the run)"),
      row("store", t["store_s"], "writes and look-ups in the store (likewise)"),
      row("wall", t["wall_s"], "the last process of the run, from start to end"),
      row("budget clock", t["elapsed_s"], "what the time budget counted, over every resume"),
  };
}

const std::vector<std::string> kBatchHeader = {
    "#",    "task",  "run",         "status",           "best", "kernel", "speedup over seed",
    "roof", "bound", "evaluations", "failed candidates"};

// A task's failed candidates by status, "none", or "-" where it has no run.
std::string failed_candidates(const json& failures) {
  if (!failures.is_object()) return "-";
  const std::string text = failure_counts_text(failures);
  return text.empty() ? "none" : text;
}

std::vector<std::vector<std::string>> batch_rows(const json& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : r["tasks"]) {
    std::string status = str(t["status"]);
    if (!str(t["detail"]).empty()) status += ": " + str(t["detail"]);
    rows.push_back({str(t["seq"]), str(t["task"]), str(t["run"]), status, secs(t["best_s"]),
                    t["family"].is_null() ? "-" : str(t["family"]) + " " + str(t["knobs_text"]),
                    times(t["speedup_over_seed"]), pct(t["roof_fraction"]), str(t["bound"]),
                    str(t["evaluations"]), failed_candidates(t["failures"])});
  }
  return rows;
}

const char* const kCss = R"css(
body { font-family: system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9em; background: #fff; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
table.facts th { width: 9em; }
pre { background: #fff; border: 1px solid #ddd; padding: 8px; overflow: auto; font-size: 0.85em;
      max-height: 24em; }
svg.plot { display: block; margin: 12px 0; background: #fff; border: 1px solid #ddd; }
.plot-row { display: flex; flex-wrap: wrap; gap: 12px; }
ul.lineage, ul.lineage ul { list-style: none; padding-left: 1.4em; }
ul.lineage ul li::before { content: "\2190 "; color: #888; }
.note { color: #666; font-size: 0.9em; }
)css";

std::string html_page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0}</title>\n<style>{1}</style>\n</head>\n<body>\n<main>\n<h1>{0}</h1>\n{2}"
      "</main>\n</body>\n</html>\n",
      xml_escape(title), kCss, body);
}

std::string md_image(const std::string& prefix, const std::vector<Plot>& plots,
                     const std::string& name, const std::string& alt) {
  if (!find_plot(plots, name)) return "";
  if (prefix.empty()) return "";
  return fmt::format("![{}]({}{}.svg)\n\n", alt, prefix, name);
}

// What the convergence curves are drawn from.
constexpr const char* kConvergenceNote =
    "Best so far by the search's own figures; where a run confirmed its best, its curve ends at "
    "the re-measured figure the report quotes (a step up where the search's figure did not hold).";

std::string md_plots_note(const std::string& prefix) {
  return prefix.empty() ? "*Plots left out: write the report to a file (`-o report.md`) to get "
                          "them as SVG files beside it, or use `--format html`.*\n\n"
                        : "";
}

// ---- run -----------------------------------------------------------------

std::string run_markdown(const json& r, const std::string& prefix) {
  const std::vector<Plot> plots = report_plots(r);
  std::string o = fmt::format("# kevo report: run {}, {}\n\n", r["run"]["id"].get<int64_t>(),
                              str(r["run"]["task"]));
  std::vector<std::vector<std::string>> facts;
  for (const auto& [k, v] : run_facts(r)) facts.push_back({k, v});
  o += md_table({"", ""}, facts) + "\n";
  o += "## Best kernel\n\n";
  if (r["best"].is_null()) {
    o += "No correct kernel was found.\n\n";
  } else {
    for (const auto& l : best_lines(r)) o += "- " + l + "\n";
    o += "\n```\n" + str(r["best"]["source"]) + "```\n\n";
  }
  if (!r.value("shapes", json::array()).empty())
    o += "## Per shape\n\n" + std::string(kShapesNote) + "\n\n" +
         md_table(kShapesHeader, shape_rows(r)) + "\n";
  o += "## Convergence\n\n" + std::string(kConvergenceNote) + "\n\n" + md_plots_note(prefix);
  o += md_image(prefix, plots, "convergence-evals", "best so far against evaluations");
  o += md_image(prefix, plots, "convergence-time", "best so far against wall time");
  o += "## Roofline\n\n" + md_plots_note(prefix);
  o += md_image(prefix, plots, "roofline", "roofline of the correct candidates");
  o += roofline_note(r) + "\n\n";
  o += "## Lineage of the best kernel\n\n";
  if (auto tree = lineage_tree(r))
    o += lineage_markdown(*tree, 0);
  else
    o += "No correct kernel, no lineage.\n";
  o += "\n## Failures\n\n";
  o += r["failures"].empty() ? "No failures.\n"
                             : md_table({"status", "count", "examples"}, failure_rows(r));
  o += "\n## Top candidates\n\n";
  o += r["top"].empty() ? "No correct candidates.\n" : md_table(kTopHeader, top_rows(r));
  if (!r.value("did_not_hold", json::array()).empty())
    o += "\n## Figures that did not hold\n\n" + unheld_intro(r) + "\n\n" +
         md_table(kUnheldHeader, unheld_rows(r));
  o += "\n## Time per stage\n\n";
  o += md_table({"stage", "time", "share of the budget clock", "what"}, time_rows(r));
  return o;
}

std::string run_html(const json& r) {
  const std::vector<Plot> plots = report_plots(r);
  std::string o = "<section id=\"summary\">\n";
  o += "<table class=\"facts\"><tbody>\n";
  for (const auto& [k, v] : run_facts(r))
    o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(k), xml_escape(v));
  o += "</tbody></table>\n</section>\n";
  o += "<section id=\"best\">\n<h2>Best kernel</h2>\n";
  if (r["best"].is_null()) {
    o += "<p>No correct kernel was found.</p>\n";
  } else {
    o += "<ul>\n";
    for (const auto& l : best_lines(r)) o += "<li>" + xml_escape(l) + "</li>\n";
    o += "</ul>\n<details open><summary>Source, knobs baked in</summary>\n<pre><code>" +
         xml_escape(str(r["best"]["source"])) + "</code></pre>\n</details>\n";
  }
  if (!r.value("shapes", json::array()).empty())
    o += "</section>\n<section id=\"shapes\">\n<h2>Per shape</h2>\n<p class=\"note\">" +
         xml_escape(kShapesNote) + "</p>\n" + html_table("shapes", kShapesHeader, shape_rows(r));
  o += "</section>\n<section id=\"convergence\">\n<h2>Convergence</h2>\n<p class=\"note\">" +
       std::string(kConvergenceNote) + "</p>\n<div class=\"plot-row\">\n";
  for (const char* name : {"convergence-evals", "convergence-time"})
    if (const Plot* p = find_plot(plots, name)) o += p->svg;
  o += "</div>\n</section>\n<section id=\"roofline\">\n<h2>Roofline</h2>\n";
  if (const Plot* p = find_plot(plots, "roofline")) o += p->svg;
  o += "<p class=\"note\">" + xml_escape(roofline_note(r)) + "</p>\n</section>\n";
  o += "<section id=\"lineage\">\n<h2>Lineage of the best kernel</h2>\n";
  if (auto tree = lineage_tree(r))
    o += "<ul class=\"lineage\">\n" + lineage_html(*tree) + "</ul>\n";
  else
    o += "<p>No correct kernel, no lineage.</p>\n";
  o += "</section>\n<section id=\"failures\">\n<h2>Failures</h2>\n";
  o += r["failures"].empty()
           ? "<p>No failures.</p>\n"
           : html_table("failures", {"status", "count", "examples"}, failure_rows(r));
  o += "</section>\n<section id=\"top\">\n<h2>Top candidates</h2>\n";
  o += r["top"].empty() ? "<p>No correct candidates.</p>\n"
                        : html_table("top", kTopHeader, top_rows(r));
  if (!r.value("did_not_hold", json::array()).empty())
    o += "</section>\n<section id=\"did-not-hold\">\n<h2>Figures that did not hold</h2>\n<p>" +
         xml_escape(unheld_intro(r)) + "</p>\n" +
         html_table("did-not-hold", kUnheldHeader, unheld_rows(r));
  o += "</section>\n<section id=\"time\">\n<h2>Time per stage</h2>\n";
  o += html_table("time", {"stage", "time", "share of the budget clock", "what"}, time_rows(r));
  o += "</section>\n";
  return html_page(
      fmt::format("kevo report: run {}, {}", r["run"]["id"].get<int64_t>(), str(r["run"]["task"])),
      o);
}

// ---- batch ---------------------------------------------------------------

std::vector<std::pair<std::string, std::string>> batch_facts(const json& r) {
  const json& b = r["batch"];
  return {{"batch", fmt::format("{} ({})", b["id"].get<int64_t>(), str(b["name"]))},
          {"suite", str(b["suite"])},
          {"status", str(b["status"])},
          {"when", fmt::format("{} to {}", str(b["started_at"]),
                               str(b["finished_at"]).empty() ? "-" : str(b["finished_at"]))}};
}

std::string batch_markdown(const json& r, const std::string& prefix) {
  const std::vector<Plot> plots = report_plots(r);
  std::string o = fmt::format("# kevo report: batch {}, {}\n\n", r["batch"]["id"].get<int64_t>(),
                              str(r["batch"]["name"]));
  std::vector<std::vector<std::string>> facts;
  for (const auto& [k, v] : batch_facts(r)) facts.push_back({k, v});
  o += md_table({"", ""}, facts) + "\n## Tasks\n\n" + md_table(kBatchHeader, batch_rows(r));
  o += "\nEach task's own report: `kevo report RUN`.\n\n## Convergence\n\n" + md_plots_note(prefix);
  o += md_image(prefix, plots, "convergence-evals", "best so far against evaluations, per task");
  return o;
}

std::string batch_html(const json& r) {
  const std::vector<Plot> plots = report_plots(r);
  std::string o = "<section id=\"summary\">\n<table class=\"facts\"><tbody>\n";
  for (const auto& [k, v] : batch_facts(r))
    o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(k), xml_escape(v));
  o += "</tbody></table>\n</section>\n<section id=\"tasks\">\n<h2>Tasks</h2>\n";
  o += html_table("tasks", kBatchHeader, batch_rows(r));
  o += "<p class=\"note\">Each task's own report: <code>kevo report RUN</code>.</p>\n</section>\n";
  o += "<section id=\"convergence\">\n<h2>Convergence</h2>\n";
  if (const Plot* p = find_plot(plots, "convergence-evals")) o += p->svg;
  o += "</section>\n";
  return html_page(fmt::format("kevo report: batch {}, {}", r["batch"]["id"].get<int64_t>(),
                               str(r["batch"]["name"])),
                   o);
}

}  // namespace

std::string failure_counts_text(const json& counts) {
  std::vector<std::pair<int64_t, std::string>> items;
  if (counts.is_object())
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it.value().is_number_integer() && it.value().get<int64_t>() > 0)
        items.emplace_back(it.value().get<int64_t>(), it.key());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (const auto& [n, status] : items)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, status);
  return out;
}

std::vector<Plot> report_plots(const json& report) {
  std::vector<Plot> plots = convergence_plots(report);
  if (report["kind"] == "run")
    if (auto p = roofline_plot(report)) plots.push_back(std::move(*p));
  return plots;
}

std::string render_markdown(const json& report, const std::string& plot_prefix) {
  return report["kind"] == "batch" ? batch_markdown(report, plot_prefix)
                                   : run_markdown(report, plot_prefix);
}

std::string render_html(const json& report) {
  return report["kind"] == "batch" ? batch_html(report) : run_html(report);
}

}  // namespace kevo
