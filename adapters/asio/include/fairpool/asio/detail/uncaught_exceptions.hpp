#pragma once
// std::uncaught_exceptions() at the cost of a thread-local read, for the lease (which
// takes it when made, moved into and destroyed: lease.hpp's rule 1).
//
// libstdc++'s std::uncaught_exceptions() calls __cxa_get_globals(), which finds this
// thread's exception globals through __tls_get_addr (libstdc++ is a shared library):
// ~20 instructions a call, four calls a round trip (callgrind: 82 of them). The
// globals' address never changes for a thread, so it is kept in a thread_local of our
// own (constant-initialized: no guard) and read from there. The layout read is the
// Itanium C++ ABI's (section 2.2.2, __cxa_eh_globals: the caught exceptions' stack,
// then `unsigned int uncaughtExceptions`), which libstdc++ and libc++abi implement;
// with any other runtime it is std::uncaught_exceptions() itself.
// tests/adapter/surface_test.cpp checks the two agree, unwinding or not, on two threads.
#include <exception>

#if defined(__GLIBCXX__) || defined(_LIBCPPABI_VERSION) || defined(__GXX_ABI_VERSION)
#include <cxxabi.h>
#define FAIRPOOL_ITANIUM_EH_GLOBALS 1
#endif

namespace fairpool::detail {

#ifdef FAIRPOOL_ITANIUM_EH_GLOBALS
struct itanium_eh_globals {
    void* caught_exceptions;
    unsigned int uncaught_exceptions;
};

[[gnu::noinline]] inline const itanium_eh_globals* this_threads_eh_globals() noexcept {
    return reinterpret_cast<const itanium_eh_globals*>(abi::__cxa_get_globals());
}

[[nodiscard]] inline int uncaught_exceptions() noexcept {
    thread_local const itanium_eh_globals* globals = nullptr;
    if (globals == nullptr) [[unlikely]]
        globals = this_threads_eh_globals();
    return static_cast<int>(globals->uncaught_exceptions);
}
#else
[[nodiscard]] inline int uncaught_exceptions() noexcept { return std::uncaught_exceptions(); }
#endif

}  // namespace fairpool::detail
