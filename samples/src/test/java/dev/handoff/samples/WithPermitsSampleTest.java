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
    void theTimeoutCancelsTheImportAndEveryPermitComesBack() {
        WithPermitsSample.Figures f = WithPermitsSample.run();

        assertTrue(f.getTimedOut(), "the batches need longer than the timeout");
        assertEquals(f.getBatches(),
                f.getCompleted() + f.getCancelledWhileWriting() + f.getCancelledWhileWaiting(),
                "every batch either completed or was cancelled");
        assertTrue(f.getCompleted() < f.getBatches());
        assertTrue(f.getPeakRowsInFlight() <= f.getRowBudget(), () -> "peak " + f.getPeakRowsInFlight());
        assertEquals(f.getRowBudget(), f.getAvailableAfter(), "every permit returned");
        assertEquals(0, f.getQueueAfter());
    }
}
