// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Mutex;
import dev.handoff.Permits;
import dev.handoff.RwLock;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.SemaphoreRejectedException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/** The operators one behaviour at a time: laziness, release on every ending, FIFO, weights, close. */
class ReactorSemaphoresTest {

    // ------------------------------------------------------------------ laziness

    @Test
    void nothingIsQueuedBeforeSubscription() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        Mono<Integer> mono = ReactorSemaphores.withPermits(s, 1, () -> Mono.just(1));
        Flux<Integer> flux = ReactorSemaphores.withPermitsMany(s, 1, () -> Flux.just(1, 2));
        Mono<Permits> handle = ReactorSemaphores.acquire(s, 1);
        assertEquals(0, s.queueLength(), "building the operators queued something");

        Disposable a = mono.subscribe();
        Disposable b = flux.subscribe();
        Disposable c = handle.subscribe();
        assertEquals(3, s.queueLength(), "each subscription joins the queue");
        a.dispose();
        b.dispose();
        c.dispose();
        assertEquals(0, s.queueLength());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void eachSubscriptionAcquiresAnew() {
        Semaphore s = new Semaphore(5);
        AtomicInteger bodies = new AtomicInteger();
        Mono<Long> seen = ReactorSemaphores.withPermits(s, 2, () -> {
            bodies.incrementAndGet();
            return Mono.fromCallable(s::availablePermits);
        });
        StepVerifier.create(seen).expectNext(3L).verifyComplete();
        StepVerifier.create(seen).expectNext(3L).verifyComplete();
        assertEquals(2, bodies.get());
        assertEquals(5, s.availablePermits());

        // Two live subscriptions hold twice.
        Mono<Object> forever = ReactorSemaphores.withPermits(s, 2, Mono::never);
        Disposable first = forever.subscribe();
        Disposable second = forever.subscribe();
        assertEquals(1, s.availablePermits());
        first.dispose();
        second.dispose();
        assertEquals(5, s.availablePermits());
    }

    // ------------------------------------------------------------------ release on every ending

    @Test
    void releasesOnComplete() {
        Semaphore s = new Semaphore(4);
        StepVerifier.create(ReactorSemaphores.withPermits(s, 3, () -> Mono.fromCallable(s::availablePermits)))
                .expectNext(1L)
                .verifyComplete();
        assertEquals(4, s.availablePermits());
        StepVerifier.create(ReactorSemaphores.withPermitsMany(
                        s, 3, () -> Flux.range(0, 3).map(i -> s.availablePermits())))
                .expectNext(1L, 1L, 1L)
                .verifyComplete();
        assertEquals(4, s.availablePermits());
    }

    @Test
    void valueOfMonoIsEmittedAfterTheRelease() {
        Semaphore s = new Semaphore(1);
        StepVerifier.create(ReactorSemaphores.withPermits(s, 1, () -> Mono.just("x"))
                        .map(x -> s.availablePermits()))
                .expectNext(1L)
                .verifyComplete();
    }

    @Test
    void releasesOnError() {
        Semaphore s = new Semaphore(2);
        StepVerifier.create(ReactorSemaphores.withPermits(s, 2, () -> Mono.error(new IOException("disk"))))
                .verifyErrorMessage("disk");
        assertEquals(2, s.availablePermits());
        StepVerifier.create(ReactorSemaphores.withPermitsMany(
                        s, 2, () -> Flux.concat(Flux.just(1), Flux.error(new IOException("net")))))
                .expectNext(1)
                .verifyErrorMessage("net");
        assertEquals(2, s.availablePermits());
    }

    @Test
    void releasesWhenTheBodySupplierThrowsOrReturnsNull() {
        Semaphore s = new Semaphore(2);
        StepVerifier.create(ReactorSemaphores.<String>withPermits(s, 1, () -> {
                    throw new IllegalStateException("no body");
                }))
                .verifyErrorMessage("no body");
        assertEquals(2, s.availablePermits());
        StepVerifier.create(ReactorSemaphores.<String>withPermits(s, 1, () -> null))
                .verifyError(NullPointerException.class);
        assertEquals(2, s.availablePermits());
        StepVerifier.create(ReactorSemaphores.<String>withPermitsMany(s, 1, () -> null))
                .verifyError(NullPointerException.class);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void releasesOnCancelOfTheBody() {
        Semaphore s = new Semaphore(3);
        StepVerifier.create(ReactorSemaphores.withPermits(s, 2, Mono::never))
                .expectSubscription()
                .then(() -> assertEquals(1, s.availablePermits()))
                .thenCancel()
                .verify();
        assertEquals(3, s.availablePermits());

        StepVerifier.create(ReactorSemaphores.withPermitsMany(s, 2, () -> Flux.range(0, 1000))
                        .take(2))
                .expectNext(0, 1)
                .verifyComplete();
        assertEquals(3, s.availablePermits());
    }

    @Test
    void cancelWhileWaitingWithdrawsTheWait() {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(2));
        AtomicInteger bodies = new AtomicInteger();
        Disposable waiting = ReactorSemaphores.withPermits(s, 2, () -> {
                    bodies.incrementAndGet();
                    return Mono.just(1);
                })
                .subscribe();
        assertEquals(1, s.queueLength());
        waiting.dispose();
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(3, s.availablePermits());
        assertEquals(0, bodies.get());
    }

