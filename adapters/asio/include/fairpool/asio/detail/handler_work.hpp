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
// any other executor (any_io_executor, a user's) an executor_work_guard is held from
// construction and keep() does nothing.
#include <boost/asio/executor_work_guard.hpp>
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

}  // namespace fairpool::detail
