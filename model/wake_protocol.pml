/*
 * wake_protocol.pml -- the actor's scheduling protocol in fairpool's Boost.Asio adapter:
 * the mailbox is the strand.
 *
 * Checked by tools/check-wake-protocol (spin -a, gcc, ./pan). By hand, in a scratch
 * directory:
 *   spin -a -DNO_END_CHECK wake_protocol.pml && gcc -O1 -o pan pan.c && ./pan -a -N no_lost_wakeup
 *   spin -a wake_protocol.pml && gcc -O1 -DSAFETY -DNOCLAIM -o pan pan.c && ./pan
 *
 * The C++ it models (adapters/asio/include/fairpool/asio/detail/):
 *
 *   actor_state.hpp  one atomic word: owner (idle, running, scheduled) and a pending bit
 *                    per kind of command.
 *                    announce(kinds, may_drain_inline): one CAS: set the bits; if the
 *                      owner was idle, claim it: running (the caller drains inline) or
 *                      scheduled (the caller posts a drain)
 *                    try_take_idle(): CAS word 0 -> running
 *                    take(): exchange(running): the pending bits, cleared
 *                    release(): CAS running -> 0 (fails if a bit was set meanwhile)
 *                    hand_off(left): running -> scheduled, with the bits left
 *                    begin(): scheduled -> running (a posted drain starts)
 *   pool_state.hpp   start_acquire(): on the pool's executor, fed_directly() (actor.hpp:
 *                      if try_take_idle(), feed the acquire directly, then
 *                      finish_drain(inline budget - 1)); else acquires.bounded_push(...);
 *                      announce(acquire)
 *                    release(): the same with slot_events and a release
 *                    request_shutdown(): announce(shutdown) (a bit, no queue entry)
 *   pool_drain.hpp   serve(kinds, budget): for each kind taken, pop while budget > 0;
 *                      a kind whose budget ran out is left
 *   actor.hpp        announce(): drain_inline -> drain(inline budget): serve(take()),
 *                      then finish_drain; post_drain -> post [ begin(); drain(posted
 *                      budget) ]
 *                    finish_drain(): loop { if (release()) return; serve(take()) },
 *                      or hand_off(left) and post_drain() when something is left
 *
 * Abstractions:
 *  - Each Boost.Lockfree queue is a Promela channel whose capacity is the number of
 *    commands that can ever be in it, so bounded_push never fails; an assertion checks
 *    that it really is never full. Push and pop are linearizable (one atomic step); a
 *    pop that finds the queue empty ends that kind's loop.
 *  - Promela is sequentially consistent. What the C++ needs for the same result: every
 *    announce is a read-modify-write of the word after the push, and take() is an
 *    acquire read-modify-write, so a drain whose take() follows an announce in the
 *    word's modification order sees that announce's push; one that precedes it leaves
 *    the bit set, and release() fails (actor_state.hpp).
 *  - cancels and deregistrations are pushed and served exactly like the two queues
 *    modelled here (push, announce, served after take()): they add nothing new. Timer
 *    expiries and start are bits without a queue, like shutdown.
 *  - What the core does with a command is a nondeterministic choice: an acquire is
 *    granted (its completion is posted; the handler later releases, from a thread on the
 *    pool's executor or not, racing with any drain) or queued (a later release may
 *    grant it).
 *  - Budgets are 1 inline and 2 posted (32 and 1024 in the C++): small enough that
 *    hand-offs to a posted drain happen in the model.
 *
 * Producers: an Acquirer on the pool's executor, one not, a Closer (either), and a
 * Completion per grant (either), each of which may drain inline or feed its command
 * directly: up to 5 in all (about 5 million states; 3 acquires make it 50 times more).
 *
 * Variants (spin -DNAME -a wake_protocol.pml), the negative controls:
 *   NO_RECHECK     release() lets go whatever became pending (a plain store of idle).
 *                  Must lose a wake-up.
 *   LATE_TAKE      the drain clears the pending bits after serving the queues, not
 *                  before. Must lose a wake-up.
 *   SPLIT_CLAIM    announce() reads the owner and claims it in two steps (a load, then
 *                  a store). Must run two drains at once.
 *   NO_END_CHECK   leaves out the EndCheck process (the LTL runs use it, so that a
 *                  failure is reported by the claim, not by the end-state assertion).
 */

#define N_ACQUIRES 2                  /* Acquirer(1, on the executor) + Acquirer(1, not) */
#define ACQ_CAP    N_ACQUIRES         /* every acquire at once */
#define SLOT_CAP   N_ACQUIRES         /* at most one release per acquire */
#define INLINE_BUDGET 1
#define POSTED_BUDGET 2

#define IDLE      0
#define RUNNING   1
#define SCHEDULED 2

