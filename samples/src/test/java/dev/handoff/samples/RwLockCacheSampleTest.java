// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class RwLockCacheSampleTest {

    @Test
    void theWriterFinishesAndNoReadIsTorn() throws InterruptedException {
        RwLockCacheSample.Figures f = RwLockCacheSample.run();

        assertEquals(f.refreshes(), f.refreshesDone(), "the writer was not starved");
        assertEquals(0, f.tornReads());
        assertTrue(f.reads() >= (long) f.readers() * RwLockCacheSample.READS_PER_READER_AT_LEAST);
        assertTrue(f.lockFreeAfter());
    }
}
