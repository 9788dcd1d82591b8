// The core's snapshots (docs/CONTRACT.md, section 7.2): after every event of every
// golden trace, a scheduler restored from the snapshot gives exactly the original's
// effects, errors, counters, deadlines and later snapshots; and each rule of the
// restore refuses the snapshot it is about, naming the record.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "fairpool/core/scheduler.hpp"
#include "fairpool/trace/read.hpp"

namespace fairpool::core {
namespace {

std::vector<snapshot_record> snapshot_of(const scheduler& s) {
    std::vector<snapshot_record> records;
    auto collect = [&records](const snapshot_record& r) { records.push_back(r); };
    s.snapshot(collect);
    EXPECT_EQ(records.size(), s.snapshot_size());
    EXPECT_LE(records.size(), max_snapshot_records(s.configuration()));
    return records;
}

std::vector<trace::trace> golden_traces() {
    std::vector<trace::trace> traces;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(FAIRPOOL_GOLDEN_DIR))
        if (entry.path().extension() == ".trace") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
        std::ifstream in(file);
        auto read = trace::read(in);
        if (auto* t = std::get_if<trace::trace>(&read); t != nullptr && t->snapshot.empty()) traces.push_back(*t);
    }
    return traces;
}

// One step's outcome, as compared between the original and a restored scheduler.
struct outcome {
    event_error error;
    std::vector<effect> effects;
    stats counters;
    std::optional<nanos> next_deadline;
    friend bool operator==(const outcome&, const outcome&) = default;
};

outcome step(scheduler& s, const event& e) {
    const step_result r = s.step(e);
    return {r.error, {r.effects.begin(), r.effects.end()}, s.counters(), s.next_deadline()};
}

TEST(SchedulerSnapshot, EveryGoldenTraceRestoredAfterEveryEventGivesTheSameTail) {
    const auto traces = golden_traces();
    ASSERT_GE(traces.size(), 30U);
    std::size_t restores = 0;
    for (const auto& t : traces) {
        for (std::size_t k = 0; k <= t.steps.size(); ++k) {
            scheduler original(t.config, 1);
            for (std::size_t i = 0; i < k; ++i) original.step(t.steps[i].event);
            const auto records = snapshot_of(original);
            scheduler restored(t.config, records, 99);  // another hash seed: no output depends on it
            ASSERT_EQ(snapshot_of(restored), records) << "after event " << k;
            ASSERT_EQ(restored.next_deadline(), original.next_deadline());
            ASSERT_EQ(restored.counters(), original.counters());
            for (std::size_t i = k; i < t.steps.size(); ++i)
                ASSERT_EQ(step(restored, t.steps[i].event), step(original, t.steps[i].event))
                    << "restored after event " << k << ", event " << i << " (line " << t.steps[i].line << ")";
            ASSERT_EQ(snapshot_of(restored), snapshot_of(original));
            ++restores;
        }
    }
    EXPECT_GT(restores, 300U);
}

// A scheduler resized to max_slots 0 writes its sizes, and one restored from them goes
// on as it would (decision 16): the spawn that completes and the lease that comes back
// retire, nothing spawns, the waiter waits; the active handles' weight is restored.
TEST(SchedulerSnapshot, ASizeOfZeroIsRestored) {
    config c;
    c.max_slots = 2;
    scheduler original(c, 1);
    original.step(event::start(0));
    original.step(event::acquire(1, 1, 7));
    original.step(event::spawned(2, 0));  // waiter 1 granted slot 0
    original.step(event::acquire(3, 2, 8, std::nullopt, 5));  // slot 1 spawning for it
    ASSERT_TRUE(original.step(event::resize(4, 0, 0)).ok());
    const auto records = snapshot_of(original);
    ASSERT_GE(records.size(), 2U);
    EXPECT_EQ(records[1], (snapshot_record{snapshot_sizes{0, 0}}));
    scheduler restored(c, records, 2);
    EXPECT_EQ(restored.counters(), original.counters());
    EXPECT_EQ(restored.counters().active_weight, 5U);
    EXPECT_EQ(restored.max_slots(), 0U);
    const std::vector<event> tail = {event::spawned(5, 1),  event::release(6, 0, 1), event::retired(7, 0),
                                     event::retired(7, 1), event::resize(8, 1, 0),   event::spawned(9, 0)};
    for (std::size_t i = 0; i < tail.size(); ++i) ASSERT_EQ(step(restored, tail[i]), step(original, tail[i])) << i;
    EXPECT_EQ(original.counters().retirements[static_cast<int>(retire_reason::resize)], 2U);
    EXPECT_EQ(original.counters().grants_after_wait, 2U);  // waiter 2 after the resize back up
    EXPECT_EQ(snapshot_of(restored), snapshot_of(original));
}

TEST(SchedulerSnapshot, ASnapshotWritesOnlyWhatTheStateHas) {
    config c;
    c.max_slots = 3;
    scheduler s(c, 1);
    // Before start: the scalars and the end.
    ASSERT_EQ(snapshot_of(s), (std::vector<snapshot_record>{snapshot_begin{}, snapshot_end{}}));
    s.step(event::start(0));
    s.step(event::acquire(10, 1, 7));  // queued: spawn slot 0
    s.step(event::spawned(20, 0));     // granted after waiting 10 ns
    s.step(event::acquire(30, 2, 8, 900));
    const std::vector<snapshot_record> expected{
        snapshot_begin{30, 1, 2, 2, 0, 0, 1, 0, true, false, false},
        snapshot_slot{never, 0, 0, 0, 20, 1, 1, 0, slot_state::leased, false, false, 7},  // held by handle 7
        snapshot_slot{never, 0, 0, 0, 0, 0, 0, 1, slot_state::spawning, false, false},
        snapshot_handle{8, 1, 0},
        snapshot_waiter{2, 8, 900, 30, 1},
        snapshot_counter{counter::acquires, 2},
        snapshot_counter{counter::grants_after_wait, 1},
        snapshot_counter{counter::spawns, 2},
        snapshot_bucket{4, 1},  // a wait of 10 ns: [8, 16)
        snapshot_end{},
    };
    EXPECT_EQ(snapshot_of(s), expected);
}

// A valid snapshot of a pool with a leased, a checking and two spawning slots, two
// handles (one of weight 3) and three waiters; each refusal case breaks one record of it.
struct refusal : ::testing::Test {
    config c = [] {
        config x;
        x.max_slots = 5;
        x.max_waiters = 8;
        x.max_waiters_per_handle = 2;
        x.check_after_idle = 100;
        x.leak_threshold = 1000;
        return x;
    }();
    std::vector<snapshot_record> valid;

