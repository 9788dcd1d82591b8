/*
 * wake_protocol.pml -- the mailbox wake-up protocol of fairpool's Boost.Asio adapter.
 *
 * Checked by tools/check-wake-protocol (spin -a, gcc, ./pan). By hand, in a scratch
 * directory:
 *   spin -a wake_protocol.pml && gcc -O1 -o pan pan.c && ./pan -a -N no_lost_wakeup
 *   spin -a wake_protocol.pml && gcc -O1 -DSAFETY -DNOCLAIM -o pan pan.c && ./pan
 *
 * The C++ it models (adapters/asio/include/fairpool/asio/detail/):
 *
 *   wake_flag.hpp    raise():  return !scheduled_.exchange(true, acq_rel);
 *                    clear():  scheduled_.store(false, seq_cst);
 *   pool_state.hpp   start_acquire(): acquires_.bounded_push({...}); wake();
 *                    release():       slot_commands_.bounded_push({release,...}); wake();
 *                    request_shutdown(): shutdown_requested_.store(true); wake();
 *                    wake():  if (wake_.raise()) post_to_actor([..]{ self->drain(); });
 *                    post_to_actor(): boost::asio::post(strand_, f);
 *                    drain(): wake_.clear();
 *                             slot_commands_.consume_all(...);
 *                             take_acquires();          // acquires_.consume_all(...)
 *                             ...                       // cancels_, deregisters_: same shape
 *                             if (shutdown_requested_ && !shutdown_fed_) feed(shutdown)
 *
 * Abstractions:
 *  - Each Boost.Lockfree queue is a Promela channel whose capacity is the number of
 *    commands that can ever be in it, so bounded_push never fails; an assertion checks
 *    that it really is never full. Push and pop are linearizable (one atomic step),
 *    and consume_all is "pop until a pop finds the queue empty": a command pushed
 *    while consume_all runs may or may not be taken by it.
 *  - Promela is sequentially consistent. What the C++ needs for the same result: when
 *    a producer's exchange(true) returns true, the drain that later clears the flag must
 *    see that producer's push (store-load order at the drain: clear, then pop).
 *    clear() as scheduled_.exchange(false, acq_rel) gives it by the C++ memory model:
 *    every write of scheduled_ is then an RMW, so the drain's exchange reads from the
 *    release sequence of the producer's exchange and synchronizes with it. The current
 *    clear(), store(false, seq_cst), does not by the standard (the Boost.Lockfree pops
 *    are acquire loads, not seq_cst): it works on x86 (gcc emits xchg) and on ARMv8
 *    with ldar, but not on POWER, nor ARMv8.3 with RCpc ldapr. A release store loses
 *    wake-ups even on x86: the RELEASE_CLEAR variant below models that store buffer.
 *  - The strand is a lock: a posted drain is a process that waits for the strand, so
 *    any number of drains can be posted and queued while one runs; they start in any
 *    order (Asio's is FIFO; all drains are alike, so order does not matter).
 *  - cancels_ and deregisters_ are pushed and consumed exactly like the two queues
 *    modelled here (push, wake(), consumed after clear()): they add nothing new.
 *  - What the core does with a command is a nondeterministic choice: an acquire is
 *    granted (its completion is posted to the handler's executor, which later releases
 *    from another thread, racing with drains), or queued (a later release may grant
 *    it), or its release is pushed inline on the strand during the drain (the current
 *    code never does this; it is modelled so the protocol is known to allow it).
 *
 * Producers: Acquirer(2) pushes two acquires, Acquirer(1) one, Closer requests shutdown
 * (a flag, not a queue entry, woken the same way), and every grant starts a Completion
 * that pushes a release from another thread: up to 6 producers in all.
 *
 * Variants (spin -DNAME -a wake_protocol.pml):
 *   LATE_CLEAR     negative control: clear() AFTER consuming. Must lose a wake-up.
 *   RELEASE_CLEAR  negative control: clear() as scheduled_.store(false, release) on
 *                  x86-TSO (a per-thread store buffer). Must lose a wake-up.
 *   WITNESS_TWO    adds assert(posted + running < 2) when a drain is posted: its
 *                  violation is a witness that one running drain (flag already
 *                  cleared) plus one posted drain is reachable, so 2 is the exact bound
 *                  on drains posted or running, and 1 on drains posted but not started.
 *   NO_END_CHECK   leaves out the EndCheck process (the LTL runs use it, so that a
 *                  failure is reported by the claim, not by the end-state assertion).
 */

