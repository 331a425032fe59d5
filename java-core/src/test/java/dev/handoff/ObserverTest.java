// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The observers ({@code queueLength()}, {@code queuedPermits()}, {@code toString()}, and the state
 * of a waiting {@link Acquisition}) never take the internal lock and cost the same whatever the
 * queue length. Counts and a handshake, no clocks: the lock's stamp (one more at every lock and
 * unlock) shows whether anything took it.
 */
class ObserverTest {

    private static final Pattern QUEUED = Pattern.compile("queued=(\\d+)");

    private static int stamp(Semaphore s) {
        return s.core().internalLock().quietStamp();
    }

    @Test
    void observersOfAWaitingQueueNeverTakeTheLock() {
        Semaphore s = Semaphore.builder(4).maxQueueLength(1_000).build(); // bounded: counters kept lock-free too
        assertTrue(s.tryAcquire(4));
        List<Acquisition> waiting = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            waiting.add(s.acquireThen(1 + i % 4, () -> {}));
        }
        int before = stamp(s);
        for (int round = 0; round < 100; round++) {
            assertEquals(1_000, s.queueLength());
            assertEquals(2_500, s.queuedPermits()); // 250 × (1 + 2 + 3 + 4)
            assertTrue(s.toString().contains("queued=1000"), s::toString);
            Acquisition a = waiting.get(round * 7);
            assertFalse(a.isGranted());
            assertFalse(a.isClosed());
            assertEquals(null, a.failure());
            assertTrue(a.toString().contains("waiting"), a::toString);
        }
        assertEquals(before, stamp(s), "an observer took the internal lock");
        s.release(4); // and the lock is still the one the semaphore uses
        assertTrue(waiting.get(0).isGranted() && waiting.get(1).isGranted()); // 1 + 2; the third (3) gets 1 of 3
        assertEquals(998, s.queueLength());
        assertTrue(before != stamp(s), "the release did not take the lock: the stamp shows nothing");
    }

    /**
     * 100,000 waiters; a releaser grants them one by one in chunks of 1,000, and before each chunk
     * waits for one more reading, so that readings run while releases proceed. Each reading is
     * exact at some moment during the call: between the counts before and after the chunk it
     * overlapped, and never growing.
     */
    @Test
    void toStringAndQueueLengthWithOneHundredThousandWaitersReturnWhileReleasesProceed() throws Exception {
        int waiters = 100_000;
        int chunk = 1_000;
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        for (int i = 0; i < waiters; i++) {
            s.acquireThen(1, () -> {});
        }
        assertEquals(waiters, s.queueLength());
        SynchronousQueue<Integer> readings = new SynchronousQueue<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread releaser = new Thread(
                () -> {
                    try {
                        for (int done = 0; done < waiters; done += chunk) {
                            readings.take(); // one reading handed over, then the next chunk runs with the next reading
                            for (int i = 0; i < chunk; i++) {
                                s.release(1); // grants the head, which now holds the permit
                            }
                        }
                    } catch (Throwable t) {
                        failed.set(t);
                    }
                },
                "releaser");
        releaser.start();
        int last = waiters;
        int readingsTaken = 0;
        while (readingsTaken < waiters / chunk) {
            String text = s.toString();
            int length = s.queueLength();
            Matcher m = QUEUED.matcher(text);
            assertTrue(m.find(), text);
            int shown = Integer.parseInt(m.group(1));
            int lowest = waiters - readingsTaken * chunk; // chunk r starts only after reading r is handed over
            int highest = Math.min(waiters, waiters - (readingsTaken - 1) * chunk); // chunk r-1 may still be running
            assertTrue(shown <= last && shown >= lowest && shown <= highest, text + " after " + last);
            assertTrue(length <= shown && length >= lowest, length + " after " + text);
            last = length;
            assertTrue(readings.offer(readingsTaken, 30, TimeUnit.SECONDS), "the releaser stopped taking readings");
            readingsTaken++;
        }
        releaser.join(TimeUnit.SECONDS.toMillis(30));
        assertFalse(releaser.isAlive(), "releaser hangs");
        assertEquals(null, failed.get());
        assertEquals(0, s.queueLength());
        assertEquals(0, s.queuedPermits());
        assertTrue(s.toString().contains("queued=0"), s::toString);
    }
}