    void SetUp() override {
        scheduler s(c, 1);
        s.step(event::start(0));
        s.step(event::acquire(1, 1, 7));
        s.step(event::acquire(1, 2, 7));
        s.step(event::spawned(2, 0));  // waiter 1 granted slot 0
        s.step(event::spawned(3, 1));  // waiter 2 granted slot 1
        s.step(event::release(4, 1, 2));
        s.step(event::acquire(200, 3, 8, 5000, 3));  // slot 1 is stale: checked
        s.step(event::acquire(201, 4, 8));
        s.step(event::acquire(202, 5, 9));
        valid = snapshot_of(s);
        scheduler restored(c, valid, 2);
    }

    template <typename Record>
    Record& nth(std::size_t n = 0) {
        for (auto& r : valid)
            if (auto* p = std::get_if<Record>(&r); p != nullptr && n-- == 0) return *p;
        throw std::logic_error("no such record");
    }
    std::size_t index_of(const snapshot_record& r) const {
        return static_cast<std::size_t>(std::find(valid.begin(), valid.end(), r) - valid.begin());
    }

    void expect_refused(std::size_t record, const std::string& message) {
        try {
            scheduler s(c, valid, 1);
            ADD_FAILURE() << "accepted; expected: " << message;
        } catch (const snapshot_error& e) {
            EXPECT_EQ(e.what(), message);
            EXPECT_EQ(e.record(), record) << message;
        }
    }
};

TEST_F(refusal, TheValidSnapshotHasWhatTheCasesBreak) {
    EXPECT_EQ(nth<snapshot_slot>(0).state, slot_state::leased);
    EXPECT_EQ(nth<snapshot_slot>(1).state, slot_state::checking);
    EXPECT_EQ(nth<snapshot_slot>(2).state, slot_state::spawning);
    EXPECT_EQ(nth<snapshot_slot>(3).state, slot_state::spawning);
    EXPECT_EQ(nth<snapshot_slot>(3).index, 3U);
    EXPECT_EQ(nth<snapshot_handle>(0), (snapshot_handle{8, 3, 0}));
    EXPECT_EQ(nth<snapshot_handle>(1), (snapshot_handle{9, 1, 0}));
    EXPECT_EQ(nth<snapshot_waiter>(2).id, 5U);
}

TEST_F(refusal, RecordsOutOfOrderOrMissing) {
    std::swap(valid[1], valid[2]);
    expect_refused(2, "slot 0: out of order or repeated");
}

TEST_F(refusal, NoBegin) {
    valid.erase(valid.begin());
    expect_refused(0, "a snapshot starts with `snapshot`");
}

TEST_F(refusal, NoEnd) {
    valid.pop_back();
    expect_refused(valid.size(), "the snapshot ends without snapshot_end");
}

TEST_F(refusal, ARecordAfterTheEnd) {
    valid.push_back(snapshot_end{});
    expect_refused(valid.size() - 1, "a record after snapshot_end");
}

TEST_F(refusal, AKindOutOfPlace) {
    valid.insert(valid.end() - 1, snapshot_handle{10, 1, 0});
    expect_refused(valid.size() - 2, "record out of order: a snapshot lists snapshot, sizes, slot, idle, handle, "
                                     "waiter, counter, wait_bucket, snapshot_end");
}

// The new fields of caps and resizes (issue 15): the sizes record, a slot's handle,
// a handle's max_leases. The fixture's config has max_slots=5 = slot_capacity.
TEST_F(refusal, SizesOutOfRange) {
    valid.insert(valid.begin() + 1, snapshot_sizes{6, 0});
    expect_refused(1, "sizes max_slots=6 min_slots=0: not 0..slot_capacity and 0..max_slots");
    valid[1] = snapshot_sizes{0, 1};
    expect_refused(1, "sizes max_slots=0 min_slots=1: not 0..slot_capacity and 0..max_slots");
    valid[1] = snapshot_sizes{2, 3};
    expect_refused(1, "sizes max_slots=2 min_slots=3: not 0..slot_capacity and 0..max_slots");
}

TEST_F(refusal, SizesEqualToTheConfigs) {
    valid.insert(valid.begin() + 1, snapshot_sizes{5, 0});
    expect_refused(1, "sizes: the config's sizes are not written");
}

TEST_F(refusal, SizesAfterTheSlots) {
    valid.insert(valid.begin() + 2, snapshot_sizes{4, 0});
    expect_refused(2, "record out of order: a snapshot lists snapshot, sizes, slot, idle, handle, waiter, counter, "
                      "wait_bucket, snapshot_end");
}

TEST_F(refusal, AHandleOnASlotThatIsNotLeased) {
    nth<snapshot_slot>(1).handle = 7;  // checking
    expect_refused(index_of(nth<snapshot_slot>(1)), "slot 1: a field its state does not use is not its default");
}

// The lease count follows the slots' handles: handle 8 holds slot 0's lease, so at its
// max_leases=1 it is outside the rotation, and handle 9 (in it) cannot come after it.
TEST_F(refusal, AHandleAtItsCapByTheSlotsHandlesListedInTheRotation) {
    nth<snapshot_slot>(0).handle = 8;
    nth<snapshot_handle>(0).max_leases = 1;
    expect_refused(index_of(nth<snapshot_handle>(1)),
                   "handle id=9: waiters below its cap, listed after a handle outside the rotation");
}

TEST_F(refusal, AMaxLeasesOnAHandleWithoutWaitersOrLeases) {
    valid.insert(valid.begin() + static_cast<std::ptrdiff_t>(index_of(nth<snapshot_handle>(1))) + 1,
                 snapshot_handle{20, 1, 0, 2});
    expect_refused(index_of(snapshot_handle{20, 1, 0, 2}), "handle id=20: a cap without waiters or leases");
}

TEST_F(refusal, SlotIndexBeyondMaxSlots) {
    nth<snapshot_slot>(2).index = 5;
    expect_refused(3, "slot 5: index at or above slot_capacity");
}

TEST_F(refusal, AnEmptySlotRecord) {
    nth<snapshot_slot>(2).state = slot_state::empty;
    expect_refused(3, "slot 2: an empty slot is not written");
}

TEST_F(refusal, AFieldItsStateDoesNotUse) {
    nth<snapshot_slot>(2).uses = 1;
    expect_refused(3, "slot 2: a field its state does not use is not its default");
}

TEST_F(refusal, TwoLeasesWithOneId) {
    auto& spawning = nth<snapshot_slot>(2);
    spawning.state = slot_state::leased;
    spawning.lease = 1, spawning.uses = 1, spawning.granted_at = 5, spawning.leak_unreported = true;
    expect_refused(5, "two leased slots hold lease 1");
}

