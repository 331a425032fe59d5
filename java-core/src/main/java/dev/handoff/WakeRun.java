// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The wake trampoline: runs the wakers of a settled chain after the lock is released, nested
 * wake-ups at once up to a depth and deeper ones later, so the stack stays bounded.
 *
 * <pre>
 * Wakers run after unlock
 * -----------------------
 * Settled nodes (granted and declined) are unlinked and chained
 * through their `next` field under the lock, and the chain is run after the lock is released;
 * only granted, closed and failed nodes are woken. wake() is user code: it may block, throw or call
 * back into the semaphore. Wake order is not promised to be grant order: threads parked in a
 * blocking acquire are unparked first, before any user waker of the same chain runs (a waker
 * may wait for such a thread), then the other nodes run in FIFO order; nested chains run first.
 *
 * Trampoline
 * ----------
 * A waker that calls release() may grant the next waiter, whose waker releases
 * again, and so on (10,000 coroutines in a withPermit chain on Dispatchers.Unconfined). Nested
 * wake-ups run at once, like ordinary calls, up to MAX_NESTED_WAKES levels; deeper ones are
 * queued on the thread's WakeRun and run by the outermost call once its own chain is done, so
 * the stack stays bounded. Unparking a blocked thread runs no user code, so it is never
 * queued: a waker that releases and then waits for the thread it granted cannot deadlock.
 *
 * Throwing wakers
 * ---------------
 * Caught, passed to the thread's uncaught-exception handler; the loop goes on.
 * </pre>
 */
final class WakeRun {

    /**
     * Wakes {@code chain} (linked by next) with its wakers on {@code wakes}, as one task in FIFO
     * order, or here if the executor refuses it; threads parked in a blocking acquire are unparked
     * here, first. The executor is used only if some other node is to be woken.
     */
    static void wakeAll(Acquisition chain, Executor wakes) {
        Acquisition rest = WakeRun.unparkParked(chain);
        if (rest != null) {
            DeferredWakes task = new DeferredWakes(rest); // counted as handed off until it runs
            try {
                wakes.execute(task);
            } catch (Throwable refused) {
                task.run(); // wakes here, unless the executor ran the task before it threw
            }
        }
    }

    /**
     * The wake-ups handed to an executor: a chain linked by next, woken at most once. Counted in
     * their cores' {@link ProvisionalGrants#userPaced} from creation until they run.
     */
    static final class DeferredWakes extends AtomicReference<Acquisition> implements Runnable {
        DeferredWakes(Acquisition chain) {
            super(chain);
            countHandedOff(chain, 1);
        }

        @Override
        public void run() {
            Acquisition chain = getAndSet(null);
            if (chain != null) {
                countHandedOff(chain, -1);
                wakeAll(chain);
            }
        }
    }

    /**
     * Adds {@code delta} to {@link ProvisionalGrants#userPaced} of the core of each node of
     * {@code chain} (linked by next): +1 while its wake-up waits for an executor or a trampoline,
     * -1 as it runs.
     */
    static void countHandedOff(Acquisition chain, int delta) {
        for (Acquisition a = chain; a != null; a = a.next) {
            countHandedOff1(a, delta);
        }
    }

    private static void countHandedOff1(Acquisition a, int delta) {
        FifoCore core = a.owner;
        if (core != null) {
            core.pace(delta);
        }
    }

    // ------------------------------------------------------------------ waking (no lock held)

    /**
     * How deeply wake-ups may nest on one thread (a wake() that releases, whose grant's wake()
     * releases, ...) before further ones are queued for the outermost call to run.
     */
    static final int MAX_NESTED_WAKES = 16;

    /**
     * Runs a chain of nodes to wake (linked by {@code next}), in order. Nested calls run their
     * chain at once, like any method call, up to {@link #MAX_NESTED_WAKES} levels; deeper ones
     * queue it on this thread's {@link WakeRun}, which the outermost call drains (trampoline), so
     * the stack stays bounded however long a chain of releasing wakers is. Parked threads are
     * unparked at once even then: that runs no user code and cannot nest.
     */
    static void wakeAll(Acquisition chain) {
        if (chain == null) {
            return;
        }
        WakeRun run = WakeRun.current();
        if (run.depth >= MAX_NESTED_WAKES) {
            run.deferChain(chain);
            return;
        }
        run.depth++;
        try {
            // Threads parked in a blocking acquire first: no user code runs there, and a user waker
            // of the same chain may wait for one of them (see ParkingAcquisition).
            WakeRun.fireChain(chain.next == null ? chain : WakeRun.unparkParked(chain));
            if (run.depth == 1) {
                run.drainDeferred();
            }
        } finally {
            run.depth--;
        }
    }

