// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned, a starved writer) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RwLockCacheSampleTest {

    @Test
    void theWriterFinishesAmongBackToBackReadersAndNoReadIsTorn() throws InterruptedException {
        RwLockCacheSample.Figures f = RwLockCacheSample.run();

        assertEquals(0, f.tornReads());
        assertTrue(f.reads() >= (long) RwLockCacheSample.READERS * RwLockCacheSample.READS_PER_READER_AT_LEAST);
        assertTrue(f.lockFreeAfter());
    }
}
