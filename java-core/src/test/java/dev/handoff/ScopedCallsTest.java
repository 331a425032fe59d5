// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * The scoped calls: {@code withPermitsBlocking} and {@code tryWithPermitsBlocking} on the
 * semaphore, {@code withPermitsAsync} and {@code withPermitsBlocking} on the fair share. Each
 * releases exactly once however the body ends; a wait that fails holds nothing and runs no body.
 */
class ScopedCallsTest {

    @Test
    void withPermitsBlockingHoldsThePermitsWhileTheBodyRuns() throws Exception {
        Semaphore s = new Semaphore(5);
        String r = s.withPermitsBlocking(3, () -> {
            assertEquals(2, s.availablePermits());
            return "done";
        });
        assertEquals("done", r);
        assertEquals(5, s.availablePermits());
    }

    @Test
    void withPermitsBlockingReleasesWhenTheBodyThrows() {
        Semaphore s = new Semaphore(5);
        IOException failure = new IOException("send failed");
        IOException thrown = assertThrows(
                IOException.class,
                () -> s.withPermitsBlocking(2, () -> {
                    throw failure;
                }));
        assertSame(failure, thrown);
        assertEquals(5, s.availablePermits());
    }

    @Test
    void withPermitsBlockingRefusesBadInputAndAClosedSemaphoreWithoutRunningTheBody() {
        Semaphore s = new Semaphore(5);
        AtomicBoolean ran = new AtomicBoolean();
        IllegalArgumentException big =
                assertThrows(IllegalArgumentException.class, () -> s.withPermitsBlocking(6, () -> ran.getAndSet(true)));
        assertTrue(big.getMessage().startsWith("withPermitsBlocking(6): exceeds the capacity 5"), big.getMessage());
        IllegalArgumentException negative = assertThrows(
                IllegalArgumentException.class, () -> s.withPermitsBlocking(-1, () -> ran.getAndSet(true)));
        assertTrue(negative.getMessage().startsWith("withPermitsBlocking(-1)"), negative.getMessage());
        assertThrows(NullPointerException.class, () -> s.withPermitsBlocking(1, null));
        s.close();
        assertThrows(SemaphoreClosedException.class, () -> s.withPermitsBlocking(1, () -> ran.getAndSet(true)));
        assertFalse(ran.get());
        assertEquals(5, s.availablePermits());
    }

    @Test
    void withPermitsBlockingInterruptedBeforeTheGrantHoldsNothing() {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        AtomicBoolean ran = new AtomicBoolean();
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> s.withPermitsBlocking(1, () -> ran.getAndSet(true)));
        assertFalse(ran.get());
        assertEquals(0, s.queueLength());
        s.release(2);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void tryWithPermitsBlockingRunsTheBodyOnlyIfThePermitsCame() throws Exception {
        Semaphore s = new Semaphore(4);
        assertEquals(Optional.of(7), s.tryWithPermitsBlocking(4, Duration.ZERO, () -> {
            assertEquals(0, s.availablePermits());
            return 7;
        }));
        assertEquals(4, s.availablePermits());

        assertTrue(s.tryAcquire(1));
        AtomicBoolean ran = new AtomicBoolean();
        assertEquals(Optional.empty(), s.tryWithPermitsBlocking(4, Duration.ofMillis(1), () -> ran.getAndSet(true)));
        assertFalse(ran.get());
        assertEquals(0, s.queueLength());
        assertEquals(3, s.availablePermits());
        s.release(1);

        assertThrows(
                IllegalStateException.class,
                () -> s.tryWithPermitsBlocking(2, Duration.ZERO, () -> {
                    throw new IllegalStateException("body");
                }));
        assertEquals(4, s.availablePermits());
        IllegalArgumentException big =
                assertThrows(IllegalArgumentException.class, () -> s.tryWithPermitsBlocking(5, Duration.ZERO, () -> 1));
        assertTrue(big.getMessage().startsWith("tryWithPermitsBlocking(5)"), big.getMessage());
        assertThrows(NullPointerException.class, () -> s.tryWithPermitsBlocking(1, null, () -> 1));
    }

    @Test
    void fairShareWithPermitsAsyncReleasesToTheKeyWhenTheStageCompletes() {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(4).build();
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = pool.withPermitsAsync("a", 3, () -> work);
        assertEquals(3, pool.heldPermits("a"));
        assertFalse(result.isDone());
        work.complete("ok");
        assertEquals("ok", result.join());
        assertEquals(0, pool.heldPermits("a"));
        assertEquals(4, pool.availablePermits());

        CompletableFuture<String> failed =
                pool.withPermitsAsync("a", 1, () -> CompletableFuture.failedFuture(new IOException("down")));
        CompletionException e = assertThrows(CompletionException.class, failed::join);
        assertTrue(e.getCause() instanceof IOException, e::toString);
        assertEquals(0, pool.heldPermits("a"));
    }

    @Test
    void fairShareWithPermitsAsyncCancelledBeforeTheGrantWithdrawsTheWait() {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(2).build();
        assertTrue(pool.tryAcquire("a", 2));
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<String> waiting = pool.withPermitsAsync("b", 1, () -> {
            ran.set(true);
            return CompletableFuture.completedFuture("b");
        });
        assertEquals(1, pool.queueLength("b"));
        assertTrue(waiting.cancel(false));
        assertEquals(0, pool.queueLength());
        pool.release("a", 2);
        assertFalse(ran.get());
        assertEquals(2, pool.availablePermits());
        assertEquals(0, pool.heldPermits("b"));
    }

    @Test
    void fairShareScopedCallsRefuseBadInputNamingTheCall() {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(2).build();
        IllegalArgumentException big = assertThrows(
                IllegalArgumentException.class,
                () -> pool.withPermitsAsync("a", 3, () -> CompletableFuture.completedFuture(1)));
        assertTrue(big.getMessage().startsWith("withPermitsAsync(a, 3): exceeds the capacity 2"), big.getMessage());
        assertThrows(
                NullPointerException.class,
                () -> pool.withPermitsAsync(null, 1, () -> CompletableFuture.completedFuture(1)));
        assertThrows(NullPointerException.class, () -> pool.withPermitsAsync("a", 1, null));
        IllegalArgumentException blocking =
                assertThrows(IllegalArgumentException.class, () -> pool.withPermitsBlocking("a", 3, () -> 1));
        assertTrue(blocking.getMessage().startsWith("withPermitsBlocking(a, 3)"), blocking.getMessage());
        assertEquals(2, pool.availablePermits());
        assertEquals(0, pool.queueLength());
    }

    @Test
    void fairShareWithPermitsBlockingReleasesHoweverTheBodyEnds() throws Exception {
        FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(3).build();
        assertEquals(2L, pool.withPermitsBlocking("a", 2, () -> pool.heldPermits("a")));
        assertEquals(0, pool.heldPermits("a"));
        assertThrows(
                IOException.class,
                () -> pool.withPermitsBlocking("a", 3, () -> {
                    throw new IOException("failed");
                }));
        assertEquals(0, pool.heldPermits("a"));
        assertEquals(3, pool.availablePermits());
    }
}
