#include "search/tree.h"

#include <cmath>
#include <deque>
#include <set>

#include <boost/graph/graphviz.hpp>
#include <fmt/format.h>

#include "core/store.h"
#include "eval/roofline.h"

namespace kevo {

void CandidateTree::add(const TreeNode& node, const std::vector<int64_t>& parents) {
  Vertex v = boost::add_vertex(node, g_);
  by_candidate_[node.candidate] = v;
  for (int64_t p : parents) {
    auto it = by_candidate_.find(p);
    if (it != by_candidate_.end()) boost::add_edge(it->second, v, g_);
  }
}

void CandidateTree::set_result(int64_t candidate, Status status, double seconds) {
  auto it = by_candidate_.find(candidate);
  if (it == by_candidate_.end()) return;
  TreeNode& n = g_[it->second];
  n.evaluated = true;
  n.status = status;
  n.seconds = seconds;
}

const TreeNode* CandidateTree::find(int64_t candidate) const {
  auto it = by_candidate_.find(candidate);
  return it == by_candidate_.end() ? nullptr : &g_[it->second];
}

std::vector<int64_t> CandidateTree::parents(int64_t candidate) const {
  std::vector<int64_t> out;
  auto it = by_candidate_.find(candidate);
  if (it == by_candidate_.end()) return out;
  for (auto [e, end] = boost::in_edges(it->second, g_); e != end; ++e)
    out.push_back(g_[boost::source(*e, g_)].candidate);
  return out;
}

std::vector<int64_t> CandidateTree::lineage(int64_t candidate) const {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  std::deque<int64_t> todo = {candidate};
  while (!todo.empty()) {
    int64_t c = todo.front();
    todo.pop_front();
    if (!seen.insert(c).second || !find(c)) continue;
    out.push_back(c);
    for (int64_t p : parents(c)) todo.push_back(p);
  }
  return out;
}

void CandidateTree::write_dot(std::ostream& out, int64_t highlight) const {
  std::set<int64_t> bold;
  if (highlight) {
    auto l = lineage(highlight);
    bold.insert(l.begin(), l.end());
  }
  auto label = [&](std::ostream& os, Vertex v) {
    const TreeNode& n = g_[v];
    std::string result = !n.evaluated                ? "not evaluated"
                         : n.status == Status::ok    ? format_seconds(n.seconds)
                                                     : std::string(status_name(n.status));
    // One figure per candidate: the re-measured one where there is one, marked.
    if (n.evaluated && n.status == Status::ok && !n.confirm_status.empty())
      result = n.confirm_status == "ok" && std::isfinite(n.confirmed_s)
                   ? fmt::format("{} confirmed (search {})", format_seconds(n.confirmed_s), result)
                   : fmt::format("{} when measured again (search {})", n.confirm_status, result);
    std::string text = fmt::format("#{} {}\\n{}\\n{} ({})", n.candidate, n.family, n.knobs,
                                   result, n.synthesizer);
    std::string style;
    if (bold.count(n.candidate)) style = ", penwidth=3";
    const char* color = !n.evaluated ? "gray" : n.status == Status::ok ? "black" : "red";
    os << fmt::format("[label=\"{}\", color={}, shape=box{}]", text, color, style);
  };
  auto edge = [&](std::ostream& os, Graph::edge_descriptor e) {
    if (bold.count(g_[boost::source(e, g_)].candidate) &&
        bold.count(g_[boost::target(e, g_)].candidate))
      os << "[penwidth=3]";
  };
  boost::write_graphviz(out, g_, label, edge);
}

CandidateTree CandidateTree::load(Store& store, int64_t run) {
  CandidateTree t;
  std::map<int64_t, std::vector<int64_t>> parents;
  for (const auto& [child, parent] : store.lineage(run)) parents[child].push_back(parent);
  const std::map<int64_t, std::vector<int64_t>> own = store.evaluations_of_run(run);
  for (const CandidateResult& r : store.results(run)) {
    TreeNode n;
    n.candidate = r.candidate.id;
    n.family = r.candidate.family;
    n.knobs = knobs_to_string(knobs_from_json(r.candidate.knobs_json));
    n.synthesizer = r.candidate.synthesizer;
    if (!r.status.empty()) {
      n.evaluated = true;
      n.status = parse_status(r.status).value_or(Status::crash);
    }
    if (r.median_s) n.seconds = *r.median_s;
    // Measured more than once: a confirmation (or a reused result's rounds).
    auto e = own.find(n.candidate);
    if (e != own.end() && (e->second.size() > 1 || r.candidate.reuses_evaluation))
      if (std::optional<int64_t> conf = store.confirming_evaluation(n.candidate))
        if (std::optional<EvalResult> again = store.evaluation(*conf)) {
          n.confirm_status = std::string(status_name(again->status));
          if (again->timing) n.confirmed_s = again->timing->median_s;
        }
    t.add(n, parents[n.candidate]);
  }
  return t;
}

}  // namespace kevo
