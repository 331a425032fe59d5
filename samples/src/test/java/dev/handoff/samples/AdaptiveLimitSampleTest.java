// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The sample runs on a virtual clock: its figures are the same on every machine. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class AdaptiveLimitSampleTest {

    @Test
    void theInFlightWeightNeverExceedsTheCapacityInForceWhileTheLoopMovesItBothWays() {
        AdaptiveLimitSample.Figures f = AdaptiveLimitSample.run();
        KneeSimulation.Totals t = f.totals();
        assertEquals(0, t.violations(), "an admission over the capacity in force");
        assertTrue(t.falls() > 0 && t.rises() > 0, "the controller never moved both ways: " + f);
        assertTrue(t.minCapacity() < t.maxCapacity());
        assertEquals(t.arrivals(), t.admitted() + t.shed(), "every request was admitted or shed");
        assertEquals(t.admitted(), t.completed());
        assertTrue(t.allPermitsBack(), "permits lost or created");
        assertTrue(t.maxInFlight() <= t.maxCapacity());
    }
}
