// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 2, unit = TimeUnit.MINUTES)
class AdaptiveLimitSampleTest {

    @Test
    void theInFlightWeightNeverExceedsTheCapacityInForceAndTheQueueSheds() {
        AdaptiveLimitSample.Figures f = AdaptiveLimitSample.run();
        assertEquals(0, f.violations(), "an admission over the capacity in force");
        assertTrue(f.shed() > 0, "the bounded queue shed nothing: " + f);
        assertTrue(f.decreases() > 0 && f.increases() > 0, "the controller never moved both ways: " + f);
        assertTrue(f.minCapacity() < f.maxCapacity());
        assertEquals(f.arrivals(), f.admitted() + f.shed(), "every request was admitted or shed");
        assertEquals(f.admitted(), f.completed());
        assertTrue(f.allPermitsBack(), "permits lost or created");
        assertTrue(f.maxInFlight() <= f.maxCapacity());
    }
}
