// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A shrink that races a lock-free append: the appender read the tail and the old capacity, the
 * shrink sealed the queue, and the tail it read came back (a node appended under the lock behind
 * the seal, then cancelled). The appender's node must not wait at a capacity it can never fit:
 * the tail never moves back to a node queued before a seal without sealing again, so the
 * appender's CAS fails and it decides under the lock, where it is refused.
 */
@Timeout(30) // a guard against hangs, not a speed check
class ShrinkRacingAppendTest {

    @Test
    void aNodeHeavierThanTheNewCapacityNeverWaitsAfterTheTailCameBack() throws Exception {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        RecordingWaker w0 = new RecordingWaker();
        Acquisition n0 = s.acquireThen(1, w0); // the tail the appender will read

        // stops inside its lock-free append, after the core read the tail and the capacity, before the CAS
        StoppingAcquisition heavy = new StoppingAcquisition("tryAppend");
        AtomicReference<Throwable> startFailure = new AtomicReference<>();
        Thread appender = new Thread(
                () -> {
                    try {
                        s.startAcquisition(3, heavy); // fits the capacity 4 the face checks against
                    } catch (Throwable t) {
                        startFailure.set(t);
                    }
                },
                "appender");
        appender.start();
        heavy.reached.await(); // it has read tail == n0 and capacity 4

        s.setCapacity(2); // seals the tail; nothing heavier than 2 is queued yet
        RecordingWaker wx = new RecordingWaker();
        Acquisition x = s.acquireThen(1, wx); // under the lock, behind the seal
        assertTrue(x.cancel()); // x was the last node: the tail moves back towards n0

        heavy.go.countDown();
        appender.join();

        // The start took effect after the shrink: it is refused as the face's check would have
        // refused it then, and nothing of it waits.
        assertTrue(startFailure.get() instanceof IllegalArgumentException, "start: " + startFailure.get() + ", " + s);
        assertFalse(heavy.isGranted());
        assertEquals(1, s.queueLength(), s.toString());
        assertEquals(1, s.queuedPermits(), s.toString());

        // Every holder gives back what it holds: n0 is granted, then everything comes back.
        s.release(4); // 2 of them pay the debt of the shrink, 1 goes to n0, 1 becomes free
        assertTrue(n0.isGranted(), s.toString());
        assertEquals(0, s.queueLength(), s.toString());
        s.release(1);
        assertEquals(2, s.availablePermits(), s.toString());
        assertEquals(0, heavy.wakes.get());
        assertEquals(1, w0.wakes.get());
        assertEquals(0, wx.wakes.get());
    }

    @Test
    void lockFreeAppendsResumeAfterTheTailWasSealedAgain() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(4));
        Acquisition n0 = s.acquireThen(1, new RecordingWaker());
        s.setCapacity(3);
        Acquisition x = s.acquireThen(1, new RecordingWaker()); // unseals behind n0
        assertTrue(x.cancel()); // seals again, with n0 the last node
        Acquisition y = s.acquireThen(2, new RecordingWaker()); // under the lock: unseals behind n0
        Acquisition z = s.acquireThen(1, new RecordingWaker()); // lock-free again, behind y
        assertEquals(3, s.queueLength(), s.toString());
        assertEquals(4, s.queuedPermits(), s.toString());
        s.release(4); // debt 1 first, then n0 (1) and y (2)
        assertTrue(n0.isGranted() && y.isGranted(), s.toString());
        assertFalse(z.isGranted(), s.toString());
        assertTrue(z.cancel());
        s.release(3);
        assertEquals(3, s.availablePermits(), s.toString());
    }
}
