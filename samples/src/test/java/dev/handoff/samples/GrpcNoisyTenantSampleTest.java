// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class GrpcNoisyTenantSampleTest {

    @Test
    void theKeyedGateKeepsTheNoisyTenantOffThePoliteOnesBack() throws Exception {
        GrpcNoisyTenantSample.Figures f = GrpcNoisyTenantSample.run(); // also checks its own invariants
        for (GrpcNoisyTenantSample.Run r : new GrpcNoisyTenantSample.Run[] {f.fair(), f.fifo()}) {
            assertEquals(GrpcNoisyTenantSample.NOISY_CALLS + GrpcNoisyTenantSample.POLITE_CALLS, r.answered());
            assertEquals(GrpcNoisyTenantSample.CAPACITY, r.availableAfter(), "every permit back");
            assertEquals(GrpcNoisyTenantSample.POLITE_CALLS, r.overtaken().size());
        }
        // Behind a FIFO gate the first polite call waits for the backlog (at least half the flood was
        // queued when it arrived); keyed by tenant, every polite call waits for a tenth of that at most.
        assertTrue(f.fifo().overtaken().get(0) >= GrpcNoisyTenantSample.NOISY_CALLS / 3, f::toString);
        assertTrue(f.fair().maxOvertaken() * 10 <= f.fifo().overtaken().get(0), f::toString);
    }
}
