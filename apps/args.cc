#include "apps/args.h"

#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace locr::app {

void Args::option(const std::string& name, const std::string& help, const std::string& metavar) {
  specs_[name] = {help, metavar, false, false, false, false, ""};
  spec_order_.push_back(name);
}
void Args::repeated(const std::string& name, const std::string& help, const std::string& metavar) {
  specs_[name] = {help, metavar, false, true, false, false, ""};
  spec_order_.push_back(name);
}
void Args::flag(const std::string& name, const std::string& help) {
  specs_[name] = {help, "", true, false, false, false, ""};
  spec_order_.push_back(name);
}
void Args::values(const std::string& name, const std::string& help, const std::string& metavar) {
  specs_[name] = {help, metavar + " ...", false, true, true, false, ""};
  spec_order_.push_back(name);
}
void Args::optional_value(const std::string& name, const std::string& help, const std::string& implicit) {
  Spec sp{help, "[VALUE]", false, false, false, true, implicit};
  specs_[name] = sp;
  spec_order_.push_back(name);
}
void Args::alias(const std::string& short_name, const std::string& name) { aliases_[short_name] = name; }
void Args::positional(const std::string& name, const std::string& help, bool required) {
  positional_names_.push_back({name, required});
  positional_help_.push_back({name, help});
}

std::string Args::help() const {
  std::string s = "usage: locr " + command_;
  for (const auto& [n, req] : positional_names_) s += req ? " " + n : " [" + n + "]";
  s += " [options]\n\n" + summary_ + "\n\n";
  for (const auto& [n, h] : positional_help_) s += "  " + n + "\n      " + h + "\n";
  s += "options:\n";
  for (const auto& n : spec_order_) {
    const Spec& sp = specs_.at(n);
    s += "  --" + n + (sp.is_flag ? "" : " " + sp.metavar) + (sp.is_repeated ? " (repeatable)" : "") + "\n      " +
         sp.help + "\n";
  }
  return s;
}

bool Args::parse(int argc, char** argv) {
  size_t next_positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.size() > 1 && a[0] == '-' && a[1] != '-' && !aliases_.empty()) {
      // A short alias: `-tp 2`, `-tp=2`, or a one-letter alias with its value attached (`-O3`).
      std::string s = a.substr(1), value;
      bool has_value = false;
      const auto eq = s.find('=');
      if (eq != std::string::npos) {
        value = s.substr(eq + 1);
        s = s.substr(0, eq);
        has_value = true;
      }
      auto al = aliases_.find(s);
      if (al == aliases_.end() && !has_value && s.size() > 1) {
        al = aliases_.find(s.substr(0, 1));
        if (al != aliases_.end()) {
          value = s.substr(1);
          has_value = true;
        }
      }
      if (al == aliases_.end())
        fail(ErrorKind::kInvalidArgument, "unknown option ", a, " for `locr ", command_, "` (see --help)");
      a = "--" + al->second + (has_value ? "=" + value : "");
    }
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::string name = a.substr(2), value;
      bool has_value = false;
      const auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      for (char& c : name)
        if (c == '_') c = '-';  // vLLM's parser takes --max_model_len for --max-model-len
      auto it = specs_.find(name);
      if (it == specs_.end() && name.rfind("no-", 0) == 0) {
        auto neg = specs_.find(name.substr(3));
        if (neg != specs_.end() && neg->second.is_flag && !has_value) {
          values_[neg->first] = {"false"};
          continue;
        }
      }
      if (it == specs_.end())
        fail(ErrorKind::kInvalidArgument, "unknown option --", name, " for `locr ", command_, "` (see --help)");
      if (it->second.is_flag) {
        values_[name] = {has_value ? value : "true"};
        continue;
      }
      const auto next_is_value = [&] { return i + 1 < argc && !(argv[i + 1][0] == '-' && argv[i + 1][1] != '\0'); };
      if (it->second.is_optional && !has_value) {
        values_[name] = {next_is_value() ? std::string(argv[++i]) : it->second.implicit};
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc) fail(ErrorKind::kInvalidArgument, "option --", name, " needs a value");
        value = argv[++i];
      }
      if (it->second.is_repeated) values_[name].push_back(value);
      else values_[name] = {value};
      if (it->second.is_multi)
        while (next_is_value()) values_[name].push_back(argv[++i]);
      continue;
    }
    if (next_positional >= positional_names_.size())
      fail(ErrorKind::kInvalidArgument, "unexpected argument '", a, "' for `locr ", command_, "`");
    values_[positional_names_[next_positional++].first] = {a};
  }
  for (size_t i = next_positional; i < positional_names_.size(); ++i)
    if (positional_names_[i].second)
      fail(ErrorKind::kInvalidArgument, "missing argument ", positional_names_[i].first, " for `locr ", command_, "`");
  return true;
}

bool Args::has(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? def : it->second.back();
}

std::optional<std::string> Args::maybe(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  return get(name);
}

int Args::get_int(const std::string& name, int def) const {
  if (!has(name)) return def;
  const std::string v = get(name);
  char* end = nullptr;
  const long r = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end) fail(ErrorKind::kInvalidArgument, "--", name, " expects an integer, got '", v, "'");
  return static_cast<int>(r);
}

double Args::get_double(const std::string& name, double def) const {
  if (!has(name)) return def;
  const std::string v = get(name);
  char* end = nullptr;
  const double r = std::strtod(v.c_str(), &end);
  if (v.empty() || *end) fail(ErrorKind::kInvalidArgument, "--", name, " expects a number, got '", v, "'");
  return r;
}

bool Args::get_flag(const std::string& name, bool def) const {
  if (!has(name)) return def;
  const std::string v = get(name);
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  fail(ErrorKind::kInvalidArgument, "--", name, " expects true or false, got '", v, "'");
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::kind(const std::string& name) const {
  auto it = specs_.find(name);
  if (it == specs_.end()) return "";
  if (it->second.is_flag) return "flag";
  if (it->second.is_multi || it->second.is_repeated) return "values";
  return "value";
}

}  // namespace locr::app
