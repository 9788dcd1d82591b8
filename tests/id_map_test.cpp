// core/detail/id_map.hpp against std::map: random inserts, erases, takes and finds,
// with keys drawn so that many share a direct bucket (the same low bits) and so land in
// the hashed table, and others come from a counter as the adapter's do. After every
// operation each key of the model is found with its value, and the sizes agree.
#include <cstdint>
#include <map>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "fairpool/core/detail/id_map.hpp"

namespace fairpool::testing {
namespace {

using core::detail::id_map;
using core::detail::no_index;

// A key whose low bits pick one of a few direct buckets, its high bits one of many keys.
rc::Gen<std::uint64_t> colliding_key() {
    return rc::gen::map(rc::gen::pair(rc::gen::inRange<std::uint64_t>(0, 4), rc::gen::inRange<std::uint64_t>(0, 64)),
                        [](std::pair<std::uint64_t, std::uint64_t> p) { return p.first | (p.second << 20); });
}

RC_GTEST_PROP(IdMap, AgreesWithAnOrderedMap, ()) {
    const auto max_entries = *rc::gen::inRange<std::uint32_t>(1, 40);
    id_map map(max_entries, *rc::gen::arbitrary<std::uint64_t>());
    std::map<std::uint64_t, std::uint32_t> model;
    std::uint64_t counter = *rc::gen::inRange<std::uint64_t>(0, 1000);
    const auto steps = *rc::gen::inRange(0, 400);
    for (int step = 0; step < steps; ++step) {
        const int op = *rc::gen::inRange(0, 4);
        if (op <= 1 && model.size() < max_entries) {  // insert a new key
            std::uint64_t key = op == 0 ? *colliding_key() : (counter += 2);
            if (model.count(key) != 0) continue;
            const auto value = *rc::gen::inRange<std::uint32_t>(0, 1000);
            map.insert(key, value);
            model[key] = value;
        } else if (op == 2 && !model.empty()) {  // erase one
            auto it = std::next(model.begin(), *rc::gen::inRange<std::size_t>(0, model.size()));
            map.erase(it->first);
            model.erase(it);
        } else if (op == 3 && !model.empty()) {  // take one
            auto it = std::next(model.begin(), *rc::gen::inRange<std::size_t>(0, model.size()));
            RC_ASSERT(map.take(it->first) == it->second);
            model.erase(it);
        } else {  // a key that is absent
            const std::uint64_t key = *colliding_key();
            if (model.count(key) == 0) RC_ASSERT(map.find(key) == no_index);
        }
        RC_ASSERT(map.size() == model.size());
        for (const auto& [key, value] : model) RC_ASSERT(map.find(key) == value);
    }
}

// The vacant direct bucket's key never matches: bucket b holds b ^ 1 when empty, and
// key b ^ 1 maps to bucket b ^ 1. An empty map finds none of the first keys, and
// key 0 and key 1 (each the other's bucket's vacancy mark) are found only once inserted.
TEST(IdMap, AVacantBucketMatchesNoKey) {
    id_map map(4, 7);
    for (std::uint64_t key = 0; key < 64; ++key) EXPECT_EQ(map.find(key), no_index) << key;
    map.insert(1, 10);
    EXPECT_EQ(map.find(0), no_index);
    EXPECT_EQ(map.find(1), 10u);
    map.insert(0, 20);
    EXPECT_EQ(map.find(0), 20u);
    EXPECT_EQ(map.take(1), 10u);
    EXPECT_EQ(map.find(1), no_index);
    EXPECT_EQ(map.find(0), 20u);
}

// Ids 8 apart share a bucket of a map of 4 entries (8 buckets): the second goes to the
// hashed table and both stay found as either leaves first.
TEST(IdMap, AnIdWhoseBucketIsTakenIsFoundInTheHashedTable) {
    for (const bool first_leaves_first : {true, false}) {
        id_map map(4, 7);
        map.insert(3, 1);
        map.insert(11, 2);
        map.insert(19, 3);
        EXPECT_EQ(map.find(3), 1u);
        EXPECT_EQ(map.find(11), 2u);
        EXPECT_EQ(map.find(19), 3u);
        if (first_leaves_first) {
            map.erase(3);
            EXPECT_EQ(map.find(3), no_index);
            EXPECT_EQ(map.find(11), 2u);
            map.insert(27, 4);  // into the freed direct bucket
            EXPECT_EQ(map.take(11), 2u);
            EXPECT_EQ(map.size(), 2u);
        } else {
            EXPECT_EQ(map.take(11), 2u);
            EXPECT_EQ(map.find(3), 1u);
            map.insert(27, 4);
            EXPECT_EQ(map.size(), 3u);
        }
        EXPECT_EQ(map.find(11), no_index);
        EXPECT_EQ(map.find(19), 3u);
        EXPECT_EQ(map.find(27), 4u);
    }
}

}  // namespace
}  // namespace fairpool::testing
