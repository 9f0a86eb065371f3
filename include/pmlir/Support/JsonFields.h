//===- JsonFields.h - Checks of the fields of a JSON settings file -*- C++ -*-===//
//
// Part of pmlir.
//
// The checks every JSON file of settings (a topology, a device profile)
// makes of its fields, worded once: a key it does not know (a misspelt one
// would leave its number out unseen) and a number outside its bounds.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_JSONFIELDS_H
#define PMLIR_SUPPORT_JSONFIELDS_H

#include <nlohmann/json.hpp>

#include <iomanip>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pmlir {

/// A JSON parser callback that keeps the first key found twice in one
/// object in `duplicate` (nlohmann's parser keeps the last silently): two
/// entries of one tensor, or two values of one setting, are a corrupt
/// file, not a choice.
inline nlohmann::json::parser_callback_t duplicateKeyFinder(std::string &duplicate) {
  auto open = std::make_shared<std::vector<std::set<std::string>>>();
  return [open, &duplicate](int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start)
      open->emplace_back();
    else if (event == Event::object_end && !open->empty())
      open->pop_back();
    else if (event == Event::key && !open->empty() &&
             !open->back().insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
}

/// "has the key 'K', which is none of 'a', 'b', 'c'" for the first key of
/// `object` outside `known` (strings); nullopt where every key is known.
template <typename Keys>
std::optional<std::string> unknownKey(const nlohmann::json &object, const Keys &known) {
  for (auto &[key, value] : object.items()) {
    bool isKnown = false;
    std::string list;
    for (const auto &k : known) {
      isKnown = isKnown || key == k;
      list += (list.empty() ? "'" : ", '") + std::string(k) + "'";
    }
    if (!isKnown)
      return "has the key '" + key + "', which is none of " + list;
  }
  return std::nullopt;
}

/// "must be LEAST to MOST, not V" for a number `value` outside [least,
/// most]; nullopt inside. `least` is shown as 0 where 0 is allowed.
inline std::optional<std::string> outsideRange(const nlohmann::json &value, double least,
                                               double most, bool allowZero = false) {
  double v = value.get<double>();
  if ((allowZero && v == 0) || (v >= least && v <= most))
    return std::nullopt;
  std::ostringstream text;
  text << "must be " << std::setprecision(10) << (allowZero ? 0 : least) << " to " << most
       << ", not " << value.dump();
  return text.str();
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_JSONFIELDS_H
