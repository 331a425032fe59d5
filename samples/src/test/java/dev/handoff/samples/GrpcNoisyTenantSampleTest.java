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
        assertTrue(f.fair().maxOvertaken() <= GrpcNoisyTenantSample.CAPACITY, f::toString);
        assertTrue(f.fifo().overtaken().get(0) > 10 * Math.max(1, f.fair().maxOvertaken()), f::toString);
    }
}
