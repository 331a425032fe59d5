// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static dev.handoff.ClaimOutsideLockTest.daemon;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A user's {@link Waker#claim()} on a {@link FairShareSemaphore} runs after the fair share's lock,
 * as on a {@link Semaphore}: a claim that blocks stalls no observer, no release of held permits,
 * no other tenant's grant and no queueing. Each check runs while the claim is blocked; one that
 * waited for it would never return, and the preemptive timeout would fail the test. (With the
 * claim under the lock, the first release of another tenant already hung.)
 */
class FairShareClaimOutsideLockTest {

    private static final Duration STUCK = Duration.ofSeconds(20);

    @Test
    void aSlowQueuedClaimStallsNoObserverNoReleaseAndNoOtherTenant() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(3).build();
        assertTrue(f.tryAcquire("a", 3));
        SlowWaker slow = new SlowWaker(true);
        Acquisition first = f.acquireThen("b", 1, slow);
        RecordingWaker nextWaker = new RecordingWaker();
        Acquisition second = f.acquireThen("c", 1, nextWaker);
        Thread releaser = daemon(() -> f.release("a", 1)); // grants b: its claim blocks this thread
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));

        assertTimeoutPreemptively(STUCK, () -> {
            assertEquals(1, f.queueLength(), "c still waits");
            assertEquals(0, f.heldPermits("b"), "held by nobody until the claim answers");
            assertEquals(2, f.heldPermits("a"));
            assertFalse(f.tryAcquire("d", 1), "nobody barges past the queue");
            assertFalse(first.cancel(), "no longer waiting: the waker hears the outcome");

            f.release("a", 1); // permits this thread's tenant holds: never waits for the claim
            assertTrue(second.isGranted(), "the next tenant is granted behind the slow claim");
            assertEquals(1, nextWaker.wakes.get());
            assertEquals(1, f.heldPermits("c"));

            Acquisition third = f.acquireThen("d", 1, new RecordingWaker()); // queueing takes the lock
            assertFalse(third.isGranted());
            f.release("c", 1);
            assertTrue(third.isGranted());
            f.release("d", 1);
        });
        assertTrue(releaser.isAlive(), "the claim still blocks the release that made the grant");
        slow.open.countDown();
        releaser.join(20_000);
        assertFalse(releaser.isAlive());
        assertTrue(first.isGranted());
        assertEquals(1, slow.wakes.get());
        assertEquals(1, f.heldPermits("b"));
        f.release("b", 1);
        f.release("a", 1);
        assertEquals(3, f.availablePermits());
        assertEquals(0, f.activeKeys());
    }

    @Test
    void aDecliningClaimGivesItsPermitsOnInFairOrder() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        assertTrue(f.tryAcquire("a", 2));
        SlowWaker declining = new SlowWaker(false);
        Acquisition gone = f.acquireThen("b", 2, declining);
        RecordingWaker nextWaker = new RecordingWaker();
        Acquisition next = f.acquireThen("c", 2, nextWaker);
        Thread releaser = daemon(() -> f.release("a", 2));
        assertTrue(declining.inClaim.await(20, TimeUnit.SECONDS));
        assertTimeoutPreemptively(STUCK, () -> {
            assertFalse(next.isGranted(), "the permits are the declining claim's until it answers");
            assertEquals(1, f.queueLength());
        });
        declining.open.countDown();
        releaser.join(20_000);
        assertFalse(releaser.isAlive());
        assertFalse(gone.isGranted());
        assertEquals(Acquisition.CANCELLED, gone.state);
        assertEquals(0, declining.wakes.get(), "a declined acquisition is never woken");
        assertTrue(next.isGranted(), "the declined permits went on to the next tenant, in the same release");
        assertEquals(1, nextWaker.wakes.get());
        assertEquals(0, f.heldPermits("b"));
        assertEquals(2, f.heldPermits("c"));
        f.release("c", 2);
        assertEquals(2, f.availablePermits());
    }

    @Test
    void aSlowClaimAtOnceStallsNoReleaseOfOtherTenantsAndItsCallAnswersWithIt() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(3).build();
        assertTrue(f.tryAcquire("a", 1));
        SlowWaker slow = new SlowWaker(false);
        Acquisition[] started = new Acquisition[1];
        Thread acquirer = daemon(() -> started[0] = f.acquireThen("b", 2, slow)); // its claim runs here
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));
        assertTimeoutPreemptively(STUCK, () -> {
            f.release("a", 1); // held: never waits
            assertEquals(0, f.queueLength());
            assertTrue(f.toString().startsWith("FairShareSemaphore["), f.toString());
        });
        slow.open.countDown();
        acquirer.join(20_000);
        assertFalse(acquirer.isAlive());
        assertEquals(Acquisition.CANCELLED, started[0].state, "declined at once: never granted");
        assertEquals(3, f.availablePermits(), "the declined grant's permits came back");
        assertEquals(0, f.heldPermits("b"));
        assertTrue(f.tryAcquire("b", 3));
    }

    @Test
    void aThrowingClaimFailsItsAcquisitionAndItsPermitsGoOn() {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(1).build();
        Acquisition failed = f.acquireThen("a", 1, new Waker() {
            @Override
            public boolean claim() {
                throw new IllegalStateException("claim failed");
            }

            @Override
            public void wake() {}
        });
        assertEquals(Acquisition.FAILED, failed.state);
        assertFalse(failed.isGranted());
        assertEquals(1, f.availablePermits());
        assertEquals(0, f.heldPermits("a"));
    }
}
