// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The observers never wait for the internal lock: not for a claim() that stays inside it, and not
 * for each other (a claim on one semaphore that reads another's queue while a claim on that one
 * reads the first's). Without a bound on their tries both cases spin for good.
 */
@Timeout(value = 10, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a hang fails, not a speed check
class ObserverWithoutWaitTest {

    @Test
    void observersAnswerWhileAClaimStaysInsideTheLock() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        Acquisition slow = s.acquireThen(1, stayingInside(inside, leave));
        Acquisition behind = s.acquireThen(1, () -> {});
        Thread releaser = new Thread(() -> s.release(1), "releaser");
        releaser.start();
        inside.await(); // the releaser holds the lock, inside slow's claim()

        int length = s.queueLength();
        long weight = s.queuedPermits();
        assertTrue(length >= 0 && length <= 2, "queueLength " + length);
        assertTrue(weight >= 0 && weight <= 2, "queuedPermits " + weight);
        assertFalse(behind.isGranted());
        assertTrue(s.toString().startsWith("Semaphore[capacity=2"));

        leave.countDown();
        releaser.join();
        assertTrue(slow.isGranted());
        assertEquals(1, s.queueLength(), s.toString()); // exact again once nobody is inside
        assertEquals(1, s.queuedPermits(), s.toString());
        assertTrue(behind.cancel());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void twoClaimsThatObserveEachOthersSemaphoreDoNotLivelock() throws Exception {
        Semaphore a = new Semaphore(1);
        Semaphore b = new Semaphore(1);
        assertTrue(a.tryAcquire(1));
        assertTrue(b.tryAcquire(1));
        CyclicBarrier bothInside = new CyclicBarrier(2);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Acquisition onA = a.acquireThen(1, observing(bothInside, b, failure));
        Acquisition onB = b.acquireThen(1, observing(bothInside, a, failure));
        Thread t1 = new Thread(() -> a.release(1), "release-a");
        Thread t2 = new Thread(() -> b.release(1), "release-b");
        t1.start();
        t2.start();
        t1.join();
        t2.join();
        assertNull(failure.get());
        assertTrue(onA.isGranted() && onB.isGranted());
        a.release(1);
        b.release(1);
        assertEquals(1, a.availablePermits());
        assertEquals(1, b.availablePermits());
    }

    @Test
    void aFairShareObserverAnswersWhileAClaimStaysInside() throws Exception {
        FairShareSemaphore<String> f = FairShareSemaphore.<String>builder(1).build();
        assertTrue(f.tryAcquire("a", 1));
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch leave = new CountDownLatch(1);
        Acquisition slow = f.acquireThen("b", 1, stayingInside(inside, leave));
        Thread releaser = new Thread(() -> f.release("a", 1), "releaser");
        releaser.start();
        inside.await();
        assertTrue(f.queueLength() >= 0);
        assertTrue(f.queueLength("b") >= 0);
        assertTrue(f.heldPermits("a") >= 0);
        assertTrue(f.availablePermits() >= 0);
        leave.countDown();
        releaser.join();
        assertTrue(slow.isGranted());
        assertEquals(0, f.queueLength());
        f.release("b", 1);
        assertEquals(1, f.availablePermits());
    }

    /** A waker whose claim() tells {@code inside} and stays inside the lock until {@code leave}. */
    private static Waker stayingInside(CountDownLatch inside, CountDownLatch leave) {
        return new Waker() {
            @Override
            public boolean claim() {
                inside.countDown();
                try {
                    leave.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                return true;
            }

            @Override
            public void wake() {}
        };
    }

    /** A waker whose claim meets the other claim inside its lock, then reads the other semaphore. */
    private static Waker observing(CyclicBarrier bothInside, Semaphore other, AtomicReference<Throwable> failure) {
        return new Waker() {
            @Override
            public boolean claim() {
                try {
                    bothInside.await();
                    other.queueLength();
                    other.queuedPermits();
                    other.toString();
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
                return true;
            }

            @Override
            public void wake() {}
        };
    }
}
