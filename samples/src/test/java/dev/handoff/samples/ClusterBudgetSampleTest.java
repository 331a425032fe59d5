// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ClusterBudgetSampleTest {

    @Test
    void threeReplicasNeverExceedTheBudgetAndEveryUploadCompletes() throws Exception {
        ClusterBudgetSample.Figures f = ClusterBudgetSample.run();

        assertTrue(f.peakInFlight() <= f.budget(), () -> "peak " + f.peakInFlight() + " > budget " + f.budget());
        assertEquals(f.uploads(), f.completed(), "every upload of every replica completed");
    }
}
