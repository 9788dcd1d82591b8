#pragma once
// Memory for one asynchronous operation at a time, kept by its owner (a client's read,
// its write, a backend connection's exchange), so the operation's state needs no heap:
// Asio's own per-thread cache of handler memory holds two blocks, and a turn that
// answers eight clients starts eight writes at once. A request that does not fit, or
// comes while the block is in use, goes to the heap (as Asio's allocation example does).
//
//   socket.async_write_some(buffers, boost::asio::bind_allocator(handler_allocator<int>(memory), handler));
#include <cstddef>
#include <new>

namespace fairpool::demo {

class handler_memory {
public:
    handler_memory() = default;
    handler_memory(const handler_memory&) = delete;
    handler_memory& operator=(const handler_memory&) = delete;

    void* allocate(std::size_t size) {
        if (!in_use_ && size <= sizeof(storage_)) {
            in_use_ = true;
            return storage_;
        }
        return ::operator new(size);
    }
    void deallocate(void* p) noexcept {
        if (p == storage_) in_use_ = false;
        else ::operator delete(p);
    }

private:
    alignas(std::max_align_t) unsigned char storage_[512];
    bool in_use_ = false;
};

template <class T>
class handler_allocator {
public:
    using value_type = T;
    explicit handler_allocator(handler_memory& memory) noexcept : memory_(&memory) {}
    template <class U>
    handler_allocator(const handler_allocator<U>& other) noexcept : memory_(other.memory_) {}

    T* allocate(std::size_t n) { return static_cast<T*>(memory_->allocate(sizeof(T) * n)); }
    void deallocate(T* p, std::size_t) noexcept { memory_->deallocate(p); }

    template <class U>
    bool operator==(const handler_allocator<U>& other) const noexcept { return memory_ == other.memory_; }

private:
    template <class>
    friend class handler_allocator;
    handler_memory* memory_;
};

}  // namespace fairpool::demo
