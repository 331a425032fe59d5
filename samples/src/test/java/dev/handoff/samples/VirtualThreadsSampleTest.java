// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledForJreRange;
import org.junit.jupiter.api.condition.JRE;

/** A hang (a permit never returned) fails the test instead of stalling the build. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class VirtualThreadsSampleTest {

    @Test
    @EnabledForJreRange(min = JRE.JAVA_21)
    void everyVirtualThreadCompletesWithinThePool() throws InterruptedException {
        VirtualThreadsSample.Figures f = VirtualThreadsSample.run();

        assertTrue(f.supported());
        assertEquals(VirtualThreadsSample.TASKS, f.completed());
        assertTrue(f.peakInUse() <= VirtualThreadsSample.CONNECTIONS, () -> "peak " + f.peakInUse());
        assertEquals(VirtualThreadsSample.CONNECTIONS, f.availableAfter(), "every connection returned");
    }

    @Test
    @EnabledForJreRange(max = JRE.JAVA_20)
    void saysItNeedsJdk21BeforeIt() throws InterruptedException {
        VirtualThreadsSample.Figures f = VirtualThreadsSample.run();

        assertFalse(f.supported());
        assertEquals(Runtime.version().feature(), f.javaVersion());
        assertEquals(0, f.completed());
    }
}
