// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * A subscriber's cancel racing the grant, on real threads, 10^5 rounds per face. Each round: the
 * semaphore's last free permit is held by the test; a subscription waits for it; then one thread
 * releases (the grant) while the other disposes (the cancel). Whichever wins, the round must end
 * with the permit back and nobody queued.
 *
 * <p>A bystander holds one permit for the whole test, so a double release is not refused by the
 * semaphore as an over-release: it would show up as one permit too many.
 */
class CancelRacingGrantTest {

    static final int ROUNDS = 100_000;

    private final Semaphore semaphore = new Semaphore(2);
    private Racer racer;

    @BeforeEach
    void start() {
        assertTrue(semaphore.tryAcquire(1)); // the bystander
        racer = new Racer();
    }

    @AfterEach
    void stop() throws InterruptedException {
        racer.close();
    }

    private void assertRoundClean(int round, String face) {
        if (semaphore.availablePermits() != 1 || semaphore.queueLength() != 0) {
            throw new AssertionError(face + ", round " + round + ": " + semaphore
                    + " (expected 1 available: the bystander holds the other)");
        }
    }

    @Test
    void withPermits() {
        AtomicInteger bodies = new AtomicInteger();
        int granted = 0;
        for (int round = 0; round < ROUNDS; round++) {
            assertTrue(semaphore.tryAcquire(1));
            // Odd rounds: a body that never ends, so a late cancel goes through usingWhen's cancel path.
            Mono<Integer> body = round % 2 == 0 ? Mono.just(round) : Mono.never();
            Disposable subscription = ReactorSemaphores.withPermits(semaphore, 1, () -> {
                        bodies.incrementAndGet();
                        return body;
                    })
                    .subscribe();
            assertEquals(1, semaphore.queueLength());
            int before = bodies.get();
            if (round % 4 < 2) {
                racer.race(() -> semaphore.release(1), subscription::dispose);
            } else {
                racer.race(subscription::dispose, () -> semaphore.release(1));
            }
            granted += bodies.get() - before;
            assertRoundClean(round, "withPermits");
        }
        assertEquals(2, semaphore.capacity());
        System.out.printf("withPermits: the grant reached the body in %d of %d rounds%n", granted, ROUNDS);
    }

    @Test
    void withPermitsMany() {
        AtomicInteger bodies = new AtomicInteger();
        int granted = 0;
        for (int round = 0; round < ROUNDS; round++) {
            assertTrue(semaphore.tryAcquire(1));
            Flux<Integer> body = round % 2 == 0 ? Flux.range(0, 3) : Flux.never();
            Disposable subscription = ReactorSemaphores.withPermitsMany(semaphore, 1, () -> {
                        bodies.incrementAndGet();
                        return body;
                    })
                    .subscribe();
            int before = bodies.get();
            if (round % 4 < 2) { // which side runs on the partner thread alternates, so both orders win often
                racer.race(subscription::dispose, () -> semaphore.release(1));
            } else {
                racer.race(() -> semaphore.release(1), subscription::dispose);
            }
            granted += bodies.get() - before;
            assertRoundClean(round, "withPermitsMany");
        }
        System.out.printf("withPermitsMany: the grant reached the body in %d of %d rounds%n", granted, ROUNDS);
    }

    /**
     * The handle, taken by a plain subscriber that keeps whatever {@code onNext} hands it (as the
     * Reactive Streams spec lets a subscriber do after it cancelled): once delivered, the handle is
     * the subscriber's; undelivered, the library must release it.
     */
    @Test
    void permitsHandle() {
        int delivered = 0;
        for (int round = 0; round < ROUNDS; round++) {
            assertTrue(semaphore.tryAcquire(1));
            KeepingSubscriber subscriber = new KeepingSubscriber();
            ReactorSemaphores.acquire(semaphore, 1).subscribe(subscriber);
            if (round % 2 == 0) {
                racer.race(() -> semaphore.release(1), subscriber::cancel);
            } else {
                racer.race(subscriber::cancel, () -> semaphore.release(1));
            }
            Permits permits = subscriber.received.get();
            if (permits != null) {
                delivered++;
                assertTrue(permits.release(), "a delivered handle was released by the library too");
            }
            assertRoundClean(round, "acquire");
        }
        System.out.printf("acquire: the handle was delivered in %d of %d rounds%n", delivered, ROUNDS);
    }

    /** Requests one, keeps every value it is given, cancels on demand. */
    private static final class KeepingSubscriber implements CoreSubscriber<Permits> {
        final AtomicReference<Permits> received = new AtomicReference<>();
        private volatile Subscription subscription;

        @Override
        public void onSubscribe(Subscription s) {
            subscription = s;
            s.request(1);
        }

        @Override
        public void onNext(Permits permits) {
            received.set(permits);
        }

        @Override
        public void onError(Throwable t) {
            throw new AssertionError("unexpected", t);
        }

        @Override
        public void onComplete() {}

        void cancel() {
            subscription.cancel();
        }
    }
}