#define N_ACQUIRES 3                  /* Acquirer(2) + Acquirer(1) */
#define ACQ_CAP    N_ACQUIRES         /* every acquire at once */
#define SLOT_CAP   N_ACQUIRES         /* at most one release per acquire */

chan acquires      = [ACQ_CAP]  of { bit };   /* pool_state::acquires_ */
chan slot_commands = [SLOT_CAP] of { bit };   /* pool_state::slot_commands_ */

bool scheduled;            /* wake_flag::scheduled_ */
bool shutdown_requested;   /* pool_state::shutdown_requested_ */
bool shutdown_fed;         /* pool_state::shutdown_fed_ (touched by the actor only) */

/* Bookkeeping of the model, no C++ counterpart. */
byte posted;               /* drains posted to the strand and not yet started */
byte running;              /* drains started and not yet returned */
bool strand_busy;          /* the strand is running a handler */
bool drain_cleared;        /* the running drain has executed wake_.clear() */
byte live = 3;             /* producers (and completions) not yet returned from their
                              push + wake(): the 3 started by init, plus one per grant */
byte waiting;              /* acquires the core queued, not yet granted */

#ifdef RELEASE_CLEAR
bool clear_pending;        /* the drain thread's store buffer holds scheduled_ = false */
#endif

/* Nothing can happen any more: no drain posted or running, every producer returned. */
#define quiescent    (live == 0 && posted == 0 && running == 0)
/* Every command taken by the actor. */
#define all_consumed (len(acquires) == 0 && len(slot_commands) == 0 && \
                      (shutdown_fed || !shutdown_requested))

/* (a) No lost wake-up: whenever the system is quiescent, nothing is left unconsumed. */
ltl no_lost_wakeup { [] (quiescent -> all_consumed) }
/* (a') Every run reaches quiescence with every pushed command processed. */
ltl all_processed  { <> (quiescent && all_consumed) }

/* queue.bounded_push(cmd); FAIRPOOL_ASSERT(pushed); -- never full */
inline push(q, cap) {
    atomic { assert(len(q) < cap); q!0 }
}

/* boost::asio::post(strand_, [..]{ self->drain(); })
 * last (0 or 1): this was the producer's last action; it returns (live--) in the same step. */
inline post_drain(last) {
    atomic {
        posted++;
        assert(posted <= 1);             /* (c) at most one drain posted, not started */
        assert(posted + running <= 2);   /* (c) at most two drains posted or running, */
        assert(running == 0 || drain_cleared); /* and the running one has cleared the flag */
#ifdef WITNESS_TWO
        assert(posted + running < 2);    /* expected to fail: 2 is reachable */
#endif
        run Drain();
        live = live - last               /* last is 0 or 1 */
    }
}

/* wake(): if (wake_.raise()) post_to_actor(drain);
 * raise() is !scheduled_.exchange(true): the exchange is one atomic step, whose result
 * picks the branch; the post is a later, separate step. */
inline wake(last) {
    if
    :: atomic { !scheduled -> scheduled = true }; post_drain(last)   /* exchange returned false */
    :: atomic { scheduled -> live = live - last }                    /* exchange returned true */
    fi
}

#ifdef RELEASE_CLEAR
/* The drain thread's locked instructions (the CAS of its own push, the strand's mutex
 * when the handler returns) drain its store buffer first. Used inside atomic blocks. */
