// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;

/**
 * Why {@link ReactorSemaphores} exists: the two ways {@code Mono.fromFuture(semaphore.acquireAsync(n))}
 * leaks permits. These tests assert the leaks; they pass because the naive pattern is broken.
 */
class NaiveFromFutureTest {

    @Test
    void theFutureJoinsTheQueueWhenTheMonoIsBuilt() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));

        Mono<Permits> naive = Mono.fromFuture(s.acquireAsync(1)); // built, never subscribed
        assertEquals(1, s.queueLength(), "queued before anyone subscribed");

        s.release(1); // the permit goes to the orphaned future: held by nobody
        assertEquals(0, s.availablePermits());
        assertEquals(1, s.capacity());
        naive.hashCode(); // (the Mono is still unused)

        Mono<Integer> lazy = ReactorSemaphores.withPermits(new Semaphore(1), 1, () -> Mono.just(1));
        assertEquals(1, lazy.block()); // the right call: nothing happens until subscribe
    }

    /**
     * The cancel lands just as the grant does. On real threads this interleaving is rare and
     * timing-dependent (a loop of 10^5 rounds saw anywhere from 0 to hundreds of leaks from run to
     * run), so it is forced here: the subscriber cancels from a dependent of the acquisition's
     * future, which runs at the grant before the {@code Mono}'s own callback ({@code
     * CompletableFuture} runs its dependents last-registered first). The future's {@code cancel}
     * then returns {@code false} — the grant won — and the cancelled {@code Mono} drops it.
     */
    @Test
    void aCancelRacingTheGrantLeaks() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        CompletableFuture<Permits> acquisition = s.acquireAsync(1);
        Mono<Void> naive = Mono.fromFuture(acquisition)
                .flatMap(permits -> Mono.<Void>fromRunnable(permits::release)); // "the work, then release"
        Disposable subscription = naive.subscribe();
        acquisition.whenComplete((granted, failure) -> subscription.dispose());

        s.release(1);
        assertTrue(acquisition.isDone() && !acquisition.isCompletedExceptionally(), "the grant won");
        assertEquals(0, s.availablePermits(), "the permit is held by nobody");
        assertEquals(0, s.queueLength());
    }

    /** The same moment with the library: the subscription is cancelled from inside the grant. */
    @Test
    void theLibraryReleasesAGrantCancelledAsItLands() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicReference<Disposable> subscription = new AtomicReference<>();
        AtomicInteger bodies = new AtomicInteger();
        // A Java waiter queued first, whose grant callback cancels the Mono behind it just as the
        // Mono's own grant is about to land (the callback releases, which grants the Mono).
        CompletableFuture<Permits> first = s.acquireAsync(1);
        subscription.set(ReactorSemaphores.withPermits(s, 1, () -> {
                    bodies.incrementAndGet();
                    return Mono.never();
                })
                .subscribe());
        first.thenAccept(permits -> {
            permits.release(); // grants the Mono ...
            subscription.get().dispose(); // ... which is cancelled at once
        });
        s.release(1);
        assertEquals(1, s.availablePermits(), "nothing held after the cancel");
        assertEquals(0, s.queueLength());
        assertTrue(bodies.get() <= 1);
    }
}
