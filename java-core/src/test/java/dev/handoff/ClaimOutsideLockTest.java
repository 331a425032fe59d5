// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A user's {@link Waker#claim()} runs after the internal lock is released: a claim that takes long
 * (which the contract advises against) stalls no observer, no release of held permits, no other
 * waiter's grant and no queueing. Each check runs while the claim is still blocked; one that
 * waited for it would never return, and the preemptive timeout (far above any machine's delay)
 * would fail the test.
 */
class ClaimOutsideLockTest {

    private static final Duration STUCK = Duration.ofSeconds(20);

    static Thread daemon(Runnable body) {
        Thread t = new Thread(body);
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Test
    void aSlowClaimStallsNoObserverNoReleaseAndNoOtherGrant() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(3));
        SlowWaker slow = new SlowWaker(true);
        Acquisition first = s.acquireThen(1, slow);
        RecordingWaker nextWaker = new RecordingWaker();
        Acquisition second = s.acquireThen(1, nextWaker);
        Thread releaser = daemon(() -> s.release(1)); // grants first: its claim blocks this thread
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));

        assertTimeoutPreemptively(STUCK, () -> {
            assertEquals(1, s.queueLength(), "second still waits");
            assertEquals(1, s.queuedPermits());
            assertEquals(0, s.availablePermits(), "someone waits: nothing is free");
            assertFalse(s.tryAcquire(1), "nobody barges past the queue");
            assertTrue(s.toString().contains("queued=1"), s.toString());
            assertFalse(second.isGranted());
            assertTrue(first.toString().contains("being granted"), first.toString());
            assertFalse(first.cancel(), "no longer waiting: the waker hears the outcome");

            s.release(1); // permits this thread holds: never waits for the claim
            assertTrue(second.isGranted(), "the next waiter is granted behind the slow claim");
            assertEquals(1, nextWaker.wakes.get());

            CompletableFuture<Permits> third = s.acquireAsync(1); // queueing takes the lock
            assertFalse(third.isDone());
            s.release(1);
            assertTrue(third.isDone());
            third.join().close();
        });
        assertTrue(releaser.isAlive(), "the claim still blocks the release that made the grant");

        // After a cancel() that lost, isGranted() is exact: it waits for the claim's answer.
        CompletableFuture<Boolean> grantedSeen = CompletableFuture.supplyAsync(first::isGranted);
        Thread.sleep(50);
        assertFalse(grantedSeen.isDone(), "isGranted() answered before the claim did");
        slow.open.countDown();
        assertTrue(grantedSeen.get(20, TimeUnit.SECONDS));
        releaser.join(20_000);
        assertFalse(releaser.isAlive());
        assertTrue(first.isGranted());
        assertEquals(1, slow.wakes.get());
        assertEquals(1, s.availablePermits(), "first and second hold one each");
        s.release(1); // first's
        s.release(1); // second's
        assertEquals(3, s.availablePermits());
    }

    @Test
    void aSlowDecliningClaimGivesItsPermitsOnWhenItAnswers() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        SlowWaker slow = new SlowWaker(false);
        Acquisition declining = s.acquireThen(2, slow);
        RecordingWaker nextWaker = new RecordingWaker();
        Acquisition next = s.acquireThen(2, nextWaker);
        Thread releaser = daemon(() -> s.release(2));
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));
        assertTimeoutPreemptively(STUCK, () -> {
            assertEquals(1, s.queueLength());
            assertFalse(next.isGranted(), "the permits are the declining claim's until it answers");
        });
        slow.open.countDown();
        releaser.join(20_000);
        assertFalse(releaser.isAlive());
        assertFalse(declining.isGranted());
        assertEquals(0, slow.wakes.get(), "a declined acquisition is never woken");
        assertTrue(next.isGranted(), "the declined permits went on to the next waiter, in the same release");
        assertEquals(1, nextWaker.wakes.get());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void aSlowImmediateClaimStallsNoReleaseOfHeldPermits() throws Exception {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(1));
        SlowWaker slow = new SlowWaker(true);
        AtomicInteger started = new AtomicInteger();
        Thread acquirer = daemon(() -> {
            s.acquireThen(2, slow); // granted at once: the claim runs on this thread
            started.incrementAndGet();
        });
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));
        assertTimeoutPreemptively(STUCK, () -> {
            s.release(1); // held here: never waits
            assertEquals(0, s.queueLength());
            assertTrue(s.toString().startsWith("Semaphore["), s.toString());
        });
        slow.open.countDown();
        acquirer.join(20_000);
        assertEquals(1, started.get());
        assertEquals(1, s.availablePermits());
        s.release(2);
        assertEquals(3, s.availablePermits());
    }

    @Test
    void aDeclinedWriteGrantLeavesTheLockUnlocked() throws Exception {
        RwLock rw = new RwLock(4);
        assertTrue(rw.tryReadLock());
        SlowWaker slow = new SlowWaker(false);
        Acquisition writer = rw.writeLockThen(slow);
        Thread unlocker = daemon(rw::readUnlock); // grants the writer: its claim blocks this thread
        assertTrue(slow.inClaim.await(20, TimeUnit.SECONDS));
        slow.open.countDown();
        unlocker.join(20_000);
        assertFalse(unlocker.isAlive());
        assertFalse(writer.isGranted());
        assertFalse(rw.isWriteLocked(), "the declined write grant was undone");
        assertTrue(rw.tryWriteLock(), "all permits are back");
        rw.writeUnlock();
        assertTrue(rw.tryReadLock());
        rw.readUnlock();
    }

    @Test
    void aClaimThatThrowsFailsItsAcquisitionAndItsPermitsGoOn() throws Exception {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicInteger wakes = new AtomicInteger();
        Acquisition failing = s.acquireThen(1, new Waker() {
            @Override
            public boolean claim() {
                throw new IllegalStateException("gone");
            }

            @Override
            public void wake() {
                wakes.incrementAndGet();
            }
        });
        RecordingWaker nextWaker = new RecordingWaker();
        Acquisition next = s.acquireThen(1, nextWaker);
        s.release(1);
        assertTrue(failing.failure() instanceof IllegalStateException, String.valueOf(failing.failure()));
        assertEquals(1, wakes.get(), "a failed acquisition is woken");
        assertTrue(next.isGranted());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }
}
