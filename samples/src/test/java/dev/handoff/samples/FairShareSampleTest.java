// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FairShareSampleTest {

    @Test
    void theTenantsAreServedOneToTwoToFourWhileAllWaitAndEveryRequestCompletes() throws InterruptedException {
        FairShareSample.Figures f = FairShareSample.run();

        assertEquals(3 * FairShareSample.REQUESTS_PER_TENANT, f.completed());
        assertEquals(3 * FairShareSample.REQUESTS_PER_TENANT, f.grantOrder().size());
        assertEquals(FairShareSample.SLOTS, f.availableAfter(), "every slot returned");
        List<String> window = whileAllWaited(f.grantOrder());
        // The first tenant to run out is enterprise (share 4): its 190th grant comes after about 7/4 * 190 = 332.
        assertTrue(window.size() > 250, () -> "backlogged window " + window.size());
        // Grants are recorded by the granting threads, which may interleave by a grant or two; the
        // semaphore's own order is checked exactly by FairShareSemaphoreTest.
        int free = Collections.frequency(window, "free");
        double pro = (double) Collections.frequency(window, "pro") / free;
        double enterprise = (double) Collections.frequency(window, "enterprise") / free;
        assertTrue(pro > 1.6 && pro < 2.4, () -> "pro/free " + pro + " in " + f);
        assertTrue(enterprise > 3.2 && enterprise < 4.8, () -> "enterprise/free " + enterprise + " in " + f);
    }

    /**
     * The grants made while every tenant surely still had requests waiting: up to the first tenant's
     * 190th recorded grant. A grant is recorded by the thread that made it, so a record can come late
     * (a descheduled thread); stopping 10 short keeps that out of the ratios.
     */
    private static List<String> whileAllWaited(List<String> grants) {
        Map<String, Integer> seen = new HashMap<>();
        int n = 0;
        while (n < grants.size()
                && seen.merge(grants.get(n), 1, Integer::sum) < FairShareSample.REQUESTS_PER_TENANT - 10) {
            n++;
        }
        return grants.subList(0, n);
    }
}
