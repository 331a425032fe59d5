// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class WithPermitsSampleTest {

    @Test
    void everyBatchIsWrittenWithinTheRowBudget() {
        WithPermitsSample.Figures f = WithPermitsSample.run();

        assertEquals(f.getBatches(), f.getWritten());
        assertTrue(f.getPeakRowsInFlight() <= WithPermitsSample.ROW_BUDGET, () -> "peak " + f.getPeakRowsInFlight());
        assertTrue(f.getPeakRowsInFlight() >= WithPermitsSample.ROW_BUDGET / 2, () -> "the budget never bound: " + f);
        assertEquals(WithPermitsSample.ROW_BUDGET, f.getAvailableAfter(), "every permit returned");
    }
}
