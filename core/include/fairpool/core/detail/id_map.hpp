#pragma once
// A fixed-capacity hash map from caller-chosen u64 ids to table indices: open
// addressing, linear probing, backward-shift deletion (no tombstones). The table has
// at least twice as many buckets as entries, so probes stay short. The hash is keyed
// by a per-instance seed so that callers cannot aim many ids at one bucket. Nothing
// that the scheduler emits depends on the layout of this table.
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "fairpool/core/detail/assert.hpp"
#include "fairpool/core/detail/index_list.hpp"

namespace fairpool::core::detail {

class id_map {
public:
    id_map(std::uint32_t max_entries, std::uint64_t seed)
        : buckets_(std::bit_ceil(std::uint64_t{max_entries} * 2)), mask_(buckets_.size() - 1),
          max_entries_(max_entries), seed_(seed) {
        FAIRPOOL_ASSERT(max_entries > 0 && 2 * std::uint64_t{max_entries} <= buckets_.size());
    }

    // Every probe loop below ends within buckets_.size() probes: at least half of the
    // buckets are empty (max_entries ≤ buckets / 2), and a run ends at an empty one.
    [[nodiscard]] std::uint32_t find(std::uint64_t key) const noexcept {
        std::size_t b = bucket_of(key);
        for (std::size_t probes = 0; probes < buckets_.size(); ++probes, b = (b + 1) & mask_) {
            const bucket& slot = buckets_[b];
            if (slot.value == no_index) return no_index;
            if (slot.key == key) return slot.value;
        }
        FAIRPOOL_ASSERT(false && "an id_map probe run ends at an empty bucket");
        return no_index;
    }

    void insert(std::uint64_t key, std::uint32_t value) noexcept {
        FAIRPOOL_ASSERT(value != no_index);
        FAIRPOOL_ASSERT(size_ < max_entries_);
        std::size_t b = bucket_of(key);
        for (std::size_t probes = 0; buckets_[b].value != no_index; ++probes) {
            FAIRPOOL_ASSERT(probes < buckets_.size());
            FAIRPOOL_ASSERT(buckets_[b].key != key);
            b = (b + 1) & mask_;
        }
        buckets_[b] = {key, value};
        ++size_;
    }

    void erase(std::uint64_t key) noexcept {
        std::size_t hole = bucket_of(key);
        for (std::size_t probes = 0; buckets_[hole].key != key || buckets_[hole].value == no_index; ++probes) {
            FAIRPOOL_ASSERT(probes < buckets_.size());
            FAIRPOOL_ASSERT(buckets_[hole].value != no_index);  // the key must be present
            hole = (hole + 1) & mask_;
        }
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
        --size_;
    }

    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }

private:
    struct bucket {
        std::uint64_t key = 0;
        std::uint32_t value = no_index;
    };

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

    std::vector<bucket> buckets_;
    std::size_t mask_;
    std::uint32_t max_entries_;
    std::uint32_t size_ = 0;
    std::uint64_t seed_;
};

}  // namespace fairpool::core::detail
