// Bench rows' JSON numbers (bench/json_number.hpp): the shortest text that reads back
// to the same double, and null where JSON has no number.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "../bench/json_number.hpp"

namespace {

using fairpool::bench::json_number;

TEST(BenchJson, NumbersKeepEveryDigitTheyNeed) {
    EXPECT_EQ(json_number(0), "0");
    EXPECT_EQ(json_number(1833), "1833");
    EXPECT_EQ(json_number(0.1), "0.1");
    EXPECT_EQ(json_number(123456789.25), "123456789.25");  // %.6g wrote 1.23457e+08
    EXPECT_EQ(json_number(-2.5e-7), "-2.5e-07");
    EXPECT_EQ(std::stod(json_number(1.0 / 3.0)), 1.0 / 3.0);
}

TEST(BenchJson, NonFiniteNumbersAreNull) {
    EXPECT_EQ(json_number(std::numeric_limits<double>::quiet_NaN()), "null");
    EXPECT_EQ(json_number(std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(json_number(-std::numeric_limits<double>::infinity()), "null");
}

}  // namespace
