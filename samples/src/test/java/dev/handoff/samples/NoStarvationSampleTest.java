// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class NoStarvationSampleTest {

    @Test
    void noLaterDownloadOvertakesTheHugeOneEvenWhenItsBytesAreFree() {
        NoStarvationSample.Figures f = NoStarvationSample.run();

        assertEquals(0, f.overtook(), "FIFO: no later download starts before the huge one");
        assertTrue(f.heldBackWhileFree() > 0, "no later download found its bytes free: the sample shows nothing");
        assertEquals(f.downloads(), f.completed(), "the huge download and every other completed");
        assertEquals(f.budget(), f.availableAfter(), "every permit returned");
    }
}