TEST_F(refusal, ALeaseAboveTheLastOne) {
    nth<snapshot_slot>(0).lease = 3;
    expect_refused(1, "slot 0: lease not in 1..last_lease");
}

TEST_F(refusal, ALeakReportAlreadyDue) {
    nth<snapshot_begin>().now = 2000;
    expect_refused(1, "slot 0: a leak report due at or before now");
}

TEST_F(refusal, AKeepaliveCheckWithoutKeepalive) {
    nth<snapshot_slot>(1).keepalive_check = true;
    expect_refused(2, "slot 1: a keepalive check without keepalive_interval");
}

TEST_F(refusal, CheckingWithoutACheckSetting) {
    c.check_after_idle = 0;
    expect_refused(2, "slot 1: checking without check_after_idle or keepalive_interval");
}

TEST_F(refusal, AnIdleRecordForASlotThatIsNotIdle) {
    valid.insert(valid.begin() + 5, snapshot_idle{0});
    expect_refused(5, "idle slot=0: not an idle slot");
}

TEST_F(refusal, MoreIdleRecordsThanSlots) {
    // One idle slot listed slot_capacity + 1 times: refused at the record past the
    // capacity, before the listing could overflow the restore's table.
    auto& slot = nth<snapshot_slot>(1);
    slot.state = slot_state::idle, slot.verified_at = 150;
    for (int k = 0; k < 6; ++k) valid.insert(valid.begin() + 5, snapshot_idle{1});
    expect_refused(10, "idle slot=1: more idle records than slot_capacity");
}

// Idle times (decision 5): each slot that becomes idle after a use takes the next
// idle_seq at its idle time. Slot 1 (checking) has idle_seq=2, idle_since=4.
TEST_F(refusal, TwoSlotsWithOneIdleSeq) {
    auto& slot = nth<snapshot_slot>(2);
    slot.state = slot_state::checking, slot.idle_since = 4, slot.idle_seq = 2;
    expect_refused(index_of(nth<snapshot_handle>(0)), "two idle or checking slots have idle_seq 2");
}

TEST_F(refusal, IdleTimesOutOfIdleSeqOrder) {
    auto& slot = nth<snapshot_slot>(2);
    slot.state = slot_state::checking, slot.idle_since = 5, slot.idle_seq = 1;  // before slot 1, idle after it
    expect_refused(index_of(nth<snapshot_handle>(0)), "slot 1: idle times are set in idle_seq order");
}

TEST_F(refusal, ARepeatedHandle) {
    nth<snapshot_handle>(1).id = 8;
    expect_refused(index_of(nth<snapshot_handle>(1)), "handle id=8: repeated");
}

TEST_F(refusal, ATurnNotBelowItsWeight) {
    nth<snapshot_handle>(0).turn = 3;
    expect_refused(index_of(nth<snapshot_handle>(0)), "handle id=8: turn not below its weight (0 under fifo)");
}

TEST_F(refusal, ATurnBehindTheFront) {
    nth<snapshot_handle>(1).weight = 2;
    nth<snapshot_handle>(1).turn = 1;
    expect_refused(index_of(nth<snapshot_handle>(1)), "handle id=9: a turn in progress behind the front of the rotation");
}

TEST_F(refusal, AWeightOutOfRange) {
    nth<snapshot_handle>(0).weight = 65536;
    expect_refused(index_of(nth<snapshot_handle>(0)), "handle id=8: weight outside 1..65535");
}

TEST_F(refusal, AWaiterOfAnUnknownHandle) {
    nth<snapshot_waiter>(2).handle = 4;
    expect_refused(index_of(nth<snapshot_waiter>(2)), "waiter id=5: handle 4 has no handle record");
}

TEST_F(refusal, AHandleWithoutWaiters) {
    c.max_waiters_per_handle = 3;
    nth<snapshot_waiter>(2).handle = 8;
    expect_refused(index_of(nth<snapshot_handle>(1)), "handle id=9 has no waiter");  // named at its own record
}

TEST_F(refusal, ARepeatedWaiter) {
    nth<snapshot_waiter>(1).id = 3;
    expect_refused(index_of(nth<snapshot_waiter>(1)), "waiter id=3: repeated");
}

TEST_F(refusal, AWaiterAboveTheHighestId) {
    nth<snapshot_begin>().highest_waiter = 4;
    expect_refused(index_of(nth<snapshot_waiter>(2)), "waiter id=5: above highest_waiter");
}

TEST_F(refusal, MoreWaitersOfAHandleThanItsLimit) {
    c.max_waiters_per_handle = 1;
    expect_refused(index_of(nth<snapshot_waiter>(1)), "waiter id=4: more waiters of one handle than max_waiters_per_handle");
}

TEST_F(refusal, ArrivalsOutOfOrder) {
    nth<snapshot_waiter>(1).arrival = 0;
    expect_refused(index_of(nth<snapshot_waiter>(1)), "waiter id=4: arrival not increasing, or not below arrivals");
}

TEST_F(refusal, ADeadlineAlreadyDue) {
    nth<snapshot_waiter>(0).deadline = 202;
    expect_refused(index_of(nth<snapshot_waiter>(0)), "waiter id=3: a deadline at or before now");
}

TEST_F(refusal, ACounterOutOfOrder) {
    std::swap(nth<snapshot_counter>(0), nth<snapshot_counter>(1));
    expect_refused(index_of(nth<snapshot_counter>(1)), "counter acquires: out of order or repeated");
}

TEST_F(refusal, AHistogramThatDisagreesWithTheGrants) {
    nth<snapshot_bucket>(0).count += 1;
    expect_refused(valid.size() - 1, "the wait histogram counts 3 grants, the counters 2");
}

TEST_F(refusal, AnIdleSlotWhileAWaiterIsUncovered) {
    // Slot 1 idle and fresh instead of checking: invariant 6.
    auto& slot = nth<snapshot_slot>(1);
    slot.state = slot_state::idle, slot.verified_at = 150;
    valid.insert(valid.begin() + 5, snapshot_idle{1});
    expect_refused(valid.size() - 1, "an idle slot while a waiter is queued (invariant 6)");
}

TEST_F(refusal, SpawnPlanningThatWouldStartASpawn) {
    // Without one of the two spawning slots, three waiters are covered by one check and
    // one spawn: spawn planning would start another.
    valid.erase(valid.begin() + 3);
    expect_refused(valid.size() - 1, "spawn planning would start a spawn now");
}

TEST_F(refusal, ABackoffWithoutFailures) {
    nth<snapshot_begin>().backoff_end = 10;
    expect_refused(0, "backoff_end is 0 exactly when spawn_failures_in_a_row is 0");
}

