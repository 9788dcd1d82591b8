#pragma once
// Zeller's delta debugging (ddmin): shrinks a failing sequence to a 1-minimal subsequence
// that still fails: removing any single element makes it pass. `fails(subsequence)`
// is the oracle; `items` must fail. Worst case O(n²) oracle calls, usually far fewer.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace fairpool::replay {

template <class T>
std::vector<T> ddmin(std::vector<T> items, const std::function<bool(const std::vector<T>&)>& fails) {
    std::size_t n = 2;
    while (items.size() >= 2) {
        const std::size_t chunk = (items.size() + n - 1) / n;
        std::vector<std::vector<T>> parts;
        for (std::size_t start = 0; start < items.size(); start += chunk)
            parts.emplace_back(items.begin() + static_cast<std::ptrdiff_t>(start),
                               items.begin() + static_cast<std::ptrdiff_t>(std::min(start + chunk, items.size())));
        bool reduced = false;
        for (const auto& part : parts) {  // reduce to a subset
            if (fails(part)) {
                items = part;
                n = 2;
                reduced = true;
                break;
            }
        }
        if (reduced) continue;
        for (std::size_t i = 0; i < parts.size() && !reduced; ++i) {  // reduce to a complement
            std::vector<T> complement;
            for (std::size_t j = 0; j < parts.size(); ++j)
                if (j != i) complement.insert(complement.end(), parts[j].begin(), parts[j].end());
            if (fails(complement)) {
                items = std::move(complement);
                n = std::max<std::size_t>(n - 1, 2);
                reduced = true;
            }
        }
        if (reduced) continue;
        if (n >= items.size()) break;  // every single removal was tried: 1-minimal
        n = std::min(n * 2, items.size());
    }
    return items;
}

}  // namespace fairpool::replay
