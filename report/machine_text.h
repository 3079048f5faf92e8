// The state of the machine stored with an evaluation (Store::machine_state:
// clocks, temperatures, power, throttling, load), in words: kevo explain's
// machine line and what kevo run's drift line says moved.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kevo {

// One state, only the figures it has: "SM clock 1980 MHz, memory clock 3201
// MHz, GPU 41 C, HBM 52 C, 355 W, not throttled" on a GPU, "load 1.02, CPU
// clock 2600 MHz" on a CPU. `state` maps metric -> value.
std::string machine_text(const nlohmann::json& state);

// Two states, only the figures both have: "SM clock 1980 -> 1980 MHz, HBM
// 45 -> 61 C, 350 -> 362 W"; empty when they share none.
std::string machine_change_text(const nlohmann::json& before, const nlohmann::json& after);

// NVML's clock-event reasons (machine.throttle's bits) in words, for a
// reader: 0x4 -> "the software power cap", 0x24 -> "the software power cap,
// software thermal slowdown"; bits without a name as "mask 0x...".
std::string throttle_reasons_text(uint64_t mask);

}  // namespace kevo
