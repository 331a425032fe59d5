// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a lock never unlocked) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class LocksSampleTest {

    @Test
    void everyDepositCountsAndTheLocksEndFree() throws InterruptedException {
        LocksSample.Figures f = LocksSample.run();

        assertEquals((long) LocksSample.THREADS * LocksSample.DEPOSITS, f.balance());
        assertEquals(10, f.audits());
        assertTrue(f.mutex().contains("account"), f.mutex());
        assertTrue(f.mutex().contains("unlocked") && f.mutex().contains("queued=0"), f.mutex());
    }
}
