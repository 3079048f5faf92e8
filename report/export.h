// A run's results as a file: kevo's own export JSON (what `kevo compare`
// reads) and the T4 results schema of the auto-tuning community, which Kernel
// Tuner and KTT read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/roof.h"
#include "core/store.h"

namespace kevo {

// The "format" key of kevo's export, and its version.
inline constexpr const char* kExportFormat = "kevo-export";
inline constexpr int kExportVersion = 1;

// The results of `runs` as one kevo export document:
//   {"format", "format_version", "kevo_version", "exported_at",
//    "runs": [{"run", "kind", "status", "started_at", "finished_at",
//              "task": {"name", "hash", "operator", "target", "dtype",
//                       "shapes", "bytes", "flops", "config"},
//              "host": {"hostname", "host_key", "cpu_model", "ncpu"},
//              "roof", "summary", "best",
//              "best_source": {"hash", "language", "origin", "text"} or null,
//              "candidates": [...]}]}
// Each candidate has its family, knobs, source hash, synthesizer, parents and
// lineage (itself first, up to the seed), status and detail, timing (median,
// p20, p80, mean, min, max and the raw per-call samples), roof fraction,
// bound, diagnosis and bottleneck; "confirmation" holds the re-measurement at
// the end of a search where there was one (its median round), "rounds" every
// such re-measurement ({"evaluation", "status", "median_s"}, each in a runner
// of its own: the independent rounds kevo compare judges a change against).
// Throws UserError for an unknown run.
nlohmann::json export_runs(Store& store, const std::vector<int64_t>& runs);

// One run of a kevo export (an element of "runs") in the T4 results schema.
nlohmann::json to_t4(const nlohmann::json& run);

// The roof an evaluation was judged against: the best figures of every
// calibration of the machine of roof `roof_id` up to that one (what
// roof_for() gave when it was measured). nullopt when the store has no such roof.
std::optional<Roof> roof_as_judged(Store& store, int64_t roof_id);

// Checks that `doc` is a kevo export this kevo reads; UserError naming
// `what` (a file name) and the key that is wrong otherwise.
void check_export(const nlohmann::json& doc, const std::string& what);

}  // namespace kevo