// The backoff of decision 6 ends at a failure's now (0..now) + the delay of that many
// failures in a row: any other end is a state no scheduler reaches.
TEST_F(refusal, ABackoffEndNoFailureGives) {
    nth<snapshot_begin>().spawn_failures_in_a_row = 2;  // delay min(100000000 x 2, 30000000000)
    nth<snapshot_begin>().backoff_end = 202 + 200'000'000;  // a failure at now: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_begin>().backoff_end = 200'000'000;  // a failure at 0: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_begin>().backoff_end = 202 + 200'000'001;  // a failure after now
    expect_refused(0, "backoff_end 200000203 is not a failure's time (0..now) + 200000000, the delay of 2 "
                      "failures in a row");
    nth<snapshot_begin>().backoff_end = 199'999'999;  // a failure before 0
    expect_refused(0, "backoff_end 199999999 is not a failure's time (0..now) + 200000000, the delay of 2 "
                      "failures in a row");
}

// A lease is reported once its leak is due (step 2), and only then: with leak_threshold
// a leased slot whose report is not due yet is still unreported.
TEST_F(refusal, ALeaseReportedBeforeItsLeakWasDue) {
    nth<snapshot_slot>(0).leak_unreported = false;  // granted at 2, leak_threshold 1000, now 202
    expect_refused(1, "slot 0: a lease reported before its leak was due");
}

// Only a stale idle slot is checked on checkout, and only check_after_idle makes one
// stale: with keepalive alone every check is a keepalive check.
TEST_F(refusal, ACheckOnCheckoutWithoutCheckAfterIdle) {
    c.check_after_idle = 0;
    c.keepalive_interval = 100'000;
    nth<snapshot_slot>(1).keepalive_check = true;  // a keepalive check: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_slot>(1).keepalive_check = false;
    expect_refused(2, "slot 1: a check on checkout without check_after_idle");
}

// A waiter's effective deadline is at most its acquire's now + acquire_timeout
// (decision 1).
TEST_F(refusal, AWaiterDeadlineLaterThanAcquireTimeoutAllows) {
    c.acquire_timeout = 10'000;  // waiter 3 (at 200, deadline 5000) is valid; waiter 4 has none
    expect_refused(index_of(nth<snapshot_waiter>(1)), "waiter id=4: a deadline after arrived_at + acquire_timeout");
    nth<snapshot_waiter>(1).deadline = 201 + 10'000;
    nth<snapshot_waiter>(2).deadline = 202 + 10'000;
    { scheduler restored(c, valid, 1); }
    nth<snapshot_waiter>(2).deadline = 202 + 10'001;
    expect_refused(index_of(nth<snapshot_waiter>(2)), "waiter id=5: a deadline after arrived_at + acquire_timeout");
}

// A lifetime starts at the slot's `spawned`, no later than its idle time (idle,
// checking), its grant (leased) or now (resetting), and lasts at most max_lifetime: a
// later expiry would keep the slot past its lifetime.
TEST_F(refusal, AnExpiryLaterThanMaxLifetimeAfterTheSpawn) {
    c.max_lifetime = 1'000'000;
    nth<snapshot_slot>(0).expires_at = 2 + 1'000'000;  // leased, granted at 2
    nth<snapshot_slot>(1).expires_at = 4 + 1'000'000;  // checking, idle since 4
    { scheduler restored(c, valid, 1); }
    nth<snapshot_slot>(1).expires_at = 4 + 1'000'001;
    expect_refused(2, "slot 1: expires_at after its idle time + max_lifetime");
    nth<snapshot_slot>(1).expires_at = 4 + 1'000'000;
    nth<snapshot_slot>(0).expires_at = never;
    expect_refused(1, "slot 0: expires_at after its grant + max_lifetime");
}

// A count the steps add 1 to, at 2^64-1, would wrap at its next step (lease 0, an
// arrival below the one before it, ...).
TEST_F(refusal, CountsThatWouldWrap) {
    constexpr std::uint64_t last = std::numeric_limits<std::uint64_t>::max();
    const std::vector<snapshot_record> original = valid;
    nth<snapshot_begin>().last_lease = last;
    expect_refused(0, "last_lease at 2^64-1 (the next lease id would wrap)");
    valid = original, nth<snapshot_begin>().arrivals = last;
    expect_refused(0, "arrivals at 2^64-1 (the next queued waiter would wrap it)");
    valid = original, nth<snapshot_begin>().idle_seq = last;
    expect_refused(0, "idle_seq at 2^64-1 (the next idle slot would wrap it)");
    valid = original, nth<snapshot_begin>().spawn_failures_in_a_row = last, nth<snapshot_begin>().backoff_end = 500;
    expect_refused(0, "spawn_failures_in_a_row at 2^64-1 (the next failure would wrap it)");
    valid = original, nth<snapshot_slot>(1).uses = last;
    expect_refused(2, "slot 1: uses at 2^64-1 without max_uses (the next grant would wrap it)");
    c.max_uses = last;  // with max_uses a slot at it retires before another grant
    expect_refused(2, "slot 1: max_uses reached");
}

TEST_F(refusal, StateBeforeStart) {
    nth<snapshot_begin>().started = false;
    expect_refused(0, "before start every field is as constructed");
}

TEST_F(refusal, ClosedWithoutShuttingDown) {
    nth<snapshot_begin>().closed = true;
    expect_refused(0, "closed without shutting_down");
}

TEST_F(refusal, WaitersWhileShuttingDown) {
    nth<snapshot_begin>().shutting_down = true;
    expect_refused(index_of(nth<snapshot_waiter>(0)), "waiter id=3: queued while shutting down");
}


// --- Found by the mutation pass over core/src/snapshot.cpp (tools/mutate-core --source snapshot).

TEST_F(refusal, NoRecordsAtAll) {
    valid.clear();
    expect_refused(0, "a snapshot starts with `snapshot`");
}

