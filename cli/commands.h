// The subcommands of kevo; each parses its own arguments and returns the
// process exit status. User errors are thrown as UserError and printed by main.
#pragma once

#include <string>
#include <vector>

namespace kevo::cli {

using Argv = std::vector<std::string>;

int cmd_eval(const Argv& args);
int cmd_calibrate(const Argv& args);
int cmd_query(const Argv& args);
int cmd_targets(const Argv& args);
int cmd_operators(const Argv& args);
int cmd_knobs(const Argv& args);
int cmd_run(const Argv& args);
int cmd_tree(const Argv& args);
int cmd_bench(const Argv& args);
int cmd_kb(const Argv& args);
int cmd_export(const Argv& args);
int cmd_compare(const Argv& args);
int cmd_explain(const Argv& args);
int cmd_batch(const Argv& args);
int cmd_report(const Argv& args);
int cmd_worker(const Argv& args);

}  // namespace kevo::cli
