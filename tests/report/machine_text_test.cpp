// The machine's state stored with an evaluation, in words: only the figures
// that are there, throttling by its mask.
#include "report/machine_text.h"

#include <gtest/gtest.h>

namespace kevo {
namespace {

const nlohmann::json kGpu = {{"machine.sm_mhz", 1980},   {"machine.mem_mhz", 3201},
                             {"machine.gpu_temp_c", 41}, {"machine.mem_temp_c", 52},
                             {"machine.power_w", 355.4}, {"machine.throttle", 0}};

TEST(MachineText, ShowsWhatThereIs) {
  EXPECT_EQ(machine_text(kGpu),
            "SM clock 1980 MHz, memory clock 3201 MHz, GPU 41 C, HBM 52 C, 355 W, not throttled");
  EXPECT_EQ(machine_text({{"machine.load1", 1.02}, {"machine.cpu_mhz", 2600}}),
            "load 1.02, CPU clock 2600 MHz");
  EXPECT_EQ(machine_text({{"machine.power_w", 90}, {"machine.throttle", 4}}),
            "90 W, throttled (mask 0x4)");
  // A GPU evaluation has the host's figures too: after the GPU's.
  nlohmann::json both = kGpu;
  both["machine.load1"] = 0.4;
  EXPECT_EQ(machine_text(both),
            "SM clock 1980 MHz, memory clock 3201 MHz, GPU 41 C, HBM 52 C, 355 W, not throttled, "
            "load 0.40");
  // A figure this kevo does not know by name is still shown.
  EXPECT_EQ(machine_text({{"machine.fan_pct", 30}}), "machine.fan_pct 30");
  EXPECT_EQ(machine_text(nlohmann::json::object()), "");
}

TEST(MachineText, ThrottleReasonsInWords) {
  EXPECT_EQ(throttle_reasons_text(0x4), "the software power cap");
  EXPECT_EQ(throttle_reasons_text(0x24), "the software power cap, software thermal slowdown");
  EXPECT_EQ(throttle_reasons_text(0x48), "hardware slowdown, hardware thermal slowdown");
  // A bit this kevo has no name for is still shown.
  EXPECT_EQ(throttle_reasons_text(0x804), "the software power cap, mask 0x800");
  EXPECT_EQ(throttle_reasons_text(0), "");
}

TEST(MachineText, ClocksHeldOnlyWhereTheyWere) {
  const nlohmann::json steady = {{"evaluations", 10}, {"with_throttle", 10}, {"throttled", 0},
                                 {"throttle_mask", 0},
                                 {"sm_mhz", {{"min", 1950}, {"median", 1980}, {"max", 1980}}}};
  EXPECT_EQ(clocks_held_text(nullptr), "");
  EXPECT_EQ(clocks_held_text(steady), "");  // 1.5% apart, never throttled
  nlohmann::json capped = steady;
  capped["throttled"] = 7;
  capped["throttle_mask"] = 4;
  capped["sm_mhz"] = {{"min", 1620}, {"median", 1845}, {"max", 1980}};
  EXPECT_EQ(clocks_held_text(capped),
            "the GPU's clocks were held back (the software power cap) in 7 of 10 evaluations; "
            "SM clock 1620-1980 MHz (median 1845)");
  nlohmann::json moved = steady;  // no reason given, but the clock fell 10%
  moved["sm_mhz"]["min"] = 1782;
  EXPECT_EQ(clocks_held_text(moved),
            "the GPU's SM clock moved over the run; SM clock 1782-1980 MHz (median 1980)");
  nlohmann::json no_clock = capped;
  no_clock["sm_mhz"] = nullptr;
  EXPECT_NE(clocks_held_text(no_clock).find("; SM clock not read"), std::string::npos);
}

TEST(MachineText, ChangeShowsOnlyWhatBothHave) {
  nlohmann::json later = kGpu;
  later["machine.mem_temp_c"] = 61;
  later["machine.power_w"] = 362;
  later.erase("machine.mem_mhz");
  EXPECT_EQ(machine_change_text(kGpu, later),
            "SM clock 1980 -> 1980 MHz, GPU 41 -> 41 C, HBM 52 -> 61 C, 355 -> 362 W, "
            "not throttled both times");
  later["machine.throttle"] = 0x24;
  EXPECT_NE(machine_change_text(kGpu, later).find("not throttled -> throttled (mask 0x24)"),
            std::string::npos);
  EXPECT_EQ(machine_change_text({{"machine.load1", 0.4}}, {{"machine.load1", 2.1}}),
            "load 0.40 -> 2.10");
  EXPECT_EQ(machine_change_text({{"machine.load1", 0.4}}, {{"machine.sm_mhz", 1980}}), "");
}

}  // namespace
}  // namespace kevo