// Each state uses only its own fields (section 7.2): any other field away from its
// default is refused, in every state.
TEST_F(refusal, EveryFieldAStateDoesNotUse) {
    using setter = std::function<void(snapshot_slot&)>;
    const std::vector<std::pair<std::string, setter>> fields{
        {"expires_at", [](snapshot_slot& r) { r.expires_at = 10; }},
        {"verified_at", [](snapshot_slot& r) { r.verified_at = 1; }},
        {"idle_since", [](snapshot_slot& r) { r.idle_since = 1; }},
        {"idle_seq", [](snapshot_slot& r) { r.idle_seq = 1; }},
        {"granted_at", [](snapshot_slot& r) { r.granted_at = 1; }},
        {"lease", [](snapshot_slot& r) { r.lease = 1; }},
        {"uses", [](snapshot_slot& r) { r.uses = 1; }},
        {"leak_unreported", [](snapshot_slot& r) { r.leak_unreported = true; }},
        {"keepalive_check", [](snapshot_slot& r) { r.keepalive_check = true; }},
        {"handle", [](snapshot_slot& r) { r.handle = 7; }},
    };
    const std::vector<std::pair<slot_state, std::vector<std::string>>> used{
        {slot_state::spawning, {}},
        {slot_state::retiring, {}},
        {slot_state::idle, {"expires_at", "verified_at", "idle_since", "idle_seq", "uses"}},
        {slot_state::leased, {"expires_at", "granted_at", "lease", "uses", "leak_unreported", "handle"}},
        {slot_state::checking, {"expires_at", "idle_since", "idle_seq", "uses", "keepalive_check"}},
        {slot_state::resetting, {"expires_at", "uses"}},
    };
    const std::vector<snapshot_record> original = valid;
    for (const auto& [state, its_fields] : used) {
        for (const auto& [field, set] : fields) {
            if (std::find(its_fields.begin(), its_fields.end(), field) != its_fields.end()) continue;
            valid = original;
            snapshot_slot& slot = nth<snapshot_slot>(2);  // spawning: every field at its default
            slot.state = state;
            set(slot);
            SCOPED_TRACE(std::string(to_string(state)) + " with " + field);
            expect_refused(3, "slot 2: a field its state does not use is not its default");
        }
    }
}

// Decision 6: the delay doubles per failure up to spawn_backoff_max and stays there,
// also where spawn_backoff_initial x 2^(failures-1) would overflow (it wraps to 0 at 58
// failures of 10^8 ns) or the shift would (65 failures).
TEST_F(refusal, ABackoffDelayStaysAtItsMaximum) {
    for (const std::uint64_t failures : {9U, 10U, 58U, 64U, 65U}) {
        // 9 failures: 100000000 x 2^8 = 25.6 s, below the 30 s maximum; then the maximum.
        const nanos delay = failures == 9 ? 25'600'000'000 : 30'000'000'000;
        nth<snapshot_begin>().spawn_failures_in_a_row = failures;
        nth<snapshot_begin>().backoff_end = delay;  // a failure at 0: valid
        { scheduler restored(c, valid, 1); }
        nth<snapshot_begin>().backoff_end = delay - 1;
        expect_refused(0, "backoff_end " + std::to_string(delay - 1) + " is not a failure's time (0..now) + " +
                              std::to_string(delay) + ", the delay of " + std::to_string(failures) +
                              " failures in a row");
    }
}

// An initial delay whose doubling just fits (initial = (2^64-1) >> shift) is doubled, not
// cut to the maximum.
TEST_F(refusal, ABackoffDelayThatJustFits) {
    constexpr nanos initial = never >> 2;
    c.spawn_backoff_initial = initial;
    c.spawn_backoff_max = never - 1;
    nth<snapshot_begin>().spawn_failures_in_a_row = 3;
    nth<snapshot_begin>().backoff_end = initial << 2;  // a failure at 0: valid
    { scheduler restored(c, valid, 1); }
}

// The idle records list exactly the idle slots, each once, in verification order. Slot 1
// (checking in the fixture) made idle, and slot 2 (spawning) made an idle slot verified
// after it.
struct idle_refusal : refusal {
    void SetUp() override {
        refusal::SetUp();
        auto& one = nth<snapshot_slot>(1);
        one.state = slot_state::idle, one.verified_at = 150;  // idle_since 4, idle_seq 2
        auto& two = nth<snapshot_slot>(2);
        two.state = slot_state::idle, two.verified_at = 160, two.idle_since = 3, two.idle_seq = 1, two.uses = 1;
    }
    void list_idle(std::vector<std::uint32_t> slots) {
        auto at = valid.begin() + 5;  // the first handle
        for (const std::uint32_t s : slots) at = valid.insert(at, snapshot_idle{s}) + 1;
    }
};

TEST_F(idle_refusal, TheIdleRecordsAreTheIdleSlots) {
    list_idle({1, 2});  // valid up to invariant 6 (three waiters, two fresh idle slots)
    expect_refused(valid.size() - 1, "an idle slot while a waiter is queued (invariant 6)");
}

TEST_F(idle_refusal, AnIdleSlotListedTwice) {
    list_idle({1, 2, 1});
    expect_refused(5, "an idle slot is listed twice");
}

TEST_F(idle_refusal, AnIdleSlotNotListed) {
    list_idle({1});
    expect_refused(6, "the idle records list 1 of 2 idle slots");
}

TEST_F(idle_refusal, IdleRecordsNotInVerificationOrder) {
    list_idle({2, 1});
    expect_refused(6, "idle slot=1: the idle order is by verification, oldest first");
}

TEST_F(idle_refusal, AnIdleRecordBeyondTheSlots) {
    list_idle({1, 2, 5});
    expect_refused(7, "idle slot=5: not an idle slot");
}

// With checks the idle order is by verification, whatever the idle_seq order: a slot
// that passed a keepalive check goes to the back, behind one that became idle after it.
TEST(SchedulerSnapshot, AnIdleOrderByVerificationNotByIdleSeq) {
    config c;
    c.max_slots = 2;
    c.keepalive_interval = 100;
    scheduler s(c, 1);
    s.step(event::start(0));
    s.step(event::acquire(0, 1, 7));
    s.step(event::spawned(1, 0));
    s.step(event::acquire(2, 2, 7));
    s.step(event::spawned(3, 1));
    s.step(event::release(10, 0, 1));  // slot 0 idle first (idle_seq 2)
    s.step(event::release(50, 1, 2));  // then slot 1 (idle_seq 3)
    s.step(event::tick(110));          // slot 0's keepalive check
    s.step(event::checked(111, 0, check_outcome::alive));  // slot 0 verified at 111: behind slot 1
    const auto records = snapshot_of(s);
    ASSERT_EQ(std::count(records.begin(), records.end(), snapshot_record{snapshot_idle{1}}), 1);
    ASSERT_LT(std::find(records.begin(), records.end(), snapshot_record{snapshot_idle{1}}),
              std::find(records.begin(), records.end(), snapshot_record{snapshot_idle{0}}));
    scheduler restored(c, records, 2);
    EXPECT_EQ(snapshot_of(restored), records);
}

