// The work an acquire counts on its handler's executor
// (adapters/asio/include/fairpool/asio/detail/handler_work.hpp), for a coroutine's
// any_io_executor: over an io_context's executor it is looked through (io_executor(),
// the same executor from get_executor(), work counted only once kept); over any other
// executor (a strand) a work guard is held from construction. Whether an io_context
// has work is read off run_one(): it returns at once, having run nothing, when the
// context has none, and runs the posted handler when it has some.
#include <gtest/gtest.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "fairpool/asio/detail/handler_work.hpp"

namespace fairpool::testing {
namespace {

using work = detail::handler_work<boost::asio::any_io_executor>;

// Whether `io` has outstanding work: a run that finds none stops and must be restarted.
bool has_work(boost::asio::io_context& io) {
    io.restart();
    return io.poll() == 0 && !io.stopped();
}

TEST(handler_work, an_io_context_executor_is_looked_through) {
    boost::asio::io_context io;
    const boost::asio::any_io_executor ex = io.get_executor();
    const work w(ex);
    ASSERT_NE(w.io_executor(), nullptr);
    EXPECT_EQ(*w.io_executor(), io.get_executor());
    EXPECT_EQ(w.get_executor(), ex);
}

TEST(handler_work, over_an_io_context_work_counts_only_once_kept) {
    boost::asio::io_context io;
    {
        work w(boost::asio::any_io_executor(io.get_executor()));
        EXPECT_FALSE(has_work(io));
        w.keep();
        w.keep();  // idempotent: one count
        EXPECT_TRUE(has_work(io));
    }
    EXPECT_FALSE(has_work(io));  // destroyed: the count is gone
}

TEST(handler_work, another_executor_gets_a_guard_from_construction) {
    boost::asio::io_context io;
    const boost::asio::any_io_executor ex = boost::asio::make_strand(io);
    {
        const work w(ex);
        EXPECT_EQ(w.io_executor(), nullptr);
        EXPECT_EQ(w.get_executor(), ex);
        EXPECT_TRUE(has_work(io));
    }
    EXPECT_FALSE(has_work(io));
}

}  // namespace
}  // namespace fairpool::testing
