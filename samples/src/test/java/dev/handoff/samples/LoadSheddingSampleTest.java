// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The sample runs on a virtual clock: its figures are the same on every machine. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class LoadSheddingSampleTest {

    @Test
    void theBoundShedsByWeightAndKeepsTheWaitShortWhereTheUnboundedQueueGrows() {
        LoadSheddingSample.Figures f = LoadSheddingSample.run();
        KneeSimulation.Totals unbounded = f.unbounded();
        KneeSimulation.Totals bounded = f.bounded();

        assertEquals(0, unbounded.shed());
        assertTrue(unbounded.maxQueuedPermits() > 10 * LoadSheddingSample.BOUND, () -> "no overload: " + unbounded);
        assertTrue(bounded.shed() > 0, () -> "the bound shed nothing: " + bounded);
        assertTrue(bounded.maxQueuedPermits() <= LoadSheddingSample.BOUND, () -> "over the bound: " + bounded);
        assertTrue(bounded.maxWaitMillis() * 10 < unbounded.maxWaitMillis(), () -> bounded + " against " + unbounded);
        for (KneeSimulation.Totals t : new KneeSimulation.Totals[] {unbounded, bounded}) {
            assertEquals(t.arrivals(), t.admitted() + t.shed(), "every request was admitted or shed");
            assertEquals(t.admitted(), t.completed());
            assertEquals(0, t.violations(), "an admission over the capacity");
            assertTrue(t.allPermitsBack(), "permits lost or created");
        }
    }
}
