// The candidate tree of a run: a DAG (crossover joins two parents) held as a
// Boost.Graph adjacency list, built as the run grows and rebuilt from the
// store's candidates and lineage, exportable as Graphviz DOT.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "core/eval_result.h"

namespace kevo {

class Store;

struct TreeNode {
  int64_t candidate = 0;
  std::string family;
  std::string knobs;        // "A=1 B=2"
  std::string synthesizer;  // how it was made
  bool evaluated = false;
  Status status = Status::ok;
  double seconds = std::numeric_limits<double>::infinity();  // median when ok
  // Where the run measured it again at the end: its confirmation's status and
  // median (the figure reports quote for it); empty status where it was not.
  std::string confirm_status;
  double confirmed_s = std::numeric_limits<double>::quiet_NaN();
};

class CandidateTree {
 public:
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, TreeNode>;
  using Vertex = Graph::vertex_descriptor;

  // Adds a node with edges from each known parent.
  void add(const TreeNode& node, const std::vector<int64_t>& parents);
  void set_result(int64_t candidate, Status status, double seconds);

  size_t size() const { return boost::num_vertices(g_); }
  const TreeNode* find(int64_t candidate) const;
  std::vector<int64_t> parents(int64_t candidate) const;
  // The candidate and all its ancestors, nearest first (each once).
  std::vector<int64_t> lineage(int64_t candidate) const;
  const Graph& graph() const { return g_; }

  // Graphviz DOT: a node per candidate (family, knobs, time or status), an
  // edge per parent; the lineage of `highlight` drawn bold.
  void write_dot(std::ostream& out, int64_t highlight = 0) const;

  // The tree of `run` as the store holds it, each node with the measurement the
  // search took (the one it reused, else its first), not a confirmation round.
  static CandidateTree load(Store& store, int64_t run);

 private:
  Graph g_;
  std::map<int64_t, Vertex> by_candidate_;
};

}  // namespace kevo
