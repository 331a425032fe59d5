// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a crashed replica's node never deleted) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CrashedReplicaSampleTest {

    @Test
    void aCrashedReplicasPermitsComeBackWithItsSession() throws Exception {
        CrashedReplicaSample.Figures f = CrashedReplicaSample.run();

        assertEquals(CrashedReplicaSample.CRASH_HOLD_MIB, f.crashedHeld());
        assertEquals(2, f.waitingBeforeCrash(), "6 MiB each do not fit beside the crashed replica's 8");
        assertEquals(2, f.grantedAfterCrash(), "both granted once the crashed replica's node is gone");
        assertTrue(f.fullBudgetAfter(), "the whole budget could be taken again");
    }
}
