// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Every row of CONTRACT.md section 1 and section 4 that needs no second thread. */
class SemaphoreContractTest {

    /** Asserts that {@code call} throws {@code type} with a message containing every fragment, and that the state is unchanged. */
    private static <T extends Throwable> void rejects(
            Semaphore s, Class<T> type, Executable call, String... fragments) {
        String before = s.toString();
        T e = assertThrows(type, call);
        assertNotNull(e.getMessage());
        for (String f : fragments) {
            assertTrue(e.getMessage().contains(f), () -> "message '" + e.getMessage() + "' lacks '" + f + "'");
        }
        assertEquals(before, s.toString(), "state changed by a rejected call");
    }

    @Test
    void constructorRejectsNegativeAndTooLargeCapacity() {
        IllegalArgumentException neg = assertThrows(IllegalArgumentException.class, () -> new Semaphore(-1));
        assertTrue(neg.getMessage().contains("new Semaphore(-1)"));
        assertTrue(neg.getMessage().contains(String.valueOf(Semaphore.MAX_PERMITS)));
        IllegalArgumentException big =
                assertThrows(IllegalArgumentException.class, () -> new Semaphore(Semaphore.MAX_PERMITS + 1));
        assertTrue(big.getMessage().contains(String.valueOf(Semaphore.MAX_PERMITS + 1)));
        assertTrue(Semaphore.MAX_PERMITS >= 1L << 56); // the contract's floor
        Semaphore max = new Semaphore(Semaphore.MAX_PERMITS);
        assertEquals(Semaphore.MAX_PERMITS, max.availablePermits());
        assertTrue(max.tryAcquire(Semaphore.MAX_PERMITS));
        assertEquals(0, max.availablePermits());
        max.release(Semaphore.MAX_PERMITS);
        assertEquals(Semaphore.MAX_PERMITS, max.availablePermits());
    }

    @Test
    void newSemaphoreHasAllPermitsFree() {
        Semaphore s = new Semaphore(16);
        assertEquals(16, s.capacity());
        assertEquals(16, s.availablePermits());
        assertEquals(0, s.queueLength());
        assertFalse(s.isClosed());
        assertEquals("Semaphore[capacity=16, available=16, queued=0, closed=false]", s.toString());
    }

    @Test
    void zeroCapacityGrantsOnlyZero() {
        Semaphore s = new Semaphore(0);
        assertTrue(s.tryAcquire(0));
        assertFalse(s.tryAcquire(1));
        rejects(s, IllegalArgumentException.class, () -> s.acquireThen(1, () -> {}), "acquireThen(1)", "capacity 0");
    }

    @Test
    void tryAcquireChecksInContractOrder() {
        Semaphore s = new Semaphore(4);
        rejects(s, IllegalArgumentException.class, () -> s.tryAcquire(-1), "tryAcquire(-1)", "negative");
        assertTrue(s.tryAcquire(0));
        assertFalse(s.tryAcquire(5), "n > N is false, not an exception");
        assertEquals(4, s.availablePermits());
        assertTrue(s.tryAcquire(4));
        assertFalse(s.tryAcquire(1));
        assertTrue(s.tryAcquire(0), "n == 0 succeeds even with nothing free");
        s.close();
        assertFalse(s.tryAcquire(0), "closed is checked before n == 0");
        rejects(s, IllegalArgumentException.class, () -> s.tryAcquire(-3), "tryAcquire(-3)");
    }

