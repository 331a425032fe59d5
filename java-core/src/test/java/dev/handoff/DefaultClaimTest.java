// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A {@link Waker} that keeps the default {@link Waker#claim()} has no user code to ask: its grant is
 * taken under the lock, as an internal face's, and only wakers with a claim of their own are
 * granted provisionally and asked after the lock.
 */
class DefaultClaimTest {

    interface ClaimingWaker extends Waker {
        @Override
        default boolean claim() {
            return true;
        }
    }

    static class OwnClaim implements Waker {
        @Override
        public boolean claim() {
            return true;
        }

        @Override
        public void wake() {}
    }

    static final class InheritedClaim extends OwnClaim {}

    @Test
    void onlyWakersWithTheirOwnClaimAreAskedAfterTheLock() {
        Waker lambda = () -> {};
        assertFalse(WakerClaims.ownClaim(lambda));
        assertFalse(WakerClaims.ownClaim(new Waker() {
            @Override
            public void wake() {}
        }));
        assertTrue(WakerClaims.ownClaim(new OwnClaim()));
        assertTrue(WakerClaims.ownClaim(new InheritedClaim()));
        ClaimingWaker fromInterface = () -> {};
        assertTrue(WakerClaims.ownClaim(fromInterface));

        FifoCore core = new FifoCore(1);
        assertFalse(new CallbackAcquisition(core, 1, null, lambda).claimsAfterUnlock());
        assertTrue(new CallbackAcquisition(core, 1, null, new OwnClaim()).claimsAfterUnlock());
    }

    @Test
    void aDefaultClaimIsGrantedWhileAnEarlierOwnClaimIsStillAsked() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        SlowWaker slow = new SlowWaker(true);
        AtomicInteger woken = new AtomicInteger();
        Acquisition first = s.acquireThen(1, slow);
        Acquisition second = s.acquireThen(1, woken::incrementAndGet);
        Thread releaser = ClaimOutsideLockTest.daemon(() -> s.release(2));
        try {
            assertTrue(slow.inClaim.await(10, TimeUnit.SECONDS), "the first waker's claim was never asked");
            // The release is inside the first waker's claim, after its lock: the second grant,
            // with nothing to ask, is final already.
            assertTrue(second.isGranted(), second.toString());
            assertEquals(0, s.availablePermits());
        } finally {
            slow.open.countDown();
            releaser.join(10_000);
        }
        assertFalse(releaser.isAlive());
        assertTrue(first.isGranted());
        assertEquals(1, slow.wakes.get());
        assertEquals(1, woken.get());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void onAFairShareTooADefaultClaimIsGrantedWhileAnEarlierOwnClaimIsStillAsked() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(2).build();
        assertTrue(f.tryAcquire("a", 2));
        SlowWaker slow = new SlowWaker(true);
        AtomicInteger woken = new AtomicInteger();
        Acquisition first = f.acquireThen("b", 1, slow);
        Acquisition second = f.acquireThen("c", 1, woken::incrementAndGet);
        Thread releaser = ClaimOutsideLockTest.daemon(() -> f.release("a", 2));
        try {
            assertTrue(slow.inClaim.await(10, TimeUnit.SECONDS), "the first waker's claim was never asked");
            assertTrue(second.isGranted(), second.toString());
            assertEquals(1, f.heldPermits("c"));
        } finally {
            slow.open.countDown();
            releaser.join(10_000);
        }
        assertFalse(releaser.isAlive());
        assertTrue(first.isGranted());
        assertEquals(1, f.heldPermits("b"));
        assertEquals(1, woken.get());
        f.release("b", 1);
        f.release("c", 1);
        assertEquals(2, f.availablePermits());
    }
}
