// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class KtorTenantsSampleTest {

    @Test
    void aPoliteTenantWaitsBehindAtMostOneNoisyCallPerSlotNotBehindTheFlood() {
        KtorTenantsSample.Figures fair = KtorTenantsSample.run(true);

        assertEquals(KtorTenantsSample.POLITE, fair.getNoisyAhead().size());
        assertTrue(
                fair.getNoisyAhead().stream().allMatch(n -> n <= KtorTenantsSample.MAX_AHEAD),
                () -> "polite calls waited behind the flood: " + fair);
        assertEquals(KtorTenantsSample.SLOTS, fair.getAvailableAfter(), "every permit returned");
        assertEquals(0, fair.getWaitingAfter());
    }

    @Test
    void oneFifoQueuePutsTheFloodAheadOfThePoliteTenant() {
        KtorTenantsSample.Figures fifo = KtorTenantsSample.run(false);

        // The first polite call arrives while all of the flood but the calls running waits ahead of it.
        assertTrue(
                fifo.getNoisyAhead().get(0) >= KtorTenantsSample.FLOOD - 2 * KtorTenantsSample.SLOTS,
                () -> "FIFO: " + fifo);
        assertEquals(KtorTenantsSample.SLOTS, fifo.getAvailableAfter(), "every permit returned");
    }
}
