// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CallbackTimeoutSampleTest {

    @Test
    void everyPingBehindTheExportIsWithdrawnAndNeverWoken() throws InterruptedException {
        CallbackTimeoutSample.Figures f = CallbackTimeoutSample.run();

        assertEquals(CallbackTimeoutSample.PINGS, f.timedOut(), "the export holds every slot longer than a ping waits");
        assertEquals(0, f.wokenWithoutGrant(), "no waker ran for a withdrawn request");
        assertEquals(2, f.completed(), "the export and the report");
        assertEquals(CallbackTimeoutSample.SLOTS, f.availableAfter(), "every slot returned, none given back twice");
    }
}