#define K_ACQUIRE  0
#define K_SLOT     1
#define K_SHUTDOWN 2

chan acquires    = [ACQ_CAP]  of { bit };   /* mailbox::acquires */
chan slot_events = [SLOT_CAP] of { bit };   /* mailbox::slot_events */

/* actor_state::word_ */
byte owner = IDLE;
bool pend_acquire, pend_slot, pend_shutdown;

bool shutdown_fed;         /* pool_state::shutdown_fed_ (touched by the drain only) */

/* Bookkeeping of the model, no C++ counterpart. */
bool shutdown_requested;   /* the Closer announced shutdown */
byte posted;               /* drains posted and not yet started */
byte running;              /* drains holding the actor */
byte live = 3;             /* producers (and completions) not yet returned: the 3 started
                              by init, plus one per grant */
byte waiting;              /* acquires the core queued, not yet granted */

#define nothing_pending (!pend_acquire && !pend_slot && !pend_shutdown)
/* Nothing can happen any more: no drain posted or running, every producer returned. */
#define quiescent    (live == 0 && posted == 0 && running == 0)
/* Every command taken by the actor, and the actor idle with nothing pending. */
#define all_consumed (len(acquires) == 0 && len(slot_events) == 0 && \
                      (shutdown_fed || !shutdown_requested) && owner == IDLE && nothing_pending)

/* (a) No lost wake-up: whenever the system is quiescent, nothing is left unconsumed. */
ltl no_lost_wakeup { [] (quiescent -> all_consumed) }
/* (a') Every run reaches quiescence with every pushed command processed. */
ltl all_processed  { <> (quiescent && all_consumed) }

/* The locals of any process that may hold the actor. */
#define DRAIN_LOCALS bool t_acq, t_slot, t_shut, l_acq, l_slot, claimed_inline, claimed_post, direct; byte budget

/* queue.bounded_push(cmd); FAIRPOOL_ASSERT(pushed); -- never full */
inline push(q, cap) {
    atomic { assert(len(q) < cap); q!0 }
}

/* The core granted a waiter: its completion is posted; its handler releases later. */
inline grant() {
    live++; run Completion()
}

/* feed(acquire): what the core decides. */
inline feed_acquire() {
    if
    :: grant()
    :: waiting++
    fi
}

/* feed(release): the core may grant a queued waiter. */
inline feed_release() {
    if
    :: waiting > 0 -> waiting--; grant()
    :: skip
    fi
}

/* Holding the actor: (b) never two drains at once, (c) none posted meanwhile. */
#define HOLD  running++; assert(running == 1); assert(posted == 0)

/* boost::asio::post(executor, [..]{ begin(); drain(posted budget); }) */
inline post_drain() {
    posted++;
    assert(posted <= 1);                 /* (c) at most one drain posted, not started */
    assert(posted + running <= 1);       /* (c) and never while one holds the actor */
    run Drain()
}

/* take(): exchange(running) */
inline take() {
    atomic {
        assert(owner == RUNNING);
        t_acq = pend_acquire; t_slot = pend_slot; t_shut = pend_shutdown;
        pend_acquire = false; pend_slot = false; pend_shutdown = false
    }
}

/* serve(take(), budget) */
inline serve() {
    l_acq = false; l_slot = false;
#ifndef LATE_TAKE
    take();
#else
    t_acq = true; t_slot = true; t_shut = true;   /* serve every queue, clear the bits later */
#endif
    if
    :: t_slot ->
       do
       :: atomic { budget > 0 && nempty(slot_events) -> slot_events?_; budget--; feed_release() }
       :: atomic { budget > 0 && empty(slot_events) -> skip }; break   /* a pop found it empty */
       :: atomic { budget == 0 -> l_slot = true }; break                /* left for later */
       od
    :: else -> skip
    fi;
    if
    :: t_acq ->
       do
       :: atomic { budget > 0 && nempty(acquires) -> acquires?_; budget--; feed_acquire() }
       :: atomic { budget > 0 && empty(acquires) -> skip }; break
       :: atomic { budget == 0 -> l_acq = true }; break
       od
    :: else -> skip
    fi;
    if
    :: atomic { t_shut && !shutdown_fed -> shutdown_fed = true }
    :: else -> skip
    fi;
#ifdef LATE_TAKE
    take();   /* the bug: bits set by pushes served above or not are all dropped */
#endif
    skip
}

/* hand_off(left): running -> scheduled with the bits left, then post_drain() */
inline hand_off() {
    atomic {
        assert(owner == RUNNING);
        owner = SCHEDULED;
        pend_acquire = pend_acquire || l_acq;
        pend_slot = pend_slot || l_slot;
        running--;
        post_drain()
    }
}

