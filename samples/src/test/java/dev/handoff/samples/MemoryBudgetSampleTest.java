// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class MemoryBudgetSampleTest {

    @Test
    void neverAboveTheBudgetAndEveryPermitComesBack() {
        MemoryBudgetSample.Figures f = MemoryBudgetSample.run();

        assertTrue(f.peakBytesInFlight() <= f.budget(), () -> "peak " + f.peakBytesInFlight() + " > budget");
        assertTrue(
                f.peakBytesInFlight() >= f.budget() / 2, () -> "the budget never bound: peak " + f.peakBytesInFlight());
        assertEquals(f.downloads(), f.completed());
        assertTrue(f.totalBytes() > 2 * f.budget(), "the batch is larger than the budget");
        assertEquals(f.budget(), f.availableAfter(), "every permit returned");
    }
}
