// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CallbackShutdownSampleTest {

    @Test
    void theCloseRefusesTheWaitingAndLaterRequestsAndTheHolderStillGivesBack() throws InterruptedException {
        CallbackShutdownSample.Figures f = CallbackShutdownSample.run();

        assertTrue(f.closed());
        assertEquals(1, f.completed(), "flush, granted before the close");
        assertEquals(2, f.refusedByClose(), "late (woken by the close) and after-shutdown hold nothing");
        assertEquals(0, f.stepsOffLoop());
        assertEquals(CallbackShutdownSample.SLOTS, f.availableAfter(), "flush's slots came back after the close");
    }
}
