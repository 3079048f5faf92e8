#include "cli/args.h"

#include <fmt/format.h>

#include "core/error.h"

namespace kevo::cli {

Option db_option() {
  return {"--db", "PATH", "the SQLite store (default: $KEVO_DB or ./kevo.db)"};
}
Option json_option() { return {"--json", "", "machine-readable output on stdout"}; }

Args::Args(std::string command, std::string usage, std::string summary,
           std::vector<Option> options, size_t min_positional, size_t max_positional)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      summary_(std::move(summary)),
      options_(std::move(options)),
      min_pos_(min_positional),
      max_pos_(max_positional) {
  options_.push_back({"--help", "", "show this help"});
}

void Args::parse(const std::vector<std::string>& argv) {
  auto fail = [&](const std::string& what) {
    return UserError(fmt::format("kevo {}: {} (see kevo {} --help)", command_, what, command_));
  };
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    std::string name = a, inline_value;
    bool has_inline = false;
    if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    const Option* opt = nullptr;
    for (const auto& o : options_)
      if (o.name == name) opt = &o;
    if (!opt) throw fail(fmt::format("unknown option '{}'", name));
    if (opt->metavar.empty()) {
      if (has_inline) throw fail(fmt::format("option {} takes no value", name));
      seen_[name].push_back("");
    } else {
      std::string v;
      if (has_inline) {
        v = inline_value;
      } else {
        if (i + 1 >= argv.size()) throw fail(fmt::format("option {} needs a {}", name, opt->metavar));
        v = argv[++i];
      }
      if (!opt->repeatable && seen_.count(name))
        throw fail(fmt::format("option {} given twice", name));
      seen_[name].push_back(v);
    }
  }
  if (help_) return;
  if (positional_.size() < min_pos_)
    throw fail(fmt::format("missing argument{} (usage: kevo {})", min_pos_ > 1 ? "s" : "", usage_));
  if (positional_.size() > max_pos_)
    throw fail(fmt::format("unexpected argument '{}'", positional_[max_pos_]));
}

std::string Args::help_text() const {
  std::string s = fmt::format("usage: kevo {}\n\n{}\n", usage_, summary_);
  if (!options_.empty()) {
    s += "\noptions:\n";
    for (const auto& o : options_) {
      std::string left = o.metavar.empty() ? o.name : o.name + " " + o.metavar;
      s += fmt::format("  {:<22} {}{}\n", left, o.help, o.repeatable ? " (repeatable)" : "");
    }
  }
  return s;
}

bool Args::flag(const std::string& name) const { return seen_.count(name) > 0; }

std::optional<std::string> Args::value(const std::string& name) const {
  auto it = seen_.find(name);
  if (it == seen_.end() || it->second.empty()) return std::nullopt;
  return it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = seen_.find(name);
  return it == seen_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace kevo::cli
