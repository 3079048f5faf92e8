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

// What machine_over_run() found, in one sentence for a reader, where any
// evaluation was throttled or the SM clock moved by 5% or more: "the GPU's
// clocks were held back (the software power cap) in 59 of 75 evaluations;
// SM clock 1620-1980 MHz (median 1845)"; "" otherwise (and for null).
std::string clocks_held_text(const nlohmann::json& machine);

}  // namespace kevo
