// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/*
 * Settled tickets: woken and reported after the lock
 * ==================================================
 * A section of the fair share settles tickets (granted, cancelled, declined, failed, closed) but
 * wakes none under its lock: wakers and listeners are user code. Each settled ticket goes on one
 * chain, linked by the node's next (free once the ticket left every queue); the section takes the
 * chain, releases the lock, then tells the listener of every ticket that waited and runs the chain
 * through the core's wakeAll (same trampoline, same handling of throwing wakers), on an executor
 * if the caller gave one. A listener that throws is reported as the core reports a throwing waker,
 * and nothing else changes.
 */

/** The chain of tickets settled in a section of a {@link FairShareSemaphore}, and its listener. */
final class SettledTickets<K> {
    private final @Nullable FairShareListener<? super K> listener;

    @GuardedBy("FairShareScheduler.lock")
    private FairShareTicket<K> first;

    @GuardedBy("FairShareScheduler.lock")
    private FairShareTicket<K> last;

    SettledTickets(@Nullable FairShareListener<? super K> listener) {
        this.listener = listener;
    }

    /** Whether a listener is told (then queued tickets note when they started to wait). */
    boolean listens() {
        return listener != null;
    }

    /** {@code t} settled; it is woken (and the listener told) after the lock. */
    void addLocked(FairShareTicket<K> t) {
        t.handedOver = true;
        t.next = null;
        if (last == null) {
            first = t;
        } else {
            last.next = t;
        }
        last = t;
    }

    /** Takes the chain, to run once the lock is released; null if empty. */
    @Nullable
    FairShareTicket<K> takeLocked() {
        FairShareTicket<K> f = first;
        first = null;
        last = null;
        return f;
    }

    /** After the lock: tells the listener and runs the chain from {@code f} (on {@code wakes} if given). */
    void wake(@Nullable FairShareTicket<K> f, @Nullable Executor wakes) {
        if (f == null) {
            return;
        }
        if (listener != null) {
            for (Acquisition a = f; a != null; a = a.next) {
                reportSettled(FairShareTicket.of(a));
            }
        }
        if (wakes != null) {
            WakeRun.wakeAll(f, wakes); // threads parked in a blocking acquire are unparked here
        } else {
            WakeRun.wakeAll(f);
        }
    }

    /** Tells the listener, if any, how the wait of {@code t} ended (if it waited). */
    void reportSettled(FairShareTicket<K> t) {
        FairShareListener<? super K> l = listener;
        if (l == null || t.ahead < 0 || t.key == null) {
            return; // nobody listens, or never queued
        }
        WaitOutcome outcome = ListenerCalls.outcomeOf(t, t.timedOut);
        long waited = System.nanoTime() - t.since;
        K key = t.key.key;
        long n = t.permits;
        int ahead = t.ahead;
        tell(() -> l.settled(key, n, outcome, waited, ahead));
    }

    /** Tells the listener, if any, that a request of {@code key} was queued behind {@code ahead} others. */
    void reportQueued(K key, long n, int ahead) {
        FairShareListener<? super K> l = listener;
        if (l != null) {
            tell(() -> l.queued(key, n, ahead));
        }
    }

    /** Tells the listener, if any, that a request of {@code key} was refused by a queue bound. */
    void reportRejected(K key, long n) {
        FairShareListener<? super K> l = listener;
        if (l != null) {
            tell(() -> l.rejected(key, n));
        }
    }

    /** Calls the listener: what it throws is reported as a throwing waker's, and nothing else changes. */
    private static void tell(Runnable event) {
        try {
            event.run();
        } catch (Throwable e) {
            WakeRun.report(e);
        }
    }
}
