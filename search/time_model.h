// A cheap model of a kernel's time over its knobs, for the strategies that
// choose among points by prediction (surrogate, and mcts among the children
// an expansion offers): a point's log-time is predicted by the
// distance-weighted mean of its k nearest measured points, with an
// uncertainty that grows with the distance to the nearest one.
//
// Features: a family's one-hot, and each knob's value as its rank among the
// knob's declared values scaled to [0, 1] (-0.5 where the family lacks the
// knob), so that a step of one value is a step whatever the values are. A
// family or knob that appeared after the model was made (a synthesizer wrote
// it) has no dimension of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/space.h"
#include "search/observation.h"

namespace kevo {

class TimeModel {
 public:
  // `space` may be null (a strategy built only to check its parameters): the
  // model then has no features.
  TimeModel(const SearchSpace* space, int64_t neighbours);

  std::vector<double> features(const Point& p) const;
  // A result: log of its median when ok; a failure counts as slower than the
  // slowest correct point.
  void add(const Point& p, const Observation& o);
  size_t size() const { return measured_.size(); }

  struct Guess {
    double mu = 0;     // predicted log-time
    double sigma = 1;  // its uncertainty
  };
  // At features x; `believed` are points counted as measured at a value (a
  // batch's earlier picks at their prediction).
  Guess predict(const std::vector<double>& x,
                const std::vector<std::pair<std::vector<double>, double>>& believed = {}) const;

 private:
  struct Measured {
    std::vector<double> x;
    double y;
    bool failed;
  };
  const SearchSpace* space_;
  size_t neighbours_;
  std::map<std::string, size_t> knob_index_;
  size_t families_ = 0, dims_ = 0;
  std::vector<Measured> measured_;
  double worst_, best_;
};

}  // namespace kevo
