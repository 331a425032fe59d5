// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ReactorSampleTest {

    @Test
    void theBudgetHoldsAndEveryPermitComesBack() {
        ReactorSample.Figures f = ReactorSample.run();

        assertTrue(f.peakBytes() <= ReactorSample.BUDGET, () -> "peak " + f.peakBytes());
        assertTrue(f.peakBytes() > 0);
        assertTrue(f.timedOut() >= f.reads() / 10, () -> "every hanging read times out: " + f.timedOut());
        assertEquals(ReactorSample.BUDGET, f.availableAfter());
    }
}
