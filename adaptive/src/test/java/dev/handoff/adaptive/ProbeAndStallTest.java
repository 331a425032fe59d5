// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * On a virtual clock: a probe measures only work admitted at its concurrency, and a burst of
 * timeouts (a full stall) cuts the capacity when it arrives, round after round.
 */
class ProbeAndStallTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);
    final List<CapacityListener.Reason> reasons = new ArrayList<>();

    AdaptiveCapacity adaptive(long capacity) {
        return AdaptiveCapacity.builder(new Semaphore(capacity))
                .nanoClock(now::get)
                .listener((from, to, reason) -> reasons.add(reason))
                .build();
    }

    /**
     * Windows of 40 ms calls, 10 at a time; a straggler is taken 20 ms before each window ends.
     * When a probe starts, the straggler (admitted before it, at the old concurrency) ends 50 ms
     * after it was taken, and the probe's own calls take 10 ms: the baseline becomes exactly
     * 10 ms. Counted, the straggler would make the probe's mean 13.6 ms.
     */
    @Test
    void aProbeMeasuresOnlyWorkAdmittedAfterItStarted() {
        AdaptiveCapacity a = adaptive(20);
        SampledPermits straggler = null;
        for (int w = 0; w < 10 && !reasons.contains(CapacityListener.Reason.PROBE); w++) {
            long end = now.get() + 100 * MS;
            for (int round = 0; round < 2; round++) {
                List<SampledPermits> held = new ArrayList<>();
                for (int i = 0; i < 10; i++) {
                    held.add(a.tryAcquire(1));
                }
                now.addAndGet(40 * MS);
                held.forEach(SampledPermits::close);
                if (straggler != null) {
                    straggler.markFailure(); // outside a probe: no latency sample
                    straggler.close();
                    straggler = null;
                }
            }
            now.set(end - 20 * MS);
            straggler = a.tryAcquire(1);
            now.set(end);
            a.startSample(0).close(); // closes the window
        }
        assertTrue(reasons.contains(CapacityListener.Reason.PROBE), "a probe started: " + reasons);
        assertEquals(40 * MS, a.baselineNanos(), 1e-6, "the windows before it");
        long probeEnd = now.get() + 100 * MS;
        now.addAndGet(30 * MS);
        assertNotNull(straggler);
        straggler.close(); // a success of 50 ms, admitted before the probe
        for (int round = 0; round < 5; round++) {
            SampledPermits p = a.tryAcquire(1);
            SampledPermits q = a.tryAcquire(1);
            assertNotNull(q, a::toString);
            now.addAndGet(10 * MS);
            p.close();
            q.close();
        }
        now.set(probeEnd);
        a.startSample(0).close(); // ends the probe
        assertEquals(10 * MS, a.baselineNanos(), 1e-6, a::toString);
    }

    /**
     * Every call of a full stall ends at once, one timeout (1 s, ten windows) after it started:
     * each burst of drops cuts the capacity when it arrives, by a fifth of what was in use.
     */
    @Test
    void aStallCutsAtEveryBurstOfTimeouts() {
        AdaptiveCapacity a = adaptive(40);
        double limit = 40;
        for (int burst = 1; burst <= 5; burst++) {
            List<SampledPermits> held = new ArrayList<>();
            SampledPermits p;
            while ((p = a.tryAcquire(1)) != null) {
                held.add(p);
            }
            assertEquals(Math.round(limit), held.size(), "every permit in use: " + a);
            now.addAndGet(1_000 * MS);
            for (SampledPermits h : held) {
                h.markDropped(); // a SocketTimeoutException, say
                h.close();
            }
            limit *= BaselineGradient.DROP_BACKOFF;
            assertEquals(Math.round(limit), a.capacity(), "cut when burst " + burst + " arrived: " + reasons);
        }
        assertEquals(13, a.capacity());
        assertEquals(
                List.of(
                        CapacityListener.Reason.DROP_CUT,
                        CapacityListener.Reason.DROP_CUT,
                        CapacityListener.Reason.DROP_CUT,
                        CapacityListener.Reason.DROP_CUT,
                        CapacityListener.Reason.DROP_CUT),
                reasons);
        assertEquals(0, a.inFlight());
    }
}
