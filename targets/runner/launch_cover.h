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
//
// The automatic cover also rests the GPU: flush + cover at least kRestRatio
// times the call (the warm-up's median call, host and wait), so a call holds
// the GPU at most a third of each sample. A long compute-bound kernel timed
// back to back heats the GPU and its clock sags with the duty cycle, which
// then depends on the candidate and the ones before it: at 4096^3 on an H100
// (about 180 us a call, 3 rounds in alternating order) a cover of a few
// microseconds read the SM clock at 1725-1860 MHz, was slower in 2 of the 3
// rounds (1.6% by the median of the rounds) and spread p80/p20 1.03-1.07; a
// 300 us cover read 1965-1980 MHz and spread 1.02-1.03 (bench/results/
// 2026-12-06-h100-decode-gemm-11.md). Short calls need no rest: the flush
// covers twice theirs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kevo {

class LaunchCover {
 public:
  static constexpr int kRetakes = 32;
  static constexpr double kMaxCoverUs = 2000;
  static constexpr double kRestRatio = 2;

  // `warm_host_us`: the warm-up calls' host times; `fixed_us` < 0 for an
  // automatic cover; `call_us`: the warm-up's median call (launch and wait).
  LaunchCover(double flush_us, std::vector<double> warm_host_us, double fixed_us, double call_us = 0)
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
    cover_us_ = std::max(needed(slow), std::min(kMaxCoverUs, std::max(0.0, kRestRatio * call_us - flush_us)));
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
