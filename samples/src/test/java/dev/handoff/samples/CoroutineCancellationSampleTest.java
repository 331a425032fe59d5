// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CoroutineCancellationSampleTest {

    @Test
    void theTimeoutCancelsTheImportAndEveryPermitComesBack() {
        CoroutineCancellationSample.Figures f = CoroutineCancellationSample.run();

        assertTrue(f.getTimedOut(), "the batches need longer than the timeout");
        assertEquals(
                f.getBatches(),
                f.getWritten() + f.getCancelledWhileWriting() + f.getCancelledWhileWaiting(),
                "every batch either was written or was cancelled");
        assertTrue(f.getWritten() < f.getBatches());
        assertEquals(WithPermitsSample.ROW_BUDGET, f.getAvailableAfter(), "every permit returned");
        assertEquals(0, f.getQueueAfter());
    }
}
