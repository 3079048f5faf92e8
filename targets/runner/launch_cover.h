// The launch cover of a GPU runner's timing: a GPU sleep queued after the L2
// flush and before the start event, so that the GPU stays busy until the
// call has reached it instead of idling inside the sample.
//
// A call is hidden with room to spare when flush + cover >= 2 x its host
// time + 20 us (the flush's and the start event's enqueues, and the launch's
// way to the GPU, come on top of the call). The cover starts from the
// warm-up's slowest tenth of calls (a median hides the slow tail that left
// one evaluation's samples idle and the next one's not); a sample whose call
// was not hidden is taken again under a cover grown to fit it, at most
// kRetakes times an evaluation, never more than one for every ten samples
// kept (and one to begin with), and up to kMaxCoverUs. A kernel that holds
// the host on purpose during its slow calls can thus drop at most about one
// sample in ten. A fixed cover (the user's KEVO_CUDA_COVER_US) is never
// changed: its unhidden samples are kept and counted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kevo {

class LaunchCover {
 public:
  static constexpr int kRetakes = 32;
  static constexpr double kMaxCoverUs = 2000;

  // `warm_host_us`: the warm-up calls' host times; `fixed_us` < 0 for an
  // automatic cover.
  LaunchCover(double flush_us, std::vector<double> warm_host_us, double fixed_us)
      : flush_us_(flush_us), automatic_(fixed_us < 0) {
    if (!automatic_) {
      cover_us_ = fixed_us;
      return;
    }
    double slow = 0;
    if (!warm_host_us.empty()) {
      std::sort(warm_host_us.begin(), warm_host_us.end());
      slow = warm_host_us[std::min(warm_host_us.size() - 1, warm_host_us.size() * 9 / 10)];
    }
    cover_us_ = needed(slow);
  }

  double cover_us() const { return cover_us_; }
  int retaken() const { return retaken_; }
  bool hides(double host_us) const { return 2 * host_us + 20 <= flush_us_ + cover_us_; }

  // A sample whose call held the host `host_us`, after `kept` samples were
  // kept: true when it must be taken again (the cover has grown to hide it),
  // false when it is kept.
  bool take_again(double host_us, size_t kept) {
    if (hides(host_us) || !automatic_ || retaken_ >= kRetakes ||
        static_cast<size_t>(retaken_) > kept / 10 || needed(host_us) <= cover_us_)
      return false;
    cover_us_ = needed(host_us);
    ++retaken_;
    return true;
  }

 private:
  double needed(double host_us) const {
    return std::min(kMaxCoverUs, std::max(0.0, 2 * host_us + 20 - flush_us_));
  }

  double flush_us_;
  bool automatic_;
  double cover_us_ = 0;
  int retaken_ = 0;
};

}  // namespace kevo