#define FLUSH_OWN if :: clear_pending -> scheduled = false; clear_pending = false :: else -> skip fi;
#else
#define FLUSH_OWN
#endif

/* wake_.clear(): scheduled_.store(false) */
inline clear() {
#ifdef RELEASE_CLEAR
    atomic { clear_pending = true; drain_cleared = true }  /* into the store buffer only */
#else
    atomic { scheduled = false; drain_cleared = true }
#endif
}

/* The core granted a waiter: operations_.take(w)->complete(...) posts the delivery to
 * the handler's executor, whose handler later releases the lease from another thread. */
inline grant() {
    atomic { live++; run Completion() }
}

proctype Drain() {
    bool inline_release;
    /* The strand runs one handler at a time: wait for it. */
    atomic {
        !strand_busy -> strand_busy = true; posted--; running++;
        assert(running == 1)             /* (b) never two drains at once */
    }
#ifndef LATE_CLEAR
    clear();                             /* drain(): wake_.clear();  -- FIRST */
#endif
    /* slot_commands_.consume_all([this](const slot_command& c){ feed(slot_event(c)); }) */
    do
    :: atomic {
           slot_commands?_;              /* pop */
           if                            /* feed(release): the core may grant a waiter */
           :: waiting > 0 -> waiting--; grant()
           :: skip
           fi
       }
    :: empty(slot_commands) -> break     /* a pop found the queue empty */
    od;
    /* take_acquires(): acquires_.consume_all([this](const acquire_command& c){ feed(acquire) }) */
    do
    :: atomic {
           acquires?_;                   /* pop */
           if                            /* feed(acquire): what the core decides */
           :: grant()                    /* granted now; released later, off the strand */
           :: waiting++                  /* queued */
           :: inline_release = true      /* released inline, on the strand, mid-drain */
           fi
       };
       if
       :: inline_release ->
          atomic {
              inline_release = false;
              FLUSH_OWN
              assert(len(slot_commands) < SLOT_CAP); slot_commands!0   /* release(): bounded_push */
          };
          wake(0)
       :: else -> skip
       fi
    :: empty(acquires) -> break
    od;
    /* if (shutdown_requested_.load(acquire) && !shutdown_fed_) { shutdown_fed_ = true; feed(shutdown) } */
    if
    :: atomic { shutdown_requested && !shutdown_fed -> shutdown_fed = true }
    :: else -> skip
    fi;
#ifdef LATE_CLEAR
    clear();                             /* the bug: clear after consuming */
#endif
    /* drain() returns; the strand may start the next handler. */
    atomic { FLUSH_OWN running--; strand_busy = false; drain_cleared = false }
}

/* start_acquire(): acquires_.bounded_push({op, waiter, ...}); wake();  -- n times */
proctype Acquirer(byte n) {
    do
    :: n > 1 -> push(acquires, ACQ_CAP); wake(0); n--
    :: n == 1 -> push(acquires, ACQ_CAP); wake(1); break
    od
}

/* request_shutdown(): shutdown_requested_.store(true, release); wake();
 * Not a queue entry: a flag the drain reads; it counts as one command. */
proctype Closer() {
    shutdown_requested = true;
    wake(1)
}

/* release(): slot_commands_.bounded_push({release, slot, lease, outcome}); wake();
 * From the thread that ran the user's completion handler, racing with any drain. */
proctype Completion() {
    push(slot_commands, SLOT_CAP);
    wake(1)
}

#ifdef RELEASE_CLEAR
/* The store buffer drains on its own at any time. */
active proctype Flusher() {
end:
    do
    :: atomic { clear_pending -> scheduled = false; clear_pending = false }
    od
}
#endif

#ifndef NO_END_CHECK
/* (a) as an end-state assertion: once quiescent (which is final), nothing is left. If
 * quiescence is never reached, this process never ends: an invalid end state. */
active proctype EndCheck() {
    quiescent -> assert(all_consumed)
}
#endif

init {
    atomic {
        run Acquirer(2);
        run Acquirer(1);
        run Closer()
    }
}
