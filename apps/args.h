// A small command-line parser shared by the sub-commands: `--name value`, `--name=value`,
// repeatable options, boolean flags (`--x` / `--no-x`), positional arguments, generated --help.
// As vLLM's argparse: `--a_b` is `--a-b`, short aliases (`-tp 2`, `-O3`), options taking one or
// more values (`--served-model-name a b`, argparse's nargs='+') and an optional value
// (`--hf-token [TOKEN]`). Unknown options are an error naming the option; a missing value names
// the option too.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace locr::app {

class Args {
 public:
  Args(std::string command, std::string summary) : command_(std::move(command)), summary_(std::move(summary)) {}

  // Declarations (before parse).
  void option(const std::string& name, const std::string& help, const std::string& metavar = "VALUE");
  void repeated(const std::string& name, const std::string& help, const std::string& metavar = "VALUE");
  void flag(const std::string& name, const std::string& help);
  // One or more values after the option, up to the next argument starting with '-'; the option
  // may also be repeated. get_all() returns them all.
  void values(const std::string& name, const std::string& help, const std::string& metavar = "VALUE");
  // A value that may be left out (then get() returns `implicit`).
  void optional_value(const std::string& name, const std::string& help, const std::string& implicit);
  // `-short` (one dash) for the declared option `--name`.
  void alias(const std::string& short_name, const std::string& name);
  void positional(const std::string& name, const std::string& help, bool required = true);

  // Parses argv (argv[0] = the command name). Returns false if --help was printed.
  // Throws locr::Error(kInvalidArgument) on bad usage.
  bool parse(int argc, char** argv);

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& def = "") const;
  std::optional<std::string> maybe(const std::string& name) const;
  int get_int(const std::string& name, int def) const;
  double get_double(const std::string& name, double def) const;
  bool get_flag(const std::string& name, bool def = false) const;
  std::vector<std::string> get_all(const std::string& name) const;
  std::string help() const;
  // The declared option and flag names (without dashes), in declaration order.
  const std::vector<std::string>& names() const { return spec_order_; }
  // How a declared name takes values: "flag" (--x / --no-x), "values" (one or more, or repeated),
  // "value" (exactly one, or optional); "" when not declared.
  std::string kind(const std::string& name) const;

 private:
  struct Spec {
    std::string help, metavar;
    bool is_flag = false, is_repeated = false, is_multi = false, is_optional = false;
    std::string implicit;
  };
  std::map<std::string, std::string> aliases_;
  std::string command_, summary_;
  std::map<std::string, Spec> specs_;
  std::vector<std::string> spec_order_;
  std::vector<std::pair<std::string, bool>> positional_names_;
  std::vector<std::pair<std::string, std::string>> positional_help_;
  std::map<std::string, std::vector<std::string>> values_;
};

}  // namespace locr::app
