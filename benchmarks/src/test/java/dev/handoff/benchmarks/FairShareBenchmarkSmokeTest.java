// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * FairShareBenchmark as a smoke test: every peer and key count, each benchmark method a few times,
 * and the teardown's leak check (the JMH run itself is ./bench.sh's or a manual run's).
 */
class FairShareBenchmarkSmokeTest {

    @Test
    void everyConfigurationRunsAndLeaksNothing() {
        for (String peer : new String[] {"fair-share", "semaphore"}) {
            for (int keys : new int[] {1, 1000}) {
                FairShareBenchmark b = new FairShareBenchmark();
                b.peer = peer;
                b.keys = keys;
                b.setUp();
                for (int i = 0; i < 3; i++) {
                    assertTrue(b.tryAcquireRelease(), peer + " " + keys);
                    assertTrue(b.queueAndHandOff().isGranted(), peer + " " + keys);
                }
                b.tearDown();
            }
        }
    }
}
