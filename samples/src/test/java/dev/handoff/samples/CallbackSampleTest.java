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
    void everyHandlerRunsOnTheLoopWhetherGrantedAtOnceOrLater() throws InterruptedException {
        CallbackSample.Figures f = CallbackSample.run();

        assertEquals(CallbackSample.REQUESTS, f.completed());
        assertTrue(
                f.grantedAtOnce() > 0 && f.grantedAtOnce() < CallbackSample.REQUESTS,
                () -> "both paths: granted at once " + f.grantedAtOnce());
        assertEquals(0, f.stepsOffLoop());
        assertTrue(f.peakSlotsInUse() <= CallbackSample.SLOTS, () -> "peak " + f.peakSlotsInUse());
        assertEquals(CallbackSample.SLOTS, f.availableAfter(), "every slot returned, none given back twice");
    }
}