/* The drain's locals back to their initial values once it let go (so that states that
 * differ only in what a finished drain saw are one state). */
inline forget() {
    d_step {
        t_acq = false; t_slot = false; t_shut = false; l_acq = false; l_slot = false;
        claimed_inline = false; claimed_post = false; direct = false; budget = 0
    }
}

/* finish_drain(): let go, re-checking; or hand off what is left. */
inline finish() {
    do
    :: l_acq || l_slot -> hand_off(); break
    :: else ->
#ifndef NO_RECHECK
       if
       :: atomic { nothing_pending -> owner = IDLE; running-- }; break   /* release() */
       :: atomic { !nothing_pending -> skip }; serve()                   /* it failed */
       fi
#else
       atomic { owner = IDLE; running-- }; break   /* the bug: idle whatever is pending */
#endif
    od;
    forget()
}

/* announce(kind, may_drain_inline), then what the claim asks for. */
inline announce(kind, may_inline) {
#ifndef SPLIT_CLAIM
    atomic {
        if
        :: kind == K_ACQUIRE -> pend_acquire = true
        :: kind == K_SLOT -> pend_slot = true
        :: kind == K_SHUTDOWN -> pend_shutdown = true; shutdown_requested = true
        fi;
        claimed_inline = false; claimed_post = false;
        if
        :: owner == IDLE && may_inline -> owner = RUNNING; HOLD; claimed_inline = true
        :: owner == IDLE && !may_inline -> owner = SCHEDULED; claimed_post = true; post_drain()
        :: else -> skip
        fi
    };
#else
    atomic {
        if
        :: kind == K_ACQUIRE -> pend_acquire = true
        :: kind == K_SLOT -> pend_slot = true
        :: kind == K_SHUTDOWN -> pend_shutdown = true; shutdown_requested = true
        fi;
        claimed_inline = false; claimed_post = false
    };
    if   /* the bug: the owner is read, then claimed in a later step */
    :: owner == IDLE && may_inline -> atomic { owner = RUNNING; HOLD; claimed_inline = true }
    :: owner == IDLE && !may_inline -> atomic { owner = SCHEDULED; claimed_post = true; post_drain() }
    :: else -> skip
    fi;
#endif
    if
    :: claimed_inline -> budget = INLINE_BUDGET; serve(); finish()
    :: else -> forget()
    fi
}

/* try_take_idle(): CAS 0 -> running; the command is then fed directly. */
inline try_take_idle() {
    atomic {
        if
        :: owner == IDLE && nothing_pending -> owner = RUNNING; HOLD; direct = true
        :: else -> direct = false
        fi
    }
}

/* After a direct feed: finish_drain(inline budget - 1). */
inline finish_direct() {
    budget = INLINE_BUDGET - 1; l_acq = false; l_slot = false; finish()
}

/* A posted drain: begin(); drain(posted budget). */
proctype Drain() {
    DRAIN_LOCALS;
    atomic { assert(owner == SCHEDULED); owner = RUNNING; posted--; HOLD };
    budget = POSTED_BUDGET;
    serve();
    finish()
}

/* start_acquire(), n times; on_exec: it runs on the pool's executor. */
proctype Acquirer(byte n; bool on_exec) {
    DRAIN_LOCALS;
    do
    :: n > 0 ->
       direct = false;
       if
       :: on_exec -> try_take_idle()
       :: else -> skip
       fi;
       if
       :: direct -> atomic { feed_acquire() }; finish_direct()
       :: else -> push(acquires, ACQ_CAP); announce(K_ACQUIRE, on_exec)
       fi;
       n--
    :: else -> break
    od;
    live--
}

/* A lease released by a completion handler, on the pool's executor or on another. */
proctype Completion() {
    DRAIN_LOCALS;
    bool on_exec;
    if
    :: on_exec = true; try_take_idle()
    :: on_exec = false
    fi;
    if
    :: direct -> atomic { feed_release() }; finish_direct()
    :: else -> push(slot_events, SLOT_CAP); announce(K_SLOT, on_exec)
    fi;
    live--
}

/* request_shutdown(): announce(shutdown); from the executor or not. */
proctype Closer() {
    DRAIN_LOCALS;
    bool on_exec;
    if
    :: on_exec = true
    :: on_exec = false
    fi;
    announce(K_SHUTDOWN, on_exec);
    live--
}

#ifndef NO_END_CHECK
/* (a) as an end-state assertion: once quiescent (which is final), nothing is left. If
 * quiescence is never reached, this process never ends: an invalid end state. */
active proctype EndCheck() {
    quiescent -> assert(all_consumed)
}
#endif

init {
    atomic {
        run Acquirer(1, true);
        run Acquirer(1, false);
        run Closer()
    }
}
