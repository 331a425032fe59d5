// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/** The listener of capacity changes, and weights up to the present capacity. */
class CapacityListenerTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);
    final List<String> heard = new ArrayList<>();
    final CapacityListener recorder = (from, to, reason) -> heard.add(from + "->" + to + " " + reason);

    /** One 100 ms window of rounds of {@code inFlight} handles held {@code latencyMillis}, marked dropped if asked. */
    void window(AdaptiveCapacity a, long inFlight, long latencyMillis, boolean drop) {
        long end = now.get() + 100 * MS;
        while (now.get() + latencyMillis * MS < end) {
            List<SampledPermits> held = new ArrayList<>();
            for (long i = 0; i < inFlight; i++) {
                SampledPermits p = a.tryAcquire(1);
                if (p != null) {
                    held.add(p);
                }
            }
            now.addAndGet(latencyMillis * MS);
            for (SampledPermits p : held) {
                if (drop) {
                    p.markDropped();
                }
                p.close();
            }
        }
        now.set(end);
        a.startSample(0).close();
    }

    @Test
    void everyChangeIsHeardWithItsReason() {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(5_000))
                .maxCapacity(100)
                .nanoClock(now::get)
                .listener(recorder)
                .build();
        assertEquals(List.of("5000->100 BOUNDS"), heard, "clamped into the bounds at build time");
        heard.clear();
        window(a, 100, 10, false); // baseline 10 ms, in use: stays at the maximum (no change)
        window(a, 100, 20, false); // latency doubled: 100 * 0.75
        window(a, 75, 10, false); // back at the baseline, in use: + sqrt(75)
        window(a, 84, 10, true); // drops: a fifth off what was in use
        window(a, 67, 10, false); // at the baseline, in use: + sqrt(67); fourth window since build: the first probe
        window(a, 75, 10, false); // the probe window, then back
        assertEquals(
                List.of(
                        "100->75 LATENCY_CUT",
                        "75->84 GROWTH",
                        "84->67 DROP_CUT",
                        "67->75 GROWTH",
                        "75->36 PROBE",
                        "36->75 PROBE"),
                heard,
                a.toString());
        assertEquals(a.capacity(), a.semaphore().capacity());
    }

    /** A Netflix Limit whose synchronized onSample moves the limit, as AbstractLimit's does. */
    static final class HalvingLimit implements Limit {
        final List<Boolean> heldLockInListener = new ArrayList<>();
        final List<Consumer<Integer>> listeners = new ArrayList<>();
        int limit = 40;

        @Override
        public int getLimit() {
            return limit;
        }

        @Override
        public void notifyOnChange(Consumer<Integer> consumer) {
            listeners.add(consumer);
        }

        @Override
        public synchronized void onSample(long startTime, long rtt, int inflight, boolean didDrop) {
            set(limit / 2);
        }

        void set(int next) {
            limit = next;
            listeners.forEach(l -> l.accept(next));
        }
    }

    @Test
    void aLimitsChangesAreHeardOutsideItsLock() throws Exception {
        HalvingLimit limit = new HalvingLimit();
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(40))
                .maxCapacity(100)
                .limit(limit)
                .nanoClock(now::get)
                .listener((from, to, reason) -> {
                    limit.heldLockInListener.add(Thread.holdsLock(limit));
                    recorder.capacityChanged(from, to, reason);
                })
                .build();
        a.withPermitsBlocking(1, () -> "ok");
        limit.set(30); // moved from outside onSample: heard at once
        assertEquals(List.of("40->20 LIMIT", "20->30 LIMIT"), heard);
        assertEquals(List.of(false, false), limit.heldLockInListener);
    }

    @Test
    void aListenerThatThrowsIsReportedAndLosesNothing() throws Exception {
        List<Throwable> reported = new ArrayList<>();
        Thread me = Thread.currentThread();
        Thread.UncaughtExceptionHandler before = me.getUncaughtExceptionHandler();
        me.setUncaughtExceptionHandler((t, e) -> reported.add(e));
        try {
            IllegalStateException bug = new IllegalStateException("listener bug");
            AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(100))
                    .maxCapacity(100)
                    .nanoClock(now::get)
                    .listener((from, to, reason) -> {
                        throw bug;
                    })
                    .listener(recorder)
                    .build();
            window(a, 100, 10, false);
            window(a, 100, 20, false);
            window(a, 75, 10, false);
            assertEquals(
                    List.of("100->75 LATENCY_CUT", "75->84 GROWTH"), heard, "the next listener and the next change");
            assertEquals(2, reported.size());
            assertSame(bug, reported.get(0));
            assertEquals(84, a.capacity());
            assertEquals(84, a.semaphore().capacity());
            assertEquals(0, a.inFlight());
            assertEquals(84, a.semaphore().availablePermits(), "no permit lost or made");
        } finally {
            me.setUncaughtExceptionHandler(before);
        }
    }

    @Test
    void aNullListenerIsRefused() {
        assertEquals(
                "listener(null): the listener is null",
                assertThrows(
                                NullPointerException.class,
                                () -> AdaptiveCapacity.builder(new Semaphore(1)).listener(null))
                        .getMessage());
    }

    // ------------------------------------------------------------------ weights up to the present capacity

    @Test
    void aRequestMayAskForUpToThePresentCapacity() throws Exception {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(20))
                .minCapacity(2)
                .maxCapacity(100)
                .nanoClock(now::get)
                .build();
        assertEquals("ok", a.withPermitsBlocking(20, () -> "ok"));
        try (SampledPermits p = a.acquireBlocking(15)) {
            assertEquals(15, a.inFlight());
        }
        assertEquals(
                "tryAcquire(21): the number of permits must be between 0 and the present capacity (20)",
                assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(21))
                        .getMessage());
        assertEquals(20, a.semaphore().availablePermits());
    }

    @Test
    void aHeavyWaiterThatNoLongerFitsAfterACutFailsHoldingNothing() {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(20))
                .minCapacity(2)
                .maxCapacity(100)
                .nanoClock(now::get)
                .build();
        window(a, 20, 10, false);
        long grown = a.capacity();
        List<SampledPermits> held = new ArrayList<>();
        for (long i = 0; i < grown; i++) {
            held.add(a.tryAcquire(1));
        }
        CompletableFuture<SampledPermits> heavy = a.acquireAsync(grown); // waits for all of them
        assertFalse(heavy.isDone());
        now.addAndGet(200 * MS);
        for (int i = 0; i < grown - 1; i++) {
            held.get(i).close(); // 20 times the baseline: cut below the heavy request
        }
        SampledPermits one = held.get((int) grown - 1);
        assertTrue(a.capacity() < grown, a.toString());
        CompletionException e = assertThrows(CompletionException.class, heavy::join);
        assertTrue(e.getCause() instanceof IllegalStateException, e.toString());
        one.close();
        assertEquals(0, a.inFlight());
        assertEquals(0, a.semaphore().queueLength());
        assertEquals(a.capacity(), a.semaphore().availablePermits(), "nothing held, nothing lost");
    }
}
