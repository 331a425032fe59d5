// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.Test;

class AdmissionRaceTest {

    @Test
    void twoThreadsReleasingTheSameAdmissionsReleaseEachExactlyOnce() throws Exception {
        int n = 10_000;
        Semaphore s = new Semaphore(n);
        AdmissionControl<Integer> gate =
                AdmissionControl.<Integer>builder().limiter(s).build();
        Admission[] admissions = new Admission[n];
        for (int i = 0; i < n; i++) {
            admissions[i] = AdmissionControlTest.admitted(gate.tryAdmit(i));
        }
        assertEquals(0, s.availablePermits());
        AtomicIntegerArray wins = new AtomicIntegerArray(n);
        CyclicBarrier start = new CyclicBarrier(2);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Runnable releaser = () -> {
                try {
                    start.await();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
                for (int i = 0; i < n; i++) {
                    if (i % 2 == 0 ? admissions[i].release() : admissions[i].release(new RuntimeException())) {
                        wins.incrementAndGet(i);
                    }
                }
            };
            Future<?> a = pool.submit(releaser);
            Future<?> b = pool.submit(releaser);
            a.get(30, TimeUnit.SECONDS);
            b.get(30, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        for (int i = 0; i < n; i++) {
            assertEquals(1, wins.get(i), "admission " + i + " released once");
        }
        assertEquals(n, s.availablePermits());
    }

    @Test
    void aGrantRacingACancelNeitherLosesNorMakesPermits() throws Exception {
        Semaphore s = new Semaphore(1);
        race(AdmissionControl.<Integer>builder()
                .limiter(s)
                .maxWait(Duration.ofSeconds(30))
                .build());
        assertEquals(1, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    @Test
    void aGrantRacingACancelThroughAnAdaptiveCapacity() throws Exception {
        Semaphore s = new Semaphore(1);
        AdaptiveCapacity adaptive = AdaptiveCapacity.builder(s).maxCapacity(1).build();
        race(AdmissionControl.<Integer>builder()
                .limiter(adaptive)
                .maxWait(Duration.ofSeconds(30))
                .build());
        assertEquals(1, s.availablePermits());
        assertEquals(0, s.queueLength());
        assertEquals(0, adaptive.inFlight());
    }

    /**
     * Many rounds of: one request holds the only permit, a second waits; one thread releases the
     * first (handing the permit to the second) while another cancels the second's decision. After
     * each round the permit is free: given back by whichever lost.
     */
    private static void race(AdmissionControl<Integer> gate) throws Exception {
        int rounds = 5_000;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        int admittedAnyway = 0;
        try {
            for (int round = 0; round < rounds; round++) {
                Admission holder = AdmissionControlTest.admitted(gate.tryAdmit(round));
                CompletableFuture<Decision> waiting = gate.admitAsync(round);
                CyclicBarrier start = new CyclicBarrier(2);
                Future<?> release = pool.submit(() -> {
                    start.await();
                    return holder.release();
                });
                Future<?> cancel = pool.submit(() -> {
                    start.await();
                    return waiting.cancel(false);
                });
                release.get(30, TimeUnit.SECONDS);
                cancel.get(30, TimeUnit.SECONDS);
                if (!waiting.isCancelled()) {
                    admittedAnyway++; // the grant came first: an admitted request, released by its owner
                    AdmissionControlTest.admitted(waiting.join()).release();
                }
                assertEquals(1, gate.primitive().queueLength() + available(gate), "round " + round);
            }
        } finally {
            pool.shutdownNow();
        }
        assertTrue(admittedAnyway < rounds, "some cancels must win: " + admittedAnyway);
    }

    private static long available(AdmissionControl<?> gate) {
        return ((Semaphore) gate.primitive()).availablePermits();
    }
}