// A wait of 2^63 ns or more is counted in the last bucket, 64, and written.
TEST(SchedulerSnapshot, TheLastWaitBucketIsWritten) {
    config c;
    c.max_slots = 1;
    scheduler s(c, 1);
    s.step(event::start(0));
    s.step(event::acquire(1, 1, 7));
    s.step(event::spawned(1 + (nanos{1} << 63), 0));  // granted after 2^63 ns
    const auto records = snapshot_of(s);
    EXPECT_EQ(records[records.size() - 2], (snapshot_record{snapshot_bucket{64, 1}}));
    scheduler restored(c, records, 2);
    EXPECT_EQ(snapshot_of(restored), records);
}

// snapshot_size() finds the capped handles outside the rotation itself, also when no
// snapshot() ran before it.
TEST(SchedulerSnapshot, TheSizeCountsTheParkedHandlesWithoutASnapshotBefore) {
    config c;
    c.max_slots = 2;
    c.max_leases_per_handle = 1;
    scheduler s(c, 1);
    s.step(event::start(0));
    s.step(event::acquire(0, 1, 7));
    s.step(event::spawned(1, 0));  // handle 7 at its cap, no waiter: outside the rotation
    const std::uint64_t size = s.snapshot_size();
    std::vector<snapshot_record> records;
    auto collect = [&records](const snapshot_record& r) { records.push_back(r); };
    s.snapshot(collect);
    EXPECT_EQ(size, records.size());
    EXPECT_EQ(std::count(records.begin(), records.end(), snapshot_record{snapshot_handle{7, 1, 0, 1}}), 1);
}

// Handle 8 holds slot 0's lease, handle 9 slot 2's (lease 2): at max_leases=1 both are
// outside the rotation, listed by id.
struct capped_refusal : refusal {
    void SetUp() override {
        refusal::SetUp();
        nth<snapshot_slot>(0).handle = 8;
        auto& two = nth<snapshot_slot>(2);
        two.state = slot_state::leased, two.lease = 2, two.uses = 1, two.granted_at = 5, two.leak_unreported = true;
        two.handle = 9;
        nth<snapshot_handle>(0).max_leases = 1;
        nth<snapshot_handle>(1).max_leases = 1;
    }
};

TEST_F(capped_refusal, TwoHandlesAtTheirCapsByIdAreValid) {
    scheduler restored(c, valid, 1);
    EXPECT_EQ(restored.counters().waiters_behind_cap, 3U);
}

TEST_F(capped_refusal, HandlesOutsideTheRotationNotById) {
    std::swap(nth<snapshot_handle>(0), nth<snapshot_handle>(1));
    expect_refused(index_of(nth<snapshot_handle>(1)), "handle id=8: handles outside the rotation go by id");
}

TEST_F(capped_refusal, MoreLeasesThanTheCap) {
    nth<snapshot_slot>(2).handle = 8;
    expect_refused(index_of(nth<snapshot_handle>(0)), "handle id=8: 2 leases, above its max_leases=1");
}

TEST_F(capped_refusal, ATurnOutsideTheRotation) {
    nth<snapshot_handle>(0).turn = 1;  // weight 3, listed first: only its place outside the rotation is wrong
    expect_refused(index_of(nth<snapshot_handle>(0)), "handle id=8: a turn outside the rotation");
}

TEST_F(refusal, AWeightWithoutWaiters) {
    nth<snapshot_slot>(0).handle = 20;
    valid.insert(valid.begin() + static_cast<std::ptrdiff_t>(index_of(nth<snapshot_handle>(1))) + 1,
                 snapshot_handle{20, 2, 0, 1});
    expect_refused(index_of(snapshot_handle{20, 2, 0, 1}), "handle id=20: a weight without waiters");
}

TEST_F(refusal, ACounterBeforeStart) {
    valid = {snapshot_begin{}, snapshot_counter{counter::acquires, 1}, snapshot_end{}};
    expect_refused(1, "a counter before start");
}

TEST_F(refusal, AnUnknownCounter) {
    const auto at = static_cast<std::ptrdiff_t>(index_of(nth<snapshot_bucket>(0)));  // after the last counter
    valid.insert(valid.begin() + at, snapshot_counter{static_cast<counter>(counter_count), 1});
    expect_refused(static_cast<std::size_t>(at), "unknown counter");
}

TEST_F(refusal, AWaitBucketAbove64) {
    valid.insert(valid.end() - 1, snapshot_bucket{65, 1});
    expect_refused(valid.size() - 2, "wait_bucket index=65: above 64");
}

TEST_F(refusal, ARepeatedWaitBucket) {
    const snapshot_bucket last = std::get<snapshot_bucket>(valid[valid.size() - 2]);
    valid.insert(valid.end() - 1, snapshot_bucket{last.index, 0});
    expect_refused(valid.size() - 2, "wait_bucket index=" + std::to_string(last.index) + ": out of order or repeated");
}

TEST_F(refusal, AHistogramThatCountsFewerGrants) {
    nth<snapshot_bucket>(0).count -= 1;
    expect_refused(valid.size() - 1, "the wait histogram counts 1 grants, the counters 2");
}

TEST_F(refusal, ShuttingDownBeforeStart) {
    valid = {snapshot_begin{}, snapshot_end{}};
    std::get<snapshot_begin>(valid[0]).shutting_down = true;
    expect_refused(0, "shutting_down before start");
}

// Before start every scalar is as constructed: each one changed alone is refused.
TEST_F(refusal, EachScalarBeforeStart) {
    c.jitter_seed = 5;
    const std::vector<std::function<void(snapshot_begin&)>> changes{
        [](snapshot_begin& b) { b.now = 1; },
        [](snapshot_begin& b) { b.last_lease = 1; },
        [](snapshot_begin& b) { b.highest_waiter = 1; },
        [](snapshot_begin& b) { b.arrivals = 1; },
        [](snapshot_begin& b) { b.spawn_failures_in_a_row = 1; },
        [](snapshot_begin& b) { b.backoff_end = 1; },
        [](snapshot_begin& b) { b.idle_seq = 1; },
        [](snapshot_begin& b) { b.jitter_state = 0; },
    };
    for (std::size_t k = 0; k < changes.size(); ++k) {
        snapshot_begin b{};
        b.jitter_state = 5;
        valid = {b, snapshot_end{}};
        { scheduler restored(c, valid, 1); }  // as constructed: valid
        changes[k](std::get<snapshot_begin>(valid[0]));
        SCOPED_TRACE("change " + std::to_string(k));
        expect_refused(0, "before start every field is as constructed");
    }
}

TEST_F(refusal, FailuresWithoutABackoff) {
    nth<snapshot_begin>().spawn_failures_in_a_row = 1;
    expect_refused(0, "backoff_end is 0 exactly when spawn_failures_in_a_row is 0");
}

