// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A second release of a handle from inside its own first release: the give-back grants a waiter
 * whose waker (or a future's dependent) runs on the releasing thread and releases the same handle
 * again, as cleanup code that closes every handle of a request does. It answers false at once;
 * only a call on another thread waits for the first to finish.
 */
@Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang fails, not a speed check
class HandleReleasedFromItsOwnWakeTest {

    @Test
    void aFutureDependentReleasingTheSameHandleGetsFalse() throws Exception {
        Semaphore s = new Semaphore(1);
        Permits h = s.acquireBlocking(1);
        List<Boolean> again = new ArrayList<>();
        CompletableFuture<Permits> next = s.acquireAsync(1);
        CompletableFuture<Void> dependent = next.thenRun(() -> again.add(h.release()));
        h.close(); // grants `next`; its dependent runs here and releases h again
        assertEquals(List.of(false), again);
        assertTrue(dependent.isDone());
        assertTrue(h.isReleased());
        assertTrue(next.get(0, TimeUnit.SECONDS).release());
        assertEquals(1, s.availablePermits(), s.toString());
    }

    @Test
    void aWakerClosingTheHandleWhoseReleaseGrantedItGetsFalse() throws Exception {
        for (Semaphore s : List.of(
                new Semaphore(2),
                Semaphore.builder(2).listener(new WaitListener() {}).build())) {
            Permits[] held = {s.acquireBlocking(2)};
            List<Boolean> again = new ArrayList<>();
            Acquisition waiting = s.acquireThen(2, () -> {
                again.add(held[0].release()); // the handle being released, from the wake it caused
                s.release(2); // the waiter's own permits
            });
            assertTrue(held[0].release());
            assertTrue(waiting.isGranted());
            assertEquals(List.of(false), again);
            assertEquals(2, s.availablePermits(), s.toString());
        }
    }

    @Test
    void aFairShareHandleReleasedFromItsOwnWakeGetsFalse() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(1).build();
        Permits h = f.acquireBlocking("a", 1);
        List<Boolean> again = new ArrayList<>();
        CompletableFuture<Permits> next = f.acquireAsync("b", 1);
        next.thenRun(() -> again.add(h.release()));
        assertTrue(h.release());
        assertEquals(List.of(false), again);
        assertFalse(next.get(0, TimeUnit.SECONDS).isReleased());
        next.get().close();
        assertEquals(1, f.availablePermits());
    }
}
