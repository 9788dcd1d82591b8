#pragma once
// The work a pending acquire counts on its handler's executor, as Asio requires of a
// pending operation: the executor's context (io_context::run()) does not run out of
// work while the handler waits.
//
// An acquire that the actor completes in the step its own initiating function fed
// (granted or rejected at once) needs none: the completion it posts is that work from
// the initiating function on. So, on an executor that counts its own work without
// throwing (an io_context's executor, or a strand over one: on_work_started and
// on_work_finished, noexcept), the work is taken only when the acquire must wait:
// keep() before it is pushed into the mailbox, or when the scheduler queues it. That
// saves the two atomic read-modify-writes of the work count on the steady path. On
// any other executor (a user's) an executor_work_guard is held from construction and
// keep() does nothing.
//
// An any_io_executor (a coroutine's handler: use_awaitable, as_tuple of it) is looked
// through: if it is an io_context's executor, the work is counted on that executor
// lazily as above and the completion is posted to its scheduler without type erasure
// (io_executor()); only another target gets a work guard. The guard would cost a
// type-erased prefer(outstanding_work.tracked), a copy of the executor held until the
// delivery, and its destruction: ~90 instructions per acquire from a coroutine
// (callgrind, bench/round_trip_instructions.py's contended acquire).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <utility>

namespace fairpool::detail {

template <class Executor>
concept counts_work_without_throwing = requires(const Executor& e) {
    { e.on_work_started() } noexcept;
    { e.on_work_finished() } noexcept;
};

template <class Executor>
class handler_work {
public:
    explicit handler_work(const Executor& ex) noexcept : guard_(ex) {}
    void keep() noexcept {}
    [[nodiscard]] Executor get_executor() const noexcept { return guard_.get_executor(); }

private:
    boost::asio::executor_work_guard<Executor> guard_;
};

template <counts_work_without_throwing Executor>
class handler_work<Executor> {
public:
    explicit handler_work(Executor ex) noexcept : executor_(std::move(ex)) {}
    handler_work(handler_work&& other) noexcept
        : executor_(std::move(other.executor_)), counted_(std::exchange(other.counted_, false)) {}
    handler_work(const handler_work&) = delete;
    handler_work& operator=(const handler_work&) = delete;
    handler_work& operator=(handler_work&&) = delete;
    ~handler_work() {
        if (counted_) executor_.on_work_finished();
    }

    // From now until this object is destroyed (idempotent).
    void keep() noexcept {
        if (counted_) return;
        counted_ = true;
        executor_.on_work_started();
    }
    [[nodiscard]] const Executor& get_executor() const noexcept { return executor_; }

private:
    Executor executor_;
    bool counted_ = false;
};

template <>
class handler_work<boost::asio::any_io_executor> {
public:
    using io_executor_type = boost::asio::io_context::executor_type;

    explicit handler_work(const boost::asio::any_io_executor& ex) noexcept {
        if (const auto* io = ex.target<io_executor_type>()) io_.emplace(*io);
        else other_.emplace(ex);
    }

    void keep() noexcept {
        if (io_) io_->keep();
    }
    // The io_context's executor the handler runs on, if it is one (null otherwise).
    [[nodiscard]] const io_executor_type* io_executor() const noexcept { return io_ ? &io_->get_executor() : nullptr; }
    [[nodiscard]] boost::asio::any_io_executor get_executor() const noexcept {
        if (io_) return {io_->get_executor()};
        return other_->get_executor();
    }

private:
    std::optional<handler_work<io_executor_type>> io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::any_io_executor>> other_;
};

}  // namespace fairpool::detail
