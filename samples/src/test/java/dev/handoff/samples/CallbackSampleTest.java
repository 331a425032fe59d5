// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CallbackSampleTest {

    @Test
    void theTimedOutRequestIsCancelledTheShutdownRefusesAndEverythingElseCompletesOnTheLoop()
            throws InterruptedException {
        CallbackSample.Figures f = CallbackSample.run();

        assertEquals(1, f.timedOut(), "ping times out behind export");
        assertEquals(2, f.refusedByClose(), "late (woken by the shutdown) and after-shutdown hold nothing");
        assertEquals(f.requests() - 3, f.completed());
        assertEquals(0, f.wakesAfterCancel());
        assertEquals(0, f.handlersOffLoop());
        assertTrue(f.peakSlotsInUse() <= f.slots(), () -> "peak " + f.peakSlotsInUse());
        assertEquals(f.slots(), f.peakSlotsInUse(), "export holds every slot");
        assertEquals(f.slots(), f.availableAfter(), "every slot returned, none given back twice");
    }
}
