// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FairShareSampleTest {

    @Test
    void theTenantsAreServedOneToTwoToFourWhileAllWaitAndEveryRequestCompletes() {
        FairShareSample.Figures f = FairShareSample.run();

        assertEquals(3 * FairShareSample.REQUESTS_PER_TENANT, f.completed());
        assertEquals(FairShareSample.SLOTS, f.availableAfter(), "every slot returned");
        // The first tenant to run out is enterprise (share 4): its 190th grant comes after about 7/4 * 190 = 332.
        assertTrue(f.backlogged() > 250, () -> "backlogged window " + f.backlogged());
        // Grants are recorded by the granting threads, which may interleave by a grant or two; the
        // semaphore's own order is checked exactly by FairShareSemaphoreTest.
        double pro = (double) f.pro() / f.free();
        double enterprise = (double) f.enterprise() / f.free();
        assertTrue(pro > 1.6 && pro < 2.4, () -> "pro/free " + pro + " in " + f);
        assertTrue(enterprise > 3.2 && enterprise < 4.8, () -> "enterprise/free " + enterprise + " in " + f);
    }
}
