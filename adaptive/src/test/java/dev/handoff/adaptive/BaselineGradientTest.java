// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The built-in algorithm on a virtual clock: every test drives windows of samples by hand, so the
 * figures are exact and nothing depends on the machine's speed.
 */
class BaselineGradientTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);

    AdaptiveCapacity adaptive(long start, long min, long max) {
        return AdaptiveCapacity.builder(new Semaphore(start))
                .minCapacity(min)
                .maxCapacity(max)
                .nanoClock(now::get)
                .build();
    }

    static BaselineGradient algorithm(AdaptiveCapacity a) {
        return (BaselineGradient) a.controller();
    }

    /**
     * One window (100 ms) of rounds: in each, up to {@code inFlight} uses take a permit with
     * tryAcquire (a refusal is a rejection), are held for {@code latency(inFlight taken)} and end
     * with {@code outcome}; rounds that would end after the window's end are not started. Then the
     * clock moves to the window's end and a use of zero permits (counted nowhere) closes it.
     */
    void window(AdaptiveCapacity a, long inFlight, LongUnaryOperator latencyOfInFlight, Outcome outcome) {
        long end = now.get() + 100 * MS;
        while (true) {
            List<SampledPermits> held = new ArrayList<>();
            long latency = latencyOfInFlight.applyAsLong(Math.min(inFlight, a.capacity()));
            if (now.get() + latency >= end) {
                break;
            }
            for (long i = 0; i < inFlight; i++) {
                SampledPermits p = a.tryAcquire(1);
                if (p != null) {
                    held.add(p);
                }
            }
            now.addAndGet(latency);
            for (SampledPermits p : held) {
                if (outcome == Outcome.DROPPED) {
                    p.markDropped();
                } else if (outcome == Outcome.FAILURE) {
                    p.markFailure();
                }
                p.close();
            }
        }
        now.set(end);
        a.startSample(0).close();
    }

    void window(AdaptiveCapacity a, long inFlight, long latencyMillis) {
        window(a, inFlight, n -> latencyMillis * MS, Outcome.SUCCESS);
    }

    @Test
    void growsBySquareRootWhileLatencyIsWithinToleranceAndTheCapacityIsUsed() {
        AdaptiveCapacity a = adaptive(16, 1, 100);
        window(a, 16, 10);
        assertEquals(20, a.capacity()); // 16 + sqrt(16)
        window(a, 20, 10);
        assertEquals(24, a.capacity()); // 20 + 4.47, rounded
        assertEquals(a.capacity(), a.semaphore().capacity());
        assertEquals(2, algorithm(a).windows());
    }

    @Test
    void doesNotGrowWhileThePermitsAreNotInUse() {
        AdaptiveCapacity a = adaptive(20, 1, 100);
        for (int i = 0; i < 50; i++) {
            window(a, 5, 10); // a quarter of the capacity in use, latency at the baseline
        }
        assertEquals(20, a.capacity());
    }

    @Test
    void shrinksTowardWhereLatencyIsBackWithinTolerance() {
        AdaptiveCapacity a = adaptive(40, 1, 100);
        window(a, 10, 10); // baseline 10 ms, not in use: unchanged
        assertEquals(40, a.capacity());
        window(a, 40, 20); // 40 in use at twice the baseline: gradient 1.5 * 10 / 20 = 0.75
        assertEquals(30, a.capacity());
        window(a, 30, 40); // gradient 0.375, clamped at 1/2 per window
        assertEquals(15, a.capacity());
    }

    @Test
    void aDecreaseStartsFromWhatIsInUseNotFromAFarHigherLimit() {
        AdaptiveCapacity a = adaptive(100, 1, 100);
        window(a, 10, 10);
        window(a, 10, 20); // 10 in use of 100, latency doubled: 10 * 0.75
        assertEquals(8, a.capacity());
    }

    @Test
    void dropsAreOverloadNotFastSamples() {
        AdaptiveCapacity a = adaptive(50, 1, 100);
        window(a, 50, 10);
        long grown = a.capacity();
        double baseline = algorithm(a).baselineNanos();
        assertEquals(10 * MS, baseline, 1);
        // Drops that end after 1 ms: a fast sample would pull the baseline down and the capacity up.
        window(a, grown, n -> MS, Outcome.DROPPED);
        assertEquals(Math.round(grown * BaselineGradient.DROP_BACKOFF), a.capacity());
        assertEquals(baseline, algorithm(a).baselineNanos(), 1, "a drop is never a latency sample");
    }

    @Test
    void dropsOfWorkAdmittedBeforeTheLastDecreaseDoNotCutAgain() {
        AdaptiveCapacity a = adaptive(50, 1, 100);
        window(a, 50, 10);
        long before = a.capacity();
        // 10 uses admitted now, timing out long after the next decrease.
        List<SampledPermits> old = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            old.add(a.tryAcquire(1));
        }
        window(a, 40, n -> MS, Outcome.DROPPED); // one cut for this overload
        long cut = a.capacity();
        assertTrue(cut < before);
        now.addAndGet(200 * MS);
        for (SampledPermits p : old) {
            p.markDropped();
            p.close(); // started before the cut: not counted
        }
        assertEquals(0, algorithm(a).sums()[1], "old drops are not counted");
        assertEquals(cut, a.capacity());
    }

    @Test
    void failuresAreNeitherLatencyNorOverload() {
        AdaptiveCapacity a = adaptive(30, 1, 100);
        window(a, 30, 10);
        long c = a.capacity();
        double baseline = algorithm(a).baselineNanos();
        for (int i = 0; i < 5; i++) {
            window(a, c, n -> MS, Outcome.FAILURE); // fast failures
        }
        assertEquals(c, a.capacity());
        assertEquals(baseline, algorithm(a).baselineNanos(), 1);
    }

    @Test
    void theBaselineFallsAtOnceAndRisesWhenTheFasterWindowsAgeOut() {
        AdaptiveCapacity a = adaptive(20, 1, 100);
        window(a, 5, 10);
        assertEquals(10 * MS, algorithm(a).baselineNanos(), 1);
        window(a, 5, 6);
        assertEquals(6 * MS, algorithm(a).baselineNanos(), 1, "falls at once");
        // 8 ms is within tolerance of 6 ms: no decrease, the baseline waits for the 6 ms window to age out.
        for (int i = 0; i < BaselineGradient.HORIZON - 1; i++) {
            window(a, 5, 8);
            assertEquals(6 * MS, algorithm(a).baselineNanos(), 1, "window " + i);
        }
        window(a, 5, 8);
        assertEquals(8 * MS, algorithm(a).baselineNanos(), 1, "rises once the 6 ms window is out of the horizon");
        assertEquals(20, a.capacity());
    }

    @Test
    void aDownstreamThatBecameSlowerAtAnyConcurrencyIsNotMistakenForCongestionForLong() {
        AdaptiveCapacity a = adaptive(20, 1, 100);
        window(a, 20, 10);
        long before = a.capacity();
        // From now on every call takes 30 ms, however few are in flight: not queueing.
        int windows = 0;
        while (algorithm(a).resets() == 0 && windows < 20) {
            window(a, a.capacity(), 30);
            windows++;
        }
        assertEquals(1, algorithm(a).resets(), a.toString());
        assertTrue(windows <= BaselineGradient.STREAK + 2, "windows " + windows);
        assertEquals(30 * MS, algorithm(a).baselineNanos(), 1);
        long low = a.capacity();
        assertTrue(low >= 2, "not pinned to the floor: " + a);
        for (int i = 0; i < 10; i++) {
            window(a, a.capacity(), 30);
        }
        assertTrue(a.capacity() >= before, "grows back: " + a);
    }

    /**
     * A downstream with a knee at 20: latency 10 ms up to 20 in flight, proportional beyond, and a
     * caller that always fills the capacity (a closed loop at full demand). The capacity must not
     * climb past the knee's tolerance band (Gradient2's unbounded growth), the baseline must not
     * creep up with the queueing (Vegas), and the probe must keep it honest.
     */
    @Test
    void underSteadyOverloadTheCapacityStaysNearTheKneeAndTheBaselineDoesNotCreep() {
        AdaptiveCapacity a = adaptive(10, 1, 1_000);
        LongUnaryOperator knee = n -> Math.max(10 * MS, n * 10 * MS / 20);
        long max = 0;
        long min = Long.MAX_VALUE;
        int probesSeen = 0;
        for (int i = 0; i < 10 * BaselineGradient.HORIZON; i++) {
            window(a, a.capacity(), knee, Outcome.SUCCESS);
            if (i > 20) {
                max = Math.max(max, a.capacity());
                min = Math.min(min, a.capacity());
            }
        }
        probesSeen = (int) algorithm(a).probes();
        assertTrue(max <= 40, "grew past the tolerance band: " + max + " " + a);
        assertTrue(min >= 10, "probe or decrease went too low: " + min + " " + a);
        assertTrue(
                probesSeen >= 10 * BaselineGradient.HORIZON / BaselineGradient.PROBE_EVERY - 2, "probes " + probesSeen);
        assertEquals(10 * MS, algorithm(a).baselineNanos(), 0.5 * MS, "the baseline stayed uncongested: " + a);
    }

    @Test
    void aProbeIsOneWindowAtAboutHalfOfWhatIsUsedThenBack() {
        AdaptiveCapacity a = adaptive(30, 1, 30); // held at its maximum: in use, latency at baseline
        long probe = Math.round(30 * BaselineGradient.PROBE_DEPTH / 1.5); // 16
        // The first probe comes soon: the baseline of the first windows may be congested.
        for (int i = 0; i < BaselineGradient.PROBE_SOON - 1; i++) {
            window(a, 30, 10);
            assertEquals(30, a.capacity());
        }
        window(a, 30, 10);
        assertEquals(probe, a.capacity());
        window(a, 30, 10); // the probe window: 16 in use, 14 rejected, the same latency
        assertEquals(30, a.capacity());
        // It found the baseline: the next one comes PROBE_EVERY windows later.
        for (int i = 0; i < BaselineGradient.PROBE_EVERY - 1; i++) {
            window(a, 30, 10);
            assertEquals(30, a.capacity());
        }
        window(a, 30, 10);
        assertEquals(probe, a.capacity());
        assertEquals(2, algorithm(a).probes());
        window(a, 30, 10);
        assertEquals(30, a.capacity());
    }

    @Test
    void staysWithinTheBounds() {
        AdaptiveCapacity a = adaptive(10, 4, 12);
        for (int i = 0; i < 10; i++) {
            window(a, 12, 10);
        }
        assertEquals(12, a.capacity());
        for (int i = 0; i < 10; i++) {
            window(a, 12, n -> MS, Outcome.DROPPED);
        }
        assertEquals(4, a.capacity());
        assertEquals(4, a.semaphore().capacity());
    }

    @Test
    void shrinksWithDebtNeverRevoking() {
        AdaptiveCapacity a = adaptive(40, 1, 100);
        window(a, 10, 10);
        List<SampledPermits> held = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            held.add(a.tryAcquire(1));
        }
        now.addAndGet(200 * MS);
        for (int i = 0; i < 11; i++) {
            held.remove(0).close(); // 200 ms each, 20x the baseline; the 11th closes the window
        }
        assertEquals(20, a.capacity(), "40 in use, gradient clamped at 1/2: " + a);
        assertEquals(20, a.semaphore().capacity());
        assertEquals(29, a.inFlight(), "nothing revoked");
        assertEquals(0, a.semaphore().availablePermits());
        assertNull(a.tryAcquire(1), "no new permits while the debt is paid");
        for (int i = 0; i < 9; i++) {
            held.remove(0).close();
        }
        assertNull(a.tryAcquire(1), "20 held of 20");
        held.remove(0).close();
        assertEquals(1, a.semaphore().availablePermits(), "the debt is paid");
        for (SampledPermits p : held) {
            p.close();
        }
        assertEquals(20, a.semaphore().availablePermits());
    }

    @Test
    void aWindowWithTooFewSuccessesIsStretched() {
        AdaptiveCapacity a = adaptive(16, 1, 100);
        window(a, 3, 40); // 3 uses per 40 ms round: 9 successes over 120 ms, below MIN_SAMPLES
        assertEquals(0, algorithm(a).windows());
        window(a, 3, 40);
        assertEquals(1, algorithm(a).windows());
    }
}
