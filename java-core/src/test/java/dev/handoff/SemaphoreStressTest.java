// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;

/**
 * Several threads, random weights, every face, random cancel, timeout and interrupt; 10^6
 * operations. Checks mutual exclusion by weight at every step (the permits held never exceed the
 * capacity) and that every permit is back at the end.
 */
class SemaphoreStressTest {

    private static final long CAPACITY = 16;
    private static final int THREADS = 4;
    private static final int OPERATIONS = Integer.getInteger("handoff.stress.operations", 1_000_000);

    @Test
    void randomOperationsOnEveryFaceLoseAndCreateNothing() throws Exception {
        Semaphore s = new Semaphore(CAPACITY);
        AtomicLong inUse = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        LongAdder done = new LongAdder();
        LongAdder interruptsSeen = new LongAdder();
        LongAdder cancelsWon = new LongAdder();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            long seed = 42 + t;
            Thread w = new Thread(
                    () -> {
                        try {
                            work(
                                    s,
                                    new SplittableRandom(seed),
                                    OPERATIONS / THREADS,
                                    inUse,
                                    done,
                                    interruptsSeen,
                                    cancelsWon);
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        }
                    },
                    "stress-" + t);
            workers.add(w);
            w.start();
        }
        Thread interrupter = new Thread(() -> {
            SplittableRandom r = new SplittableRandom(7);
            while (workers.stream().anyMatch(Thread::isAlive)) {
                workers.get(r.nextInt(THREADS)).interrupt();
                try {
                    Thread.sleep(0, 200_000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        interrupter.setDaemon(true);
        interrupter.start();
        for (Thread w : workers) {
            w.join(TimeUnit.MINUTES.toMillis(5));
            assertTrue(!w.isAlive(), "worker hung: " + s);
        }
        assertNull(failure.get(), () -> "worker failed: " + failure.get());
        assertEquals(OPERATIONS, done.sum());
        assertEquals(0, inUse.get());
        assertEquals(0, s.queueLength());
        assertEquals(CAPACITY, s.availablePermits(), "every permit is back");
        assertTrue(interruptsSeen.sum() > 0, "the interrupter reached the blocking paths");
        assertTrue(cancelsWon.sum() > 0, "cancellations were exercised");
    }

    private static void work(
            Semaphore s,
            SplittableRandom r,
            int ops,
            AtomicLong inUse,
            LongAdder done,
            LongAdder interruptsSeen,
            LongAdder cancelsWon)
            throws Exception {
        for (int i = 0; i < ops; i++) {
            long n = r.nextInt(4) == 0 ? 1 + r.nextInt((int) CAPACITY) : 1 + r.nextInt(3);
            boolean holding;
            switch (r.nextInt(6)) {
                case 0:
                case 1:
                    holding = s.tryAcquire(n);
                    break;
                case 2:
                    try {
                        s.acquireBlocking(n);
                        holding = true;
                    } catch (InterruptedException e) {
                        interruptsSeen.increment();
                        holding = false;
                    }
                    break;
                case 3:
                    try {
                        holding = s.tryAcquireBlocking(n, Duration.ofNanos(r.nextInt(50_000)));
                    } catch (InterruptedException e) {
                        interruptsSeen.increment();
                        holding = false;
                    }
                    break;
                case 4: {
                    CompletableFuture<Permits> f = s.acquireAsync(n);
                    if (r.nextBoolean() && f.cancel(false)) {
                        cancelsWon.increment();
                        holding = false;
                    } else {
                        f.join(); // not interruptible: the interrupter must not make us drop a grant
                        holding = true;
                    }
                    break;
                }
                default: {
                    CompletableFuture<Void> woken = new CompletableFuture<>();
                    Acquisition a = s.acquireThen(n, () -> woken.complete(null));
                    if (r.nextBoolean() && a.cancel()) {
                        cancelsWon.increment();
                        holding = false;
                    } else {
                        woken.join();
                        holding = a.isGranted();
                        assertTrue(holding, "woken without close must be granted");
                    }
                    break;
                }
            }
            Thread.interrupted(); // a late interrupt after a grant is kept in the flag; clear it
            if (holding) {
                long now = inUse.addAndGet(n);
                if (now > CAPACITY) {
                    throw new AssertionError("held " + now + " > capacity " + CAPACITY);
                }
                if (r.nextInt(8) == 0) {
                    Thread.yield();
                }
                inUse.addAndGet(-n);
                s.release(n);
            }
            done.increment();
        }
    }
}