    // ------------------------------------------------------------------ virtual time

    @Test
    void holdsWhileADelayedBodyRunsAndReleasesAfterIt() {
        Semaphore s = new Semaphore(5);
        StepVerifier.withVirtualTime(() -> ReactorSemaphores.withPermits(
                        s, 2, () -> Mono.delay(Duration.ofMinutes(5)).thenReturn("done")))
                .expectSubscription()
                .then(() -> assertEquals(3, s.availablePermits()))
                .thenAwait(Duration.ofMinutes(4))
                .then(() -> assertEquals(3, s.availablePermits()))
                .thenAwait(Duration.ofMinutes(1))
                .expectNext("done")
                .verifyComplete();
        assertEquals(5, s.availablePermits());
    }

    @Test
    void timeoutWhileWaitingLeavesNothingHeldNorQueued() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        StepVerifier.withVirtualTime(() ->
                        ReactorSemaphores.withPermits(s, 1, () -> Mono.just(1)).timeout(Duration.ofSeconds(30)))
                .expectSubscription()
                .then(() -> assertEquals(1, s.queueLength()))
                .thenAwait(Duration.ofSeconds(30))
                .verifyError(TimeoutException.class);
        assertEquals(0, s.queueLength());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void timeoutOfARunningBodyReleases() {
        Semaphore s = new Semaphore(2);
        StepVerifier.withVirtualTime(() -> ReactorSemaphores.withPermitsMany(
                                s,
                                2,
                                () -> Flux.interval(Duration.ofSeconds(1))
                                        .take(2)
                                        .concatWith(Flux.never()))
                        .timeout(Duration.ofSeconds(5)))
                .expectSubscription()
                .thenAwait(Duration.ofSeconds(2))
                .expectNext(0L, 1L)
                .then(() -> assertEquals(0, s.availablePermits()))
                .thenAwait(Duration.ofSeconds(4))
                .then(() -> assertEquals(0, s.availablePermits()))
                .thenAwait(Duration.ofSeconds(1))
                .verifyError(TimeoutException.class);
        assertEquals(2, s.availablePermits());
    }

    // ------------------------------------------------------------------ FIFO and weights

    @Test
    void servedInFifoOrderWithTheOtherFaces() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        List<String> order = new CopyOnWriteArrayList<>();
        CompletableFuture<Permits> first = s.acquireAsync(1);
        first.thenRun(() -> order.add("future 1"));
        Disposable mono = ReactorSemaphores.withPermits(
                        s, 1, () -> Mono.<Void>never().doOnSubscribe(x -> order.add("mono")))
                .subscribe();
        CompletableFuture<Permits> third = s.acquireAsync(1);
        third.thenRun(() -> order.add("future 3"));
        assertEquals(3, s.queueLength());

