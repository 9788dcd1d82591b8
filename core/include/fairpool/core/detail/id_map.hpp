#pragma once
// A fixed-capacity map from caller-chosen u64 ids to table indices, in two tables:
//
// - direct: bucket `key & mask`. Callers that take ids from a counter (the Boost.Asio
//   adapter does, for waiters and handles) find nearly every id here: two live ids
//   share a bucket only when more than a table's size of ids were taken between them.
//   A lookup is one load and one compare, an insert or erase one store: no hashing.
// - hashed, for an id whose direct bucket was taken when it was inserted: open
//   addressing, linear probing, backward-shift deletion (no tombstones), at least twice
//   as many buckets as entries so probes stay short, keyed by a per-instance seed so
//   that callers cannot aim many ids at one bucket (ids aimed at one direct bucket all
//   land here). Skipped while it is empty.
//
// An entry lives in exactly one of the two. Nothing that the scheduler emits depends
// on where: any ids (a trace's, a snapshot's) give the same effects.
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/detail/index_list.hpp"

namespace fairpool::core::detail {

class id_map {
public:
    id_map(std::uint32_t max_entries, std::uint64_t seed)
        : direct_(std::bit_ceil(std::uint64_t{max_entries} * 2)),
          buckets_(direct_.size()), mask_(buckets_.size() - 1),
          max_entries_(max_entries), seed_(seed) {
        FAIRPOOL_ASSERT(max_entries > 0 && 2 * std::uint64_t{max_entries} <= buckets_.size());
        for (std::size_t b = 0; b < direct_.size(); ++b) direct_[b] = vacant(b);
    }

    [[nodiscard]] std::uint32_t find(std::uint64_t key) const noexcept {
        // A vacant direct bucket holds a key that does not map to it: no match.
        const bucket& d = direct_[key & mask_];
        if (d.key == key) return d.value;
        return hashed_size_ == 0 ? no_index : find_hashed(key);
    }

    void insert(std::uint64_t key, std::uint32_t value) noexcept {
        FAIRPOOL_ASSERT(value != no_index);
        FAIRPOOL_ASSERT(size_ < max_entries_);
        FAIRPOOL_DEBUG_ASSERT(find(key) == no_index);
        ++size_;
        bucket& d = direct_[key & mask_];
        if (d.value == no_index) {
            d = {key, value};
            return;
        }
        insert_hashed(key, value);
    }

    // find and erase in one: the key's value, no longer in the map (the key must be present).
    [[nodiscard]] std::uint32_t take(std::uint64_t key) noexcept {
        FAIRPOOL_ASSERT(size_ > 0);
        --size_;
        bucket& d = direct_[key & mask_];
        if (d.key == key) return std::exchange(d, vacant(key & mask_)).value;
        return erase_hashed(key);
    }

    void erase(std::uint64_t key) noexcept { static_cast<void>(take(key)); }

    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

private:
    struct bucket {
        std::uint64_t key = 0;
        std::uint32_t value = no_index;
    };

    // Bucket b's key when vacant: b ^ 1, whose low bits are not b (the table has at
    // least 2 buckets), so no key that maps to b equals it.
    [[nodiscard]] static bucket vacant(std::size_t b) noexcept { return {std::uint64_t{b} ^ 1, no_index}; }

    // Every probe loop below ends within buckets_.size() probes: at least half of the
    // buckets are empty (max_entries ≤ buckets / 2), and a run ends at an empty one.
    [[nodiscard]] std::uint32_t find_hashed(std::uint64_t key) const noexcept {
        std::size_t b = bucket_of(key);
        for (std::size_t probes = 0; probes < buckets_.size(); ++probes, b = (b + 1) & mask_) {
            const bucket& slot = buckets_[b];
            if (slot.value == no_index) return no_index;
            if (slot.key == key) return slot.value;
        }
        FAIRPOOL_ASSERT(false && "an id_map probe run ends at an empty bucket");
        return no_index;
    }

    void insert_hashed(std::uint64_t key, std::uint32_t value) noexcept {
        std::size_t b = bucket_of(key);
        for (std::size_t probes = 0; buckets_[b].value != no_index; ++probes) {
            FAIRPOOL_ASSERT(probes < buckets_.size());
            FAIRPOOL_ASSERT(buckets_[b].key != key);
            b = (b + 1) & mask_;
        }
        buckets_[b] = {key, value};
        ++hashed_size_;
    }

    // Removes the key from the hashed table; its value.
    std::uint32_t erase_hashed(std::uint64_t key) noexcept {
        std::size_t hole = bucket_of(key);
        for (std::size_t probes = 0; buckets_[hole].key != key || buckets_[hole].value == no_index; ++probes) {
            FAIRPOOL_ASSERT(probes < buckets_.size());
            FAIRPOOL_ASSERT(buckets_[hole].value != no_index);  // the key must be present
            hole = (hole + 1) & mask_;
        }
        const std::uint32_t value = buckets_[hole].value;
        // Backward shift: pull later entries of the probe run into the hole when
        // their home bucket does not lie (cyclically) between the hole and them.
        // Bound: the probe run after the hole, < buckets_.size() entries.
        for (std::size_t next = (hole + 1) & mask_; buckets_[next].value != no_index; next = (next + 1) & mask_) {
            const std::size_t home = bucket_of(buckets_[next].key);
            const bool stays = ((next - home) & mask_) < ((next - hole) & mask_);
            if (stays) continue;
            buckets_[hole] = buckets_[next];
            hole = next;
        }
        buckets_[hole] = {};
        --hashed_size_;
        return value;
    }

    [[nodiscard]] std::size_t bucket_of(std::uint64_t key) const noexcept {
        // A keyed variant of the murmur3 finalizer: the seed enters before mixing.
        std::uint64_t h = key ^ seed_;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL ^ (seed_ | 1);
        h ^= h >> 33;
        return static_cast<std::size_t>(h) & mask_;
    }

    std::vector<bucket> direct_;
    std::vector<bucket> buckets_;  // the hashed table
    std::size_t mask_;             // of both: they have the same size
    std::uint32_t max_entries_;
    std::uint32_t size_ = 0;
    std::uint32_t hashed_size_ = 0;
    std::uint64_t seed_;
};

}  // namespace fairpool::core::detail