    static final ThreadLocal<WakeRun> CURRENT = ThreadLocal.withInitial(WakeRun::new);

    /** How many wakeAll calls are on this thread's stack. */
    int depth;

    /**
     * The node whose waker's claim this thread is running (see "Claims after the lock" in
     * HandoffCore), or null: its own state reads do not wait for that claim.
     */
    Acquisition claiming;
    /** Chains queued by calls nested too deeply, linked by {@code next}, FIFO. */
    Acquisition first;

    Acquisition last;

    static WakeRun current() {
        return CURRENT.get();
    }

    /**
     * Queues the nodes that run user code; unparks parked threads at once and drops the nodes
     * that declined (see {@link #unparkParked}).
     */
    void deferChain(Acquisition chain) {
        Acquisition rest = unparkParked(chain);
        if (rest == null) {
            return;
        }
        if (last == null) {
            first = rest;
        } else {
            last.next = rest;
        }
        Acquisition a = rest;
        while (a.next != null) {
            a = a.next;
        }
        last = a;
        countHandedOff(rest, 1); // until drainDeferred runs them, one by one
    }

    /**
     * Unparks the threads parked in {@code chain} at once (no user code runs there, so their
     * wake-up is never deferred) and returns the other nodes to be woken, relinked by next in
     * FIFO order, or null if there are none; nodes that declined their grant are dropped.
     */
    static Acquisition unparkParked(Acquisition chain) {
        Acquisition restFirst = null;
        Acquisition restLast = null;
        for (Acquisition a = chain, next; a != null; a = next) {
            next = a.next;
            a.next = null;
            if (a.parksThread()) {
                fire(a);
            } else if (toWake(a)) {
                if (restLast == null) {
                    restFirst = a;
                } else {
                    restLast.next = a;
                }
                restLast = a;
            }
        }
        return restFirst;
    }

    /**
     * Runs the wake-ups this thread queued and has not run yet, if any: for a release that
     * waits for a confirmation one of them may make (see awaitTransit). They run one level
     * deeper than the caller, as they would have from the outermost call.
     */
    static void runDeferred() {
        WakeRun run = current();
        if (run.first == null) {
            return;
        }
        run.depth++;
        try {
            run.drainDeferred();
        } finally {
            run.depth--;
        }
    }

    /** Run by the outermost wakeAll: the queued nodes, and whatever they queue in turn. */
    void drainDeferred() {
        Acquisition a;
        while ((a = first) != null) {
            first = a.next;
            if (first == null) {
                last = null;
            }
            a.next = null;
            countHandedOff1(a, -1);
            fire(a);
        }
    }

    static void fireChain(Acquisition chain) {
        Acquisition a = chain;
        while (a != null) {
            Acquisition next = a.next;
            a.next = null;
            try {
                fire(a);
            } catch (Throwable escaped) { // only an Error raised inside fire's own handling
                if (next != null) {
                    current().deferChain(next); // the rest still runs, from an outer call
                }
                throw escaped;
            }
            a = next;
        }
    }

    /** Whether a settled node is to be woken: granted, closed or failed, not declined. */
    static boolean toWake(Acquisition a) {
        int s = a.state;
        return s == Acquisition.GRANTED || s == Acquisition.CLOSED || s == Acquisition.FAILED;
    }

    /** Wakes a granted, closed or failed node; a node that declined its grant is skipped. */
    static void fire(Acquisition a) {
        if (toWake(a)) {
            try {
                a.wake();
            } catch (Throwable t) {
                report(t);
            }
        }
    }

    static void report(Throwable t) {
        Thread me = Thread.currentThread();
        try {
            me.getUncaughtExceptionHandler().uncaughtException(me, t);
        } catch (Throwable ignored) {
            // The handler itself failed; nothing sensible is left to do with the error.
        }
    }
}
