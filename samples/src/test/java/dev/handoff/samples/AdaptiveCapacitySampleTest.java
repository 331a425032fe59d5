// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The sample runs on a virtual clock: its figures are the same on every machine. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class AdaptiveCapacitySampleTest {

    @Test
    void theCapacityFollowsTheKneeAndNothingIsCreatedOrLost() {
        AdaptiveCapacitySample.Figures f = AdaptiveCapacitySample.run();
        KneeSimulation.Totals t = f.totals();
        assertEquals(0, t.violations(), "an admission over the capacity in force");
        assertEquals(t.arrivals(), t.admitted() + t.shed(), "every request was admitted or shed");
        assertEquals(t.admitted(), t.completed());
        assertTrue(t.allPermitsBack() && f.adaptiveInFlight() == 0, "permits lost or created");
        assertTrue(t.shed() > 0, "the bounded queue shed nothing: " + f);
        assertTrue(t.rises() > 0 && t.falls() > 0, "the capacity never moved both ways: " + f);
        assertTrue(t.minCapacity() >= 4 && t.maxCapacity() <= 200, "out of bounds: " + f);
        assertTrue(f.capacityBeforeChange() > AdaptiveCapacitySample.KNEE / 2, "never grew toward the knee: " + f);
        assertTrue(f.finalCapacity() < f.capacityBeforeChange(), "did not follow the knee down: " + f);
        assertTrue(t.maxInFlight() <= t.maxCapacity());
    }
}
