// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ObservabilitySampleTest {

    @Test
    void theMetersCountTheWaitsByOutcome() throws InterruptedException {
        ObservabilitySample.Figures f = ObservabilitySample.run();

        assertEquals(1, f.timedOut(), "the impatient thread's wait");
        assertTrue(f.granted() <= 5, () -> "at most the five patient threads waited: " + f.granted());
        assertEquals(4.0, f.available());
    }
}
