#pragma once
// The order of a recording's segment files. A recorder names them segment-00000000.trace,
// segment-00000001.trace, …, with more digits past 99999999, so segment-100000000.trace
// comes after segment-99999999.trace although it sorts before it as a string. Sorting by
// this key puts them in segment order: a segment-N.trace name with N padded to 20 digits;
// any other name is its own key.
#include <string>
#include <string_view>

namespace fairpool::trace {

inline std::string segment_order_key(const std::string& file_name) {
    constexpr std::string_view prefix = "segment-", suffix = ".trace";
    if (file_name.size() <= prefix.size() + suffix.size() || !file_name.starts_with(prefix) ||
        !file_name.ends_with(suffix))
        return file_name;
    const std::string number = file_name.substr(prefix.size(), file_name.size() - prefix.size() - suffix.size());
    if (number.size() > 20 || number.find_first_not_of("0123456789") != std::string::npos) return file_name;
    return std::string(prefix) + std::string(20 - number.size(), '0') + number + std::string(suffix);
}

}  // namespace fairpool::trace