    @Test
    void tryAcquireZeroSucceedsWhileOthersWait() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        Acquisition waiting = s.acquireThen(1, () -> {});
        assertTrue(s.tryAcquire(0));
        Acquisition zero = s.acquireThen(0, () -> {});
        assertTrue(zero.isGranted(), "n == 0 is granted at once even with a queue");
        assertEquals(1, s.queueLength());
        assertTrue(waiting.cancel());
        s.release(1);
        assertEquals(1, s.availablePermits());
    }

    @Test
    void acquireChecksInContractOrder() {
        Semaphore s = new Semaphore(16);
        rejects(s, IllegalArgumentException.class, () -> s.acquireThen(-1, null), "acquireThen(-1)", "negative");
        rejects(s, NullPointerException.class, () -> s.acquireThen(17, null), "acquireThen(17, null)", "waker");
        RecordingWaker w = new RecordingWaker();
        rejects(
                s,
                IllegalArgumentException.class,
                () -> s.acquireThen(17, w),
                "acquireThen(17): exceeds the capacity 16, so it could never be granted");
        assertEquals(0, w.claims.get() + w.wakes.get(), "waker not called for an impossible weight");
        s.close();
        rejects(s, IllegalArgumentException.class, () -> s.acquireThen(17, w), "acquireThen(17)");
        Acquisition closed = s.acquireThen(0, w);
        assertTrue(closed.isClosed(), "closed is checked before n == 0");
        assertEquals(1, w.wakes.get());
        assertEquals(0, w.claims.get(), "close wakes without claim");
    }

    @Test
    void acquireGrantedAtOnceSettlesThroughTheWakerBeforeReturning() {
        Semaphore s = new Semaphore(8);
        RecordingWaker w = new RecordingWaker();
        Acquisition a = s.acquireThen(3, w);
        assertTrue(a.isGranted());
        assertFalse(a.isClosed());
        assertEquals(3, a.permits());
        assertEquals(1, w.claims.get());
        assertEquals(1, w.wakes.get());
        assertSame(Thread.currentThread(), w.wokenOn);
        assertFalse(a.cancel(), "cancel of a granted acquisition changes nothing");
        assertEquals(5, s.availablePermits());
        s.release(3);
        assertEquals(8, s.availablePermits());
        assertEquals("Acquisition[permits=3, granted]", a.toString());
    }

    @Test
    void acquireDeclinedAtOnceHoldsNothing() {
        Semaphore s = new Semaphore(8);
        RecordingWaker w = new RecordingWaker();
        w.declineClaim = true;
        Acquisition a = s.acquireThen(3, w);
        assertFalse(a.isGranted());
        assertFalse(a.isClosed());
        assertEquals(0, w.wakes.get());
        assertEquals(8, s.availablePermits());
        assertFalse(a.cancel());
        assertEquals("Acquisition[permits=3, cancelled]", a.toString());
    }

    @Test
    void acquireOnClosedSemaphoreIsClosedAndWoken() {
        Semaphore s = new Semaphore(2);
        s.close();
        RecordingWaker w = new RecordingWaker();
        Acquisition a = s.acquireThen(1, w);
        assertTrue(a.isClosed());
        assertFalse(a.isGranted());
        assertEquals(1, w.wakes.get());
        assertFalse(a.cancel());
        assertEquals("Acquisition[permits=1, closed]", a.toString());
    }

    @Test
    void releaseRejectsNegativeAndOverRelease() {
        Semaphore s = new Semaphore(16);
        rejects(s, IllegalArgumentException.class, () -> s.release(-2), "release(-2)", "negative");
        rejects(s, IllegalStateException.class, () -> s.release(1), "release(1)", "0 permits held", "capacity 16");
        assertTrue(s.tryAcquire(5));
        rejects(s, IllegalStateException.class, () -> s.release(6), "release(6)", "5 permits held");
        s.release(0);
        assertEquals(11, s.availablePermits());
        s.release(5);
        assertEquals(16, s.availablePermits());
    }

    @Test
    void overReleaseCountsPermitsHandedToTheWaitingHeadAsNotHeld() {
        Semaphore s = new Semaphore(10);
        assertTrue(s.tryAcquire(7)); // held 7, free 3
        Acquisition head = s.acquireThen(5, () -> {}); // takes the 3 free as a partial assignment
        assertEquals(0, s.availablePermits());
        rejects(s, IllegalStateException.class, () -> s.release(8), "release(8)", "7 permits held");
        s.release(2); // completes the head
        assertTrue(head.isGranted());
        s.release(5);
        s.release(5);
        assertEquals(10, s.availablePermits());
    }

    @Test
    void acquireAsyncArgumentErrorsAreThrownNotPutInTheFuture() {
        Semaphore s = new Semaphore(4);
        rejects(s, IllegalArgumentException.class, () -> s.acquireAsync(-1), "acquireAsync(-1)");
        rejects(s, IllegalArgumentException.class, () -> s.acquireAsync(5), "acquireAsync(5): exceeds the capacity 4");
    }

    @Test
    void acquireAsyncCompletesAtOnceOrOnRelease() throws Exception {
        Semaphore s = new Semaphore(4);
        CompletableFuture<Permits> now = s.acquireAsync(3);
        assertTrue(now.isDone());
        CompletableFuture<Permits> later = s.acquireAsync(2);
        assertFalse(later.isDone());
        assertEquals(1, s.queueLength());
        s.release(3);
        later.get(10, TimeUnit.SECONDS);
        assertEquals(2, s.availablePermits());
    }

    @Test
    void acquireAsyncOnClosedFailsWithSemaphoreClosedException() {
        Semaphore s = new Semaphore(1);
        s.close();
        CompletableFuture<Permits> f = s.acquireAsync(1);
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(10, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof SemaphoreClosedException);
        assertTrue(e.getCause().getMessage().contains("acquireAsync(1)"));
    }

    @Test
    void asyncFutureCancelWithdrawsAndReturnsPartialPermits() {
        Semaphore s = new Semaphore(4);
        assertTrue(s.tryAcquire(3));
        CompletableFuture<Permits> f = s.acquireAsync(3); // partially served: 1 of 3
        CompletableFuture<Permits> behind = s.acquireAsync(1);
        assertEquals(0, s.availablePermits());
        assertTrue(f.cancel(false));
        assertTrue(f.isCancelled());
        assertTrue(behind.isDone(), "the partial permit went on to the waiter behind");
        assertTrue(f.cancel(false), "as for any CompletableFuture, cancel of a cancelled future is true");
        s.release(1);
        s.release(3);
        assertEquals(4, s.availablePermits());
    }

    @Test
    void asyncFutureCancelAfterGrantReturnsFalseAndKeepsThePermits() {
        Semaphore s = new Semaphore(1);
        assertTrue(s.tryAcquire(1));
        CompletableFuture<Permits> f = s.acquireAsync(1);
        s.release(1);
        assertFalse(f.cancel(true));
        assertTrue(f.isDone());
        assertFalse(f.isCancelled());
        assertEquals(0, s.availablePermits());
        s.release(1);
    }

    @Test
    void asyncFutureCompletedByTheUserWithdrawsTheWait() throws Exception {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(2));
        CompletableFuture<Permits> timedOut = s.acquireAsync(1).orTimeout(1, TimeUnit.MILLISECONDS);
        assertThrows(ExecutionException.class, () -> timedOut.get(10, TimeUnit.SECONDS));
        CompletableFuture<Permits> failed = s.acquireAsync(2);
        assertTrue(failed.completeExceptionally(new RuntimeException("gave up")));
        CompletableFuture<Permits> byHand = s.acquireAsync(1);
        assertThrows(UnsupportedOperationException.class, () -> byHand.complete(null));
        assertThrows(UnsupportedOperationException.class, () -> byHand.completeOnTimeout(null, 1, TimeUnit.SECONDS));
        assertFalse(byHand.isDone(), "a refused complete changes nothing");
        assertTrue(byHand.cancel(false));
        waitUntil(() -> s.queueLength() == 0);
        CompletableFuture<Permits> waiting = s.acquireAsync(1);
        assertThrows(UnsupportedOperationException.class, () -> waiting.obtrudeValue(null));
        assertThrows(UnsupportedOperationException.class, () -> waiting.obtrudeException(new RuntimeException()));
        assertThrows(UnsupportedOperationException.class, () -> waiting.completeAsync(() -> null));
        assertFalse(waiting.isDone());
        assertTrue(waiting.cancel(false));
        s.release(2);
        assertEquals(2, s.availablePermits(), "no withdrawn future took permits");
    }

    @Test
    void acquireBlockingAndTimedTryAcquireCheckArguments() {
        Semaphore s = new Semaphore(3);
        rejects(s, IllegalArgumentException.class, () -> s.acquireBlocking(-1), "acquireBlocking(-1)");
        rejects(
                s,
                IllegalArgumentException.class,
                () -> s.acquireBlocking(4),
                "acquireBlocking(4): exceeds the capacity 3");
        rejects(
                s,
                IllegalArgumentException.class,
                () -> s.tryAcquireBlocking(-1, Duration.ZERO),
                "tryAcquireBlocking(-1)");
        rejects(s, NullPointerException.class, () -> s.tryAcquireBlocking(1, null), "tryAcquireBlocking(1, null)");
        rejects(
                s,
                IllegalArgumentException.class,
                () -> s.tryAcquireBlocking(4, Duration.ofSeconds(1)),
                "tryAcquireBlocking(4)",
                "capacity 3");
    }

    @Test
    void timedTryAcquireWithoutWaiting() throws InterruptedException {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquireBlocking(2, Duration.ZERO));
        assertFalse(s.tryAcquireBlocking(1, Duration.ZERO));
        assertFalse(s.tryAcquireBlocking(1, Duration.ofNanos(-5)));
        assertFalse(s.tryAcquireBlocking(1, Duration.ofMillis(20)), "times out, nothing held");
        assertEquals(0, s.queueLength());
        s.release(2);
        assertTrue(s.tryAcquireBlocking(2, Duration.ofSeconds(Long.MAX_VALUE)), "huge timeouts saturate");
        s.release(2);
        s.close();
        assertThrows(SemaphoreClosedException.class, () -> s.tryAcquireBlocking(1, Duration.ZERO));
        assertThrows(SemaphoreClosedException.class, () -> s.acquireBlocking(1));
    }

    @Test
    void blockingWithPendingInterruptThrowsAndHoldsNothing() {
        Semaphore s = new Semaphore(2);
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> s.acquireBlocking(1));
        assertFalse(Thread.currentThread().isInterrupted());
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> s.tryAcquireBlocking(1, Duration.ofSeconds(1)));
        assertEquals(2, s.availablePermits());
    }

    @Test
    void closeFailsWaitersReturnsTheirPartialPermitsAndKeepsReleaseWorking() {
        Semaphore s = new Semaphore(5);
        assertTrue(s.tryAcquire(3));
        RecordingWaker w1 = new RecordingWaker();
        RecordingWaker w2 = new RecordingWaker();
        Acquisition a1 = s.acquireThen(4, w1); // takes the 2 free
        Acquisition a2 = s.acquireThen(1, w2);
        CompletableFuture<Permits> f = s.acquireAsync(1);
        assertEquals(0, s.availablePermits());
        assertEquals(3, s.queueLength());
        s.close();
        assertTrue(s.isClosed());
        assertTrue(a1.isClosed());
        assertTrue(a2.isClosed());
        assertEquals(1, w1.wakes.get());
        assertEquals(0, w1.claims.get());
        assertTrue(f.isCompletedExceptionally());
        assertEquals(0, s.queueLength());
        assertEquals(2, s.availablePermits(), "partial permits returned; close does not change the count otherwise");
        s.close(); // idempotent
        assertEquals(1, w1.wakes.get());
        assertFalse(s.tryAcquire(1));
        s.release(3);
        assertEquals(5, s.availablePermits());
        assertEquals("Semaphore[capacity=5, available=5, queued=0, closed=true]", s.toString());
    }

    static void waitUntil(java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not reached within 20 s");
            }
            Thread.onSpinWait();
            Thread.yield();
        }
    }
}
