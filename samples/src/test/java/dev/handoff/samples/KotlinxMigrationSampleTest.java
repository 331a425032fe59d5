// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class KotlinxMigrationSampleTest {

    @Test
    void theViewBoundsTheCrawlOnTheHandoffQueue() {
        KotlinxMigrationSample.Figures f = KotlinxMigrationSample.INSTANCE.run();

        assertEquals(100, f.getFetches());
        assertTrue(f.getPeakConcurrent() <= KotlinxMigrationSample.CONNECTIONS, () -> "peak " + f.getPeakConcurrent());
        assertTrue(f.getPeakConcurrent() > 0);
        assertEquals(KotlinxMigrationSample.CONNECTIONS, f.getAvailableAfter());
    }
}
