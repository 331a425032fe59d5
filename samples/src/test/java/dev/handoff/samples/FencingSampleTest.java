// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 2, unit = TimeUnit.MINUTES)
class FencingSampleTest {

    @Test
    void theStoreRefusesTheOvertakenHolder() throws Exception {
        FencingSample.Figures f = FencingSample.run();
        assertTrue(f.tokenB() > f.tokenA(), "B's token is larger");
        assertTrue(f.staleWriteRefused(), "A's stale write is refused");
        assertEquals("B: final", f.finalValue());
        assertFalse(f.aValidAtTheEnd(), "A's lease says lost once A is told");
    }

    @Test
    void theStoreAcceptsEqualOrHigherTokensOnly() {
        FencingSample.FencedStore store = new FencingSample.FencedStore();
        assertTrue(store.write("k", "1", 5));
        assertTrue(store.write("k", "2", 5));
        assertTrue(store.write("k", "3", 9));
        assertFalse(store.write("k", "4", 8));
        assertEquals("3", store.read("k"));
    }
}
