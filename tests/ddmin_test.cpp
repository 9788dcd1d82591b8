// Delta debugging (tools/replay/ddmin.hpp): the result still fails, and it is
// 1-minimal — removing any single element makes it pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "ddmin.hpp"

namespace fairpool::replay {
namespace {

bool contains(const std::vector<int>& items, int x) { return std::find(items.begin(), items.end(), x) != items.end(); }

TEST(ddmin, finds_the_three_elements_a_failure_needs_among_thousands) {
    std::vector<int> items(5000);
    std::iota(items.begin(), items.end(), 0);
    int calls = 0;
    const std::function<bool(const std::vector<int>&)> fails = [&](const std::vector<int>& s) {
        ++calls;
        return contains(s, 17) && contains(s, 2500) && contains(s, 4999);
    };
    EXPECT_EQ(ddmin(items, fails), (std::vector<int>{17, 2500, 4999}));
    EXPECT_LT(calls, 400);
}

TEST(ddmin, keeps_order_dependent_failures_in_order) {
    std::vector<int> items(300);
    std::iota(items.begin(), items.end(), 0);
    // Fails when some element divisible by 7 comes before 150 and 299 is present.
    const std::function<bool(const std::vector<int>&)> fails = [](const std::vector<int>& s) {
        const auto first7 = std::find_if(s.begin(), s.end(), [](int x) { return x % 7 == 0 && x > 0; });
        const auto at150 = std::find(s.begin(), s.end(), 150);
        return first7 != s.end() && at150 != s.end() && first7 < at150 && contains(s, 299);
    };
    const auto result = ddmin(items, fails);
    ASSERT_TRUE(fails(result));
    EXPECT_EQ(result.size(), 3u);
    for (std::size_t i = 0; i < result.size(); ++i) {
        auto without = result;
        without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
        EXPECT_FALSE(fails(without)) << "element " << result[i] << " was removable";
    }
}

TEST(ddmin, a_single_failing_element_is_found) {
    std::vector<int> items{1, 2, 3, 4, 5, 6, 7};
    const std::function<bool(const std::vector<int>&)> fails = [](const std::vector<int>& s) { return contains(s, 6); };
    EXPECT_EQ(ddmin(items, fails), (std::vector<int>{6}));
}

}  // namespace
}  // namespace fairpool::replay
