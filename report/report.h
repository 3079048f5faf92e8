// Reports of what a search found, for the people who read them the morning
// after: the data of a search run or of a batch, gathered from the store
// (that data is the JSON format), and its rendering as Markdown or as one
// self-contained HTML page with inline SVG plots.
//
// A run's report: the best kernel (source with its knobs baked in), its time
// with spread, speedups over the best seed and the naive family, fraction of
// the measured roof; convergence (best so far against evaluations and
// against wall time, one line per strategy: this run and the other search
// runs of the same task); a roofline of every correct candidate; the best
// kernel's lineage; failures by status with examples; the top candidates
// with their diagnoses; where the time went. A batch's report: each task's
// outcome and their convergence side by side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kevo {

class Store;

// The report of search run `run` ("kind": "run"); `top_k` candidates in the
// top table. Throws UserError when the store has no such run or it is not a
// search (or replay) run.
nlohmann::json run_report(Store& store, int64_t run, int top_k = 10);
// The report of batch `batch` ("kind": "batch"). Throws UserError when there
// is no such batch.
nlohmann::json batch_report(Store& store, int64_t batch);

// The GPU's clocks over a run's evaluations, as each runner read them at the
// end of its timing: {"evaluations", "with_throttle", "throttled",
// "throttle_mask", "sm_mhz": {"min", "median", "max"} or null}; null when no
// evaluation has a GPU's state (a CPU run).
nlohmann::json machine_over_run(Store& store, int64_t run);

// Counts by status as text, most first: "2 mismatch, 1 compile_error"
// ("" for none). Statuses whose count is not a positive number are left out.
std::string failure_counts_text(const nlohmann::json& counts);

struct Plot {
  std::string name;  // "convergence-evals", "convergence-time", "roofline"
  std::string svg;   // <svg id="plot-NAME" ...>
};
// The plots of a report, in the order it shows them.
std::vector<Plot> report_plots(const nlohmann::json& report);

// Markdown with the report's sections. With `plot_prefix`, each plot is an
// image "PREFIX<name>.svg" (the caller writes report_plots() there, beside
// the Markdown); without, plots are left out with a note saying so.
std::string render_markdown(const nlohmann::json& report, const std::string& plot_prefix);
// One HTML page: inline CSS and SVG, no script, nothing fetched.
std::string render_html(const nlohmann::json& report);

}  // namespace kevo