        s.release(1); // to the Java future at the head
        assertEquals(List.of("future 1"), order);
        s.release(1); // to the Mono behind it
        assertEquals(List.of("future 1", "mono"), order);
        mono.dispose(); // releases: the next future is served
        assertEquals(List.of("future 1", "mono", "future 3"), order);
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void weightsAndHeadOfLineBlocking() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(8));
        AtomicReference<Long> inside = new AtomicReference<>();
        Disposable heavy = ReactorSemaphores.withPermits(
                        s,
                        5,
                        () -> Mono.fromRunnable(() -> inside.set(s.availablePermits()))
                                .then(Mono.never()))
                .subscribe();
        assertEquals(1, s.queueLength());
        assertFalse(s.tryAcquire(1), "no barging past a waiting Mono");
        s.release(2); // 4 free: still short of 5
        assertEquals(null, inside.get());
        s.release(1); // 5: granted
        assertEquals(0L, inside.get());
        heavy.dispose();
        s.release(5);
        assertEquals(10, s.availablePermits());

        StepVerifier.create(ReactorSemaphores.withPermits(s, 0, () -> Mono.fromCallable(s::availablePermits)))
                .expectNext(10L)
                .verifyComplete();
        StepVerifier.create(ReactorSemaphores.withPermits(s, 10, () -> Mono.fromCallable(s::availablePermits)))
                .expectNext(0L)
                .verifyComplete();
        assertEquals(10, s.availablePermits());
    }

    // ------------------------------------------------------------------ failures

    @Test
    void closedSemaphoreFailsTheSubscriptionWithNothingHeld() {
        Semaphore s = new Semaphore(2);
        s.close();
        AtomicInteger bodies = new AtomicInteger();
        StepVerifier.create(ReactorSemaphores.withPermits(s, 1, () -> {
                    bodies.incrementAndGet();
                    return Mono.just(1);
                }))
                .verifyError(SemaphoreClosedException.class);
        StepVerifier.create(ReactorSemaphores.withPermitsMany(s, 1, () -> Flux.just(1)))
                .verifyError(SemaphoreClosedException.class);
        StepVerifier.create(ReactorSemaphores.acquire(s, 1)).verifyError(SemaphoreClosedException.class);
        assertEquals(0, bodies.get());
        assertEquals(2, s.availablePermits());
    }

    @Test
    void closeWhileWaitingFailsTheSubscription() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(1));
        StepVerifier.create(ReactorSemaphores.withPermits(s, 2, () -> Mono.just(1)))
                .expectSubscription()
                .then(() -> assertEquals(1, s.queueLength()))
                .then(s::close)
                .verifyError(SemaphoreClosedException.class);
        s.release(1);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void rejectedByALoadSheddingSemaphore() {
        Semaphore s = Semaphore.builder(1).maxQueueLength(0).build();
        assertTrue(s.tryAcquire(1));
        StepVerifier.create(ReactorSemaphores.withPermits(s, 1, () -> Mono.just(1)))
                .verifyError(SemaphoreRejectedException.class);
        assertEquals(0, s.queueLength());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void argumentErrorsAreThrownAtAssembly() {
        Semaphore s = new Semaphore(4);
        IllegalArgumentException negative = assertThrows(
                IllegalArgumentException.class, () -> ReactorSemaphores.withPermits(s, -1, () -> Mono.just(1)));
        assertEquals("withPermits(-1): the number of permits must not be negative", negative.getMessage());
        IllegalArgumentException tooMany = assertThrows(
                IllegalArgumentException.class, () -> ReactorSemaphores.withPermitsMany(s, 5, () -> Flux.just(1)));
        assertEquals("withPermitsMany(5): exceeds the capacity 4, so it could never be granted", tooMany.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ReactorSemaphores.acquire(s, 5));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withPermits(null, 1, () -> Mono.just(1)));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withPermits(s, 1, null));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withPermitsMany(s, 1, null));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.acquire(null, 1));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withLock(null, () -> Mono.just(1)));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withLock(new Mutex(), null));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.withReadLockMany(null, Flux::empty));
        assertThrows(NullPointerException.class, () -> ReactorSemaphores.writeLock(null));
        assertEquals(4, s.availablePermits());
        assertEquals(0, s.queueLength());
    }

    @Test
    void capacityLoweredBetweenAssemblyAndSubscriptionIsSignalled() {
        Semaphore s = new Semaphore(4);
        Mono<Integer> big = ReactorSemaphores.withPermits(s, 3, () -> Mono.just(1));
        s.setCapacity(2);
        StepVerifier.create(big).verifyError(IllegalArgumentException.class);
        assertEquals(2, s.availablePermits());
    }

    // ------------------------------------------------------------------ the Permits handle

    @Test
    void permitsHandleIsLazyAndReleaseIsIdempotent() {
        Semaphore s = new Semaphore(5);
        Mono<Permits> three = ReactorSemaphores.acquire(s, 3);
        assertEquals(5, s.availablePermits());
        Permits p = three.block(Duration.ofSeconds(5));
        assertEquals(3, p.permits());
        assertEquals(2, s.availablePermits());
        assertFalse(p.isReleased());
        assertTrue(p.release());
        assertFalse(p.release());
        p.close(); // close() is release(): a no-op now
        assertTrue(p.isReleased());
        assertEquals(5, s.availablePermits());
    }

    /** The handle delivered after a wait (the core's queue node) is a full {@code dev.handoff.Permits}. */
    @Test
    void permitsHandleDeliveredAfterAWaitClosesInTryWithResources() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(3));
        AtomicReference<Permits> got = new AtomicReference<>();
        ReactorSemaphores.acquire(s, 2).subscribe(got::set);
        assertEquals(1, s.queueLength());
        assertEquals(null, got.get());
        s.release(3); // grants the waiting subscription
        assertEquals(2, s.availablePermits());
        try (Permits held = got.get()) {
            assertEquals(2, held.permits());
            assertFalse(held.isReleased());
            assertEquals(2, s.availablePermits());
        }
        assertTrue(got.get().isReleased());
        assertFalse(got.get().release(), "closed once: a later release changes nothing");
        assertEquals(4, s.availablePermits());
    }

    /**
     * Permits given back behind the handle's back (a direct {@code release(n)}): the handle's
     * release refuses, changes nothing, and counts as done, so no cleanup path can over-release.
     */
    @Test
    void permitsHandleReleasedBehindItsBackRefusesOnce() {
        Semaphore s = new Semaphore(3);
        Permits p = ReactorSemaphores.acquire(s, 3).block(Duration.ofSeconds(5));
        s.release(3);
        assertEquals(3, s.availablePermits());
        assertThrows(IllegalStateException.class, p::release);
        assertTrue(p.isReleased());
        assertFalse(p.release());
        assertEquals(3, s.availablePermits());

        Mutex m = new Mutex();
        Permits lock = ReactorSemaphores.lock(m).block(Duration.ofSeconds(5));
        m.unlock();
        assertThrows(IllegalStateException.class, lock::close);
        assertFalse(m.isLocked());
        assertTrue(m.tryLock(), "the refused release did not unlock anything else");
        m.unlock();
    }

    @Test
    void permitsHandleCancelledWhileWaitingHoldsNothing() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        AtomicReference<Permits> got = new AtomicReference<>();
        Disposable d = ReactorSemaphores.acquire(s, 1).subscribe(got::set);
        assertEquals(1, s.queueLength());
        d.dispose();
        s.release(1);
        assertEquals(null, got.get());
        assertEquals(1, s.availablePermits());
    }

    @Test
    void permitsHandleGrantedBeforeRequestAndThenCancelledIsReleased() {
        Semaphore s = new Semaphore(2);
        StepVerifier.create(ReactorSemaphores.acquire(s, 2), 0) // granted at once, but no demand yet
                .expectSubscription()
                .then(() -> assertEquals(0, s.availablePermits()))
                .thenCancel()
                .verify();
        assertEquals(2, s.availablePermits());
    }

    // ------------------------------------------------------------------ Mutex and RwLock

    @Test
    void mutexFaces() {
        Mutex m = new Mutex();
        StepVerifier.create(ReactorSemaphores.withLock(m, () -> Mono.fromCallable(m::isLocked)))
                .expectNext(true)
                .verifyComplete();
        assertFalse(m.isLocked());
        StepVerifier.create(ReactorSemaphores.withLockMany(m, () -> Flux.just(m.isLocked(), m.isLocked())))
                .expectNext(true, true)
                .verifyComplete();
        assertFalse(m.isLocked());

        Permits lock = ReactorSemaphores.lock(m).block(Duration.ofSeconds(5));
        assertEquals(1, lock.permits());
        assertTrue(m.isLocked());
        List<String> order = new CopyOnWriteArrayList<>();
        Disposable waiting = ReactorSemaphores.withLock(m, () -> Mono.fromRunnable(() -> order.add("second")))
                .subscribe();
        assertEquals(1, m.queueLength());
        lock.release();
        assertEquals(List.of("second"), order);
        assertFalse(m.isLocked());
        waiting.dispose();

        assertTrue(m.tryLock());
        Disposable cancelled = ReactorSemaphores.withLock(m, () -> Mono.just(1)).subscribe();
        cancelled.dispose();
        assertEquals(0, m.queueLength());
        m.unlock();
        assertFalse(m.isLocked());
    }

    @Test
    void rwLockFaces() {
        RwLock rw = new RwLock(4);
        Disposable reader1 = ReactorSemaphores.withReadLock(rw, Mono::never).subscribe();
        Disposable reader2 = ReactorSemaphores.withReadLockMany(rw, Flux::never).subscribe();
        assertEquals(2, rw.readLockCount());
        AtomicReference<Boolean> writing = new AtomicReference<>();
        Disposable writer = ReactorSemaphores.withWriteLock(
                        rw, () -> Mono.fromRunnable(() -> writing.set(rw.isWriteLocked())))
                .subscribe();
        assertEquals(1, rw.queueLength());
        assertFalse(rw.tryReadLock(), "a waiting writer blocks later readers");
        reader1.dispose();
        assertEquals(null, writing.get());
        reader2.dispose();
        assertEquals(true, writing.get());
        assertFalse(rw.isWriteLocked());
        writer.dispose();

        StepVerifier.create(ReactorSemaphores.withWriteLockMany(rw, () -> Flux.just(rw.isWriteLocked())))
                .expectNext(true)
                .verifyComplete();
        Permits write = ReactorSemaphores.writeLock(rw).block(Duration.ofSeconds(5));
        assertEquals(4, write.permits());
        assertTrue(rw.isWriteLocked());
        assertTrue(write.release());
        Permits read = ReactorSemaphores.readLock(rw).block(Duration.ofSeconds(5));
        assertEquals(1, rw.readLockCount());
        read.release();
        assertEquals(0, rw.readLockCount());
        assertTrue(rw.tryWriteLock());
        rw.writeUnlock();
    }
}
