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
        assertEquals(0, f.violations(), "an admission over the capacity in force");
        assertEquals(f.arrivals(), f.admitted() + f.shed(), "every request was admitted or shed");
        assertEquals(f.admitted(), f.completed());
        assertTrue(f.allPermitsBack(), "permits lost or created");
        assertTrue(f.shed() > 0, "the bounded queue shed nothing: " + f);
        assertTrue(f.increases() > 0 && f.decreases() > 0, "the capacity never moved both ways: " + f);
        assertTrue(f.minCapacity() >= 4 && f.maxCapacity() <= 200, "out of bounds: " + f);
        assertTrue(f.capacityBeforeChange() > AdaptiveCapacitySample.KNEE / 2, "never grew toward the knee: " + f);
        assertTrue(f.finalCapacity() < f.capacityBeforeChange(), "did not follow the knee down: " + f);
        assertTrue(f.maxInFlight() <= f.maxCapacity());
    }
}
