#include "key_flags.h"

namespace acmetrace::apps {

KeyFlags& KeyFlags::Option(std::string name, std::string key, const std::string& help) {
  Entry& e = entries_.emplace_back();
  e.name = std::move(name);
  e.key = std::move(key);
  cmd_->add_option(e.name, e.value, help + " [" + e.key + "]");
  return *this;
}

KeyFlags& KeyFlags::Flag(std::string name, std::string key, const std::string& help) {
  Entry& e = entries_.emplace_back();
  e.name = std::move(name);
  e.key = std::move(key);
  e.is_flag = true;
  cmd_->add_flag(e.name, e.on, help + " [" + e.key + "]");
  return *this;
}

KeyFlags& KeyFlags::AlsoSets(std::string key, std::string value) {
  entries_.back().also.emplace_back(std::move(key), std::move(value));
  return *this;
}

bool KeyFlags::given(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return e.given();
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> KeyFlags::Overrides() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Entry& e : entries_) {
    if (!e.given()) continue;
    out.emplace_back(e.key, e.is_flag ? "true" : e.value);
    out.insert(out.end(), e.also.begin(), e.also.end());
  }
  return out;
}

}  // namespace acmetrace::apps
