// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * FairShareFloodBenchmark as a smoke test: every peer through one flood of {@value #REQUESTS}
 * polite requests, calling the benchmark's own set-up, timed and tear-down methods as JMH does, with
 * the flood's check that every permit comes back. It asserts what the order of the grants makes
 * certain, counted and not timed: with the FIFO semaphore a polite request waits behind about the
 * whole noisy backlog, with the fair share behind a handful of noisy grants. A late wake-up on a
 * loaded machine moves a count by a few grants, not by a backlog.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FairShareFloodBenchmarkSmokeTest {
    /** Polite requests per peer: enough that the 99th percentile is not the maximum. */
    static final int REQUESTS = 200;

    @Test
    void aPoliteRequestWaitsBehindTheWholeBacklogOnlyWithTheFifoSemaphore() throws Exception {
        Map<String, FairShareFloodBenchmark.Flood> floods = new LinkedHashMap<>();
        for (String peer : TenantPermits.ALL) {
            FairShareFloodBenchmark b = new FairShareFloodBenchmark();
            b.peer = peer;
            b.setUp();
            b.startFlood();
            try {
                for (int i = 0; i < REQUESTS; i++) {
                    b.politeIdles();
                    b.politeWait();
                    b.politeIsServed();
                }
            } finally {
                b.stopFlood(); // throws if a permit leaked or a noisy thread failed
            }
            floods.put(peer, b.lastFlood());
        }
        FairShareFloodBenchmark.Flood fair = floods.get(TenantPermits.FAIR_SHARE);
        FairShareFloodBenchmark.Flood fifo = floods.get(TenantPermits.SEMAPHORE);
        FairShareFloodBenchmark.Flood capped = floods.get(TenantPermits.JUC_CAPPED);
        String all = floods.toString();
        for (FairShareFloodBenchmark.Flood f : floods.values()) {
            assertEquals(REQUESTS, f.requests(), all);
            assertTrue(f.noisyPerSecond() > 0, all);
        }
        int backlog = FairShareFloodBenchmark.NOISY_THREADS - FairShareFloodBenchmark.CAPACITY;
        // The flood is real: behind a FIFO, every noisy request queued ahead is granted first.
        assertTrue(
                fifo.behindP50() >= backlog / 2,
                () -> "FIFO: behind only " + fifo + " of a backlog of " + backlog + "; " + all);
        // The fair share serves the polite tenant in its turn, however long the noisy queue is.
        assertTrue(fair.behindP99() < fifo.behindP99(), all);
        assertTrue(fair.behindP50() < fifo.behindP50() / 4, all);
        // The capped design leaves the polite tenant half the capacity: it hardly waits.
        assertTrue(capped.behindP50() < fifo.behindP50() / 4, all);
    }

    @Test
    void percentilesOfTheCounts() {
        int[] sorted = new int[100];
        for (int i = 0; i < 100; i++) {
            sorted[i] = i + 1;
        }
        assertEquals(50, FairShareFloodBenchmark.Flood.percentile(sorted, 0.50));
        assertEquals(99, FairShareFloodBenchmark.Flood.percentile(sorted, 0.99));
        assertEquals(7, FairShareFloodBenchmark.Flood.percentile(new int[] {7}, 0.99));
        assertEquals(-1, FairShareFloodBenchmark.Flood.percentile(new int[0], 0.5));
        FairShareFloodBenchmark.Flood f =
                FairShareFloodBenchmark.Flood.of(new int[] {5, 1, 3, 0}, 3, 10, 2_000_000_000L);
        assertEquals(new FairShareFloodBenchmark.Flood(3, 3, 5, 5, 5.0), f); // the first 3 counts, sorted: 1 3 5
    }
}