TEST_F(refusal, ABackoffEndOneFailureDoesNotGive) {
    nth<snapshot_begin>().spawn_failures_in_a_row = 1;
    nth<snapshot_begin>().backoff_end = 100'000'000;  // a failure at 0 + 100000000: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_begin>().backoff_end = 1;
    expect_refused(0, "backoff_end 1 is not a failure's time (0..now) + 100000000, the delay of 1 failures in a row");
}

// A failure's now + a delay past 2^64-1 ends the backoff at 2^64-1 (saturated).
TEST_F(refusal, ABackoffEndPastTheEndOfTime) {
    c.spawn_backoff_max = never;
    nth<snapshot_begin>().spawn_failures_in_a_row = 65;  // the delay: spawn_backoff_max
    nth<snapshot_begin>().backoff_end = never;           // a failure at now=202: valid
    { scheduler restored(c, valid, 1); }
}

TEST_F(refusal, ARepeatedSlot) {
    valid.insert(valid.begin() + 4, nth<snapshot_slot>(2));
    expect_refused(4, "slot 2: out of order or repeated");
}

TEST_F(refusal, ASlotBeforeStart) {
    valid = {snapshot_begin{}, snapshot_slot{}, snapshot_end{}};  // slot 0 spawning
    expect_refused(1, "slot 0: a slot is live before start");
}

TEST_F(refusal, ASlotStateBeyondTheStates) {
    nth<snapshot_slot>(2).state = static_cast<slot_state>(slot_state_count);
    expect_refused(3, "slot 2: an empty slot is not written");
}

TEST_F(refusal, ResettingWithoutResetOnRelease) {
    nth<snapshot_slot>(2).state = slot_state::resetting;
    nth<snapshot_slot>(2).uses = 1;
    expect_refused(3, "slot 2: resetting without reset_on_release");
}

TEST_F(refusal, AnExpiryWithoutMaxLifetime) {
    nth<snapshot_slot>(0).expires_at = 5000;
    expect_refused(1, "slot 0: expires_at without max_lifetime");
}

// A leased slot's lifetime is bounded from its grant (2), not from now (202).
TEST_F(refusal, AnExpiryLaterThanMaxLifetimeAfterTheGrant) {
    c.max_lifetime = 1'000'000;
    nth<snapshot_slot>(0).expires_at = 2 + 1'000'001;
    expect_refused(1, "slot 0: expires_at after its grant + max_lifetime");
}

TEST_F(refusal, EachTimeAfterNow) {
    const std::vector<snapshot_record> original = valid;
    nth<snapshot_slot>(0).granted_at = 203;
    expect_refused(1, "slot 0: a time after now");
    valid = original, nth<snapshot_slot>(1).idle_since = 203;
    expect_refused(2, "slot 1: a time after now");
    valid = original;
    auto& slot = nth<snapshot_slot>(1);
    slot.state = slot_state::idle, slot.verified_at = 203;
    expect_refused(2, "slot 1: a time after now");
}

TEST_F(refusal, AnIdleSeqNotBelowTheSnapshots) {
    ASSERT_EQ(nth<snapshot_begin>().idle_seq, 3U);
    nth<snapshot_slot>(1).idle_seq = 3;
    expect_refused(2, "slot 1: idle_seq not below the snapshot's");
}

// Slot 1 (checking in the fixture, idle since 4, one use) made idle.
TEST_F(refusal, IdleSlotsThatCannotBe) {
    const std::vector<snapshot_record> original = valid;
    auto idle = [this] {
        auto& slot = nth<snapshot_slot>(1);
        slot.state = slot_state::idle, slot.verified_at = 150;
        return &slot;
    };
    idle()->verified_at = 3;
    expect_refused(2, "slot 1: verified before its idle time");
    valid = original, idle();
    c.max_uses = 1;
    expect_refused(2, "slot 1: idle with max_uses reached");
    valid = original, idle()->expires_at = 202;
    c.max_uses = 0, c.max_lifetime = 1000;
    nth<snapshot_slot>(0).expires_at = 2 + 1000;
    expect_refused(2, "slot 1: idle past its lifetime");
}

TEST_F(refusal, LeasedSlotsThatCannotBe) {
    const std::vector<snapshot_record> original = valid;
    nth<snapshot_slot>(0).lease = 0;
    expect_refused(1, "slot 0: lease not in 1..last_lease");
    valid = original, nth<snapshot_slot>(0).uses = 0;
    expect_refused(1, "slot 0: leased with uses outside 1..max_uses");
    valid = original, nth<snapshot_slot>(0).uses = 3;
    c.max_uses = 2;
    expect_refused(1, "slot 0: leased with uses outside 1..max_uses");
    valid = original, c.max_uses = 0, c.leak_threshold = 0;
    expect_refused(1, "slot 0: an unreported lease without leak_threshold");
}

TEST_F(refusal, ResettingWithMaxUsesReached) {
    c.reset_on_release = true;
    c.max_uses = 2;
    auto& slot = nth<snapshot_slot>(2);
    slot.state = slot_state::resetting, slot.uses = 2;
    expect_refused(3, "slot 2: max_uses reached");
}

TEST_F(refusal, MoreSpawnsThanMaxConcurrentSpawns) {
    c.max_concurrent_spawns = 1;
    expect_refused(4, "slot 3: more spawns than max_concurrent_spawns");
}

TEST_F(capped_refusal, LeasesNotGrantedInLeaseOrder) {
    nth<snapshot_slot>(2).granted_at = 2;  // lease 2 granted with lease 1, in one step: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_slot>(2).granted_at = 1;
    expect_refused(5, "slot 2: leases are granted in lease order");
}

// Handle records run out at max_waiters + slot_capacity = 13: handles 8 and 9, then
// capped handles 20... (each refused later, a cap without waiters or leases).
TEST_F(refusal, MoreHandlesThanHandleRecords) {
    const auto after = [this] { return valid.begin() + static_cast<std::ptrdiff_t>(index_of(nth<snapshot_handle>(1))) + 1; };
    for (std::uint64_t id = 30; id >= 20; --id) valid.insert(after(), snapshot_handle{id, 1, 0, 1});
    // Thirteen records; slot 0's lease (handle 7, no record) needs a fourteenth.
    expect_refused(index_of(nth<snapshot_counter>(0)), "more handles than max_waiters + slot_capacity");
    valid.insert(after(), snapshot_handle{31, 1, 0, 1});  // listed before 20..30: 30 is the fourteenth
    expect_refused(index_of(snapshot_handle{30, 1, 0, 1}), "handle id=30: more handles than max_waiters + slot_capacity");
}

