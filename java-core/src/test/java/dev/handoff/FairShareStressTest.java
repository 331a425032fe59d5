// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;

/**
 * Many threads on a few keys through every face, with cancellation, timeouts, resizes and caps:
 * no permit is lost or created, no key's cap is ever exceeded, every waiter settles, and once all is
 * released the semaphore is whole again and keeps no key.
 */
class FairShareStressTest {

    private static final int KEYS = 4;
    private static final long CAP = 3;

    @Test
    void everyFaceTogetherLosesNothing() throws Exception {
        FairShareSemaphore<Integer> s = FairShareSemaphore.<Integer>builder(6)
                .share(k -> 1 + k)
                .maxPermitsPerKey(CAP)
                .build();
        AtomicLongArray held = new AtomicLongArray(KEYS); // what the test itself believes each key holds
        AtomicLong violations = new AtomicLong();
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        int threads = 6;
        int rounds = 3_000;
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            Thread t = new Thread(() -> {
                ThreadLocalRandom r = ThreadLocalRandom.current();
                try {
                    for (int i = 0; i < rounds; i++) {
                        int key = r.nextInt(KEYS);
                        long n = 1 + r.nextInt((int) CAP);
                        boolean got;
                        switch (r.nextInt(5)) {
                            case 0:
                                got = s.tryAcquire(key, n);
                                break;
                            case 1:
                                try (Permits p = s.acquireBlocking(key, n)) {
                                    check(s, held, key, n, violations);
                                }
                                got = false;
                                break;
                            case 2:
                                got = s.tryAcquireBlocking(key, n, Duration.ofNanos(r.nextInt(200_000)));
                                break;
                            case 3: {
                                CompletableFuture<Permits> f = s.acquireAsync(key, n);
                                if (r.nextBoolean() && f.cancel(false)) {
                                    got = false;
                                } else {
                                    Permits p = f.get(30, TimeUnit.SECONDS);
                                    check(s, held, key, n, violations);
                                    p.release();
                                    got = false;
                                }
                                break;
                            }
                            default: {
                                CompletableFuture<Void> woke = new CompletableFuture<>();
                                Acquisition a = s.acquireThen(key, n, () -> woke.complete(null));
                                if (r.nextBoolean() && a.cancel()) {
                                    got = false;
                                } else {
                                    woke.get(30, TimeUnit.SECONDS);
                                    got = a.isGranted();
                                }
                                break;
                            }
                        }
                        if (got) {
                            check(s, held, key, n, violations);
                            s.release(key, n);
                        }
                        if (i % 500 == 0 && r.nextInt(threads) == 0) {
                            s.addCapacity(1); // grows (grants in fair order), then shrinks with debt
                            s.addCapacity(-1);
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            workers.add(t);
            t.start();
        }
        for (Thread t : workers) {
            t.join(120_000);
        }
        assertTrue(errors.isEmpty(), () -> "errors: " + errors);
        assertEquals(0, violations.get(), "a key held more than its cap");
        assertEquals(0, s.queueLength());
        assertEquals(0, s.activeKeys());
        assertEquals(s.capacity(), s.availablePermits());
        s.closeAsync().get(10, TimeUnit.SECONDS);
    }

    /** While key holds n more: its held permits never exceed the cap. */
    private static void check(
            FairShareSemaphore<Integer> s, AtomicLongArray held, int key, long n, AtomicLong violations) {
        long now = held.addAndGet(key, n);
        if (now > CAP || s.heldPermits(key) > CAP) {
            violations.incrementAndGet();
        }
        held.addAndGet(key, -n);
    }
}
