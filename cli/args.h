// Command-line parsing for kevo's subcommands: declared options, generated
// --help, and a one-line error for anything else.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kevo::cli {

struct Option {
  std::string name;     // "--db"
  std::string metavar;  // "PATH"; empty for a flag
  std::string help;
  bool repeatable = false;
};

class Args {
 public:
  // `usage` is the line after "usage: kevo ", e.g. "eval --task TASK KERNEL".
  Args(std::string command, std::string usage, std::string summary, std::vector<Option> options,
       size_t min_positional, size_t max_positional);

  // Throws UserError on an unknown option, a missing value or a wrong number
  // of positional arguments (not when --help was given).
  void parse(const std::vector<std::string>& argv);

  bool help() const { return help_; }
  std::string help_text() const;

  bool flag(const std::string& name) const;
  std::optional<std::string> value(const std::string& name) const;
  std::vector<std::string> values(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::string command_, usage_, summary_;
  std::vector<Option> options_;
  size_t min_pos_, max_pos_;
  bool help_ = false;
  std::map<std::string, std::vector<std::string>> seen_;
  std::vector<std::string> positional_;
};

// Options most commands share.
Option db_option();
Option json_option();

}  // namespace kevo::cli