TEST_F(refusal, HandleRecordsThatCannotBe) {
    const std::vector<snapshot_record> original = valid;
    nth<snapshot_handle>(1).weight = 65535;  // the largest weight: valid
    { scheduler restored(c, valid, 1); }
    nth<snapshot_handle>(1).weight = 0;
    expect_refused(index_of(nth<snapshot_handle>(1)), "handle id=9: weight outside 1..65535");
    valid = original, nth<snapshot_handle>(0).turn = 1;
    c.policy = fairness_policy::fifo;
    expect_refused(index_of(nth<snapshot_handle>(0)), "handle id=8: turn not below its weight (0 under fifo)");
    valid = {snapshot_begin{}, snapshot_handle{8, 1, 0}, snapshot_end{}};
    expect_refused(1, "handle id=8: a handle before start");
}

TEST_F(refusal, WaiterRecordsThatCannotBe) {
    const std::vector<snapshot_record> original = valid;
    const std::size_t third = index_of(nth<snapshot_waiter>(2));
    c.max_waiters = 2;
    expect_refused(third, "waiter id=5: more waiters than max_waiters");
    c.max_waiters = 8;
    nth<snapshot_waiter>(2).arrival = nth<snapshot_begin>().arrivals;
    expect_refused(third, "waiter id=5: arrival not increasing, or not below arrivals");
    valid = original, nth<snapshot_waiter>(2).arrival = nth<snapshot_waiter>(1).arrival;
    expect_refused(third, "waiter id=5: arrival not increasing, or not below arrivals");
    valid = original, nth<snapshot_waiter>(2).arrived_at = 203;
    expect_refused(third, "waiter id=5: arrived_at after now, or before the waiter queued before it");
    valid = original, nth<snapshot_waiter>(2).arrived_at = nth<snapshot_waiter>(1).arrived_at - 1;
    expect_refused(third, "waiter id=5: arrived_at after now, or before the waiter queued before it");
}

TEST_F(refusal, SizesBeforeStart) {
    valid = {snapshot_begin{}, snapshot_sizes{4, 0}, snapshot_end{}};
    expect_refused(1, "sizes: a resize before start");
}

// Whole-state rules (check_restored), each on a small snapshot of its own.
TEST_F(refusal, StatesNoStepLeaves) {
    snapshot_begin b{};
    b.now = 200, b.started = true, b.idle_seq = 1;
    const snapshot_slot idle{never, 150, 150, 0, 0, 0, 1, 0, slot_state::idle};
    const snapshot_slot spawning{never, 0, 0, 0, 0, 0, 0, 1, slot_state::spawning};
    snapshot_begin closing = b;
    closing.shutting_down = true, closing.closed = true;
    valid = {closing, spawning, snapshot_end{}};
    expect_refused(2, "closed with a slot not empty");
    closing.closed = false;
    valid = {closing, idle, snapshot_idle{0}, snapshot_end{}};
    expect_refused(3, "idle slots while shutting down");
    valid = {closing, snapshot_end{}};
    expect_refused(1, "shutting down with every slot empty, yet not closed");
    valid = {b, snapshot_sizes{1, 0}, idle, spawning, snapshot_idle{0}, snapshot_end{}};
    expect_refused(5, "an idle slot while more slots are live than max_slots");
    // One waiter and a fresh idle slot (check_after_idle 100: fresh until 250).
    snapshot_begin waiting = b;
    waiting.highest_waiter = 1, waiting.arrivals = 1;
    valid = {waiting, idle, snapshot_idle{0}, snapshot_handle{7, 1, 0}, snapshot_waiter{1, 7, never, 200, 0},
             snapshot_end{}};
    expect_refused(5, "an idle slot while a waiter is queued (invariant 6)");
    // ... covered by a spawn: still refused, the slot is fresh.
    valid = {waiting, idle, spawning, snapshot_idle{0}, snapshot_handle{7, 1, 0}, snapshot_waiter{1, 7, never, 200, 0},
             snapshot_end{}};
    expect_refused(6, "an idle slot while a waiter is queued (invariant 6)");
    // A stale idle slot (verified at 50) with the waiter not covered.
    snapshot_slot stale = idle;
    stale.verified_at = stale.idle_since = 50;
    valid = {waiting, stale, snapshot_idle{0}, snapshot_handle{7, 1, 0}, snapshot_waiter{1, 7, never, 200, 0},
             snapshot_end{}};
    expect_refused(5, "an idle slot while a waiter is queued (invariant 6)");
    // An idle timeout due at 150.
    c.idle_timeout = 100;
    valid = {b, stale, snapshot_idle{0}, snapshot_end{}};
    expect_refused(3, "work is due at or before now (150)");
}

// What the restore builds besides the records: each checked by the steps that follow.
void expect_same_tail(const config& c, const std::vector<event>& before, const std::vector<event>& after) {
    scheduler original(c, 1);
    for (const event& e : before) original.step(e);
    scheduler restored(c, snapshot_of(original), 2);
    for (std::size_t i = 0; i < after.size(); ++i)
        ASSERT_EQ(step(restored, after[i]), step(original, after[i])) << "event " << i << " after the restore";
}

TEST(SchedulerSnapshot, RestoredIdleTimesKeepTheirOrder) {
    config c;
    c.max_slots = 2;
    c.check_after_idle = 100'000;
    c.idle_timeout = 1000;
    expect_same_tail(c,
                     {event::start(0), event::acquire(0, 1, 7), event::spawned(1, 0), event::acquire(2, 2, 7),
                      event::spawned(3, 1), event::release(10, 1, 2), event::release(20, 0, 1)},
                     {event::tick(1010), event::tick(1020)});  // slot 1 idle longest: it times out first
}

TEST(SchedulerSnapshot, RestoredFifoIdleOrderGrantsTheOldestFreshSlot) {
    config c;
    c.max_slots = 2;
    c.check_after_idle = 100'000;
    c.idle_order = idle_order::fifo;
    expect_same_tail(c,
                     {event::start(0), event::acquire(0, 1, 7), event::spawned(1, 0), event::acquire(2, 2, 7),
                      event::spawned(3, 1), event::release(10, 0, 1), event::release(20, 1, 2)},
                     {event::acquire(30, 3, 7)});  // slot 0, idle longest
}

TEST(SchedulerSnapshot, ARestoredBackoffEndsWithASpawn) {
    config c;
    c.max_slots = 1;
    expect_same_tail(c, {event::start(0), event::acquire(0, 1, 7), event::spawn_failed(1, 0)},
                     {event::tick(1 + 100'000'000), event::spawned(1 + 100'000'001, 0)});
}

}  // namespace
}  // namespace fairpool::core
