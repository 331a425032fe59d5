// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The faces, the outcome classification, the bridge and bad input. The outcomes are observed
 * through a recording {@code Limit} behind the bridge (successes and drops, as Netflix's limiters
 * send them) and through the built-in algorithm's window sums (all four).
 */
class AdaptiveCapacityTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(5 * MS);

    /** A Netflix Limit that records what the bridge sends it and can be moved by hand. */
    static final class RecordingLimit implements Limit {
        final List<String> samples = new ArrayList<>();
        final List<Consumer<Integer>> listeners = new ArrayList<>();
        int limit;

        RecordingLimit(int limit) {
            this.limit = limit;
        }

        @Override
        public int getLimit() {
            return limit;
        }

        @Override
        public void notifyOnChange(Consumer<Integer> consumer) {
            listeners.add(consumer);
        }

        @Override
        public synchronized void onSample(long startTime, long rtt, int inflight, boolean didDrop) {
            samples.add("start=" + startTime / MS + " rtt=" + rtt / MS + " inflight=" + inflight
                    + (didDrop ? " dropped" : ""));
        }

        void set(int next) {
            limit = next;
            listeners.forEach(l -> l.accept(next));
        }
    }

    AdaptiveCapacity bridged(Semaphore s, RecordingLimit limit) {
        return AdaptiveCapacity.builder(s)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .nanoClock(now::get)
                .build();
    }

    AdaptiveCapacity builtIn(Semaphore s) {
        return AdaptiveCapacity.builder(s)
                .minCapacity(2)
                .maxCapacity(50)
                .window(Duration.ofHours(1))
                .nanoClock(now::get)
                .build();
    }

    static long[] sums(AdaptiveCapacity a) {
        return ((BaselineGradient) a.controller()).sums(); // successes, drops, rejections, failures
    }

    // ------------------------------------------------------------------ the bridge

    @Test
    void theBridgeStartsAtTheLimitAndFollowsItWithinTheBounds() {
        Semaphore s = new Semaphore(1);
        RecordingLimit limit = new RecordingLimit(20);
        AdaptiveCapacity a = bridged(s, limit);
        assertEquals(20, a.capacity());
        assertEquals(20, s.capacity());
        limit.set(35);
        assertEquals(35, s.capacity());
        limit.set(500);
        assertEquals(50, s.capacity(), "clamped to maxCapacity");
        limit.set(0);
        assertEquals(2, s.capacity(), "clamped to minCapacity");
        assertEquals(2, a.capacity());
    }

    @Test
    void scopedBlockingCallsAreTimedAndClassified() throws Exception {
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(new Semaphore(10), limit);
        assertEquals("ok", a.withPermitsBlocking(1, () -> {
            now.addAndGet(7 * MS);
            return "ok";
        }));
        assertThrows(
                TimeoutException.class,
                () -> a.withPermitsBlocking(2, () -> {
                    now.addAndGet(30 * MS);
                    throw new TimeoutException("downstream");
                }));
        IOException failure = assertThrows(
                IOException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    now.addAndGet(1 * MS);
                    throw new IOException("refused");
                }));
        assertEquals("refused", failure.getMessage());
        assertEquals(
                List.of("start=5 rtt=7 inflight=1", "start=12 rtt=30 inflight=2 dropped"),
                limit.samples,
                "success, then the timeout as a drop; the failure is not sent (Netflix's onIgnore)");
        assertEquals(0, a.inFlight());
        assertEquals(10, a.semaphore().availablePermits());
    }

    @Test
    void theBuiltInAlgorithmCountsEveryOutcome() throws Exception {
        Semaphore s = Semaphore.builder(2).maxQueueLength(0).build();
        AdaptiveCapacity a = builtIn(s);
        a.withPermitsBlocking(1, () -> "ok");
        assertThrows(
                IllegalStateException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new IllegalStateException("bug");
                }));
        assertThrows(
                TimeoutException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new TimeoutException();
                }));
        SampledPermits held = a.acquireBlocking(2);
        assertThrows(SemaphoreRejectedException.class, () -> a.withPermitsBlocking(1, () -> "never"));
        assertNull(a.tryAcquire(1));
        held.close();
        a.recordRejection(1);
        assertEquals(List.of(2L, 1L, 3L, 1L), List.of(sums(a)[0], sums(a)[1], sums(a)[2], sums(a)[3]));
    }

    @Test
    void theHandleIsASuccessUnlessMarkedAndReleasesOnce() throws Exception {
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(new Semaphore(10), limit);
        SampledPermits p = a.acquireBlocking(2);
        assertEquals(2, p.permits());
        assertEquals(Outcome.SUCCESS, p.outcome());
        p.markFailure();
        p.markDropped(); // the last mark wins
        assertEquals(Outcome.DROPPED, p.outcome());
        now.addAndGet(4 * MS);
        assertTrue(p.release());
        assertFalse(p.release());
        assertTrue(p.isReleased());
        IllegalStateException late = assertThrows(IllegalStateException.class, p::markFailure);
        assertEquals(
                "markFailure(): the 2 permits were already released and sampled as DROPPED; mark before closing",
                late.getMessage());
        assertEquals("SampledPermits[2, released, DROPPED]", p.toString());
        try (SampledPermits q = a.tryAcquire(1)) {
            q.markFailure();
        }
        assertEquals(List.of("start=5 rtt=4 inflight=2 dropped"), limit.samples);
        assertEquals(10, a.semaphore().availablePermits());
    }

    @Test
    void aHandleReleasedBehindItsBackRefusesOnceAndCountsAsReleased() throws Exception {
        AdaptiveCapacity a = builtIn(new Semaphore(4));
        SampledPermits p = a.acquireBlocking(1);
        a.semaphore().release(1); // behind the handle's back
        assertThrows(IllegalStateException.class, p::release);
        assertTrue(p.isReleased());
        assertFalse(p.release());
        assertEquals(0, a.inFlight());
    }

    @Test
    void asyncCallsAreTimedAndClassified() throws Exception {
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(new Semaphore(10), limit);
        CompletableFuture<String> stage = new CompletableFuture<>();
        CompletableFuture<String> r = a.withPermitsAsync(1, () -> stage);
        assertEquals(1, a.inFlight());
        now.addAndGet(9 * MS);
        stage.complete("ok");
        assertEquals("ok", r.join());
        CompletableFuture<String> timedOut = a.withPermitsAsync(
                1, () -> CompletableFuture.failedFuture(new CompletionException(new TimeoutException())));
        ExecutionException e = assertThrows(ExecutionException.class, timedOut::get);
        assertTrue(e.getCause() instanceof TimeoutException, e.toString());
        CompletableFuture<String> thrown = a.withPermitsAsync(1, () -> {
            throw new IllegalArgumentException("bad request");
        });
        assertTrue(thrown.isCompletedExceptionally());
        CompletableFuture<String> nullStage = a.withPermitsAsync(1, () -> null);
        assertEquals(
                "withPermitsAsync(1): the body returned null",
                assertThrows(ExecutionException.class, nullStage::get)
                        .getCause()
                        .getMessage());
        assertEquals(List.of("start=5 rtt=9 inflight=1", "start=14 rtt=0 inflight=1 dropped"), limit.samples);
        assertEquals(0, a.inFlight());
        assertEquals(10, a.semaphore().availablePermits());
    }

    @Test
    void anAsyncCallWaitsInFifoOrderAndACancelBeforeTheGrantWithdrawsIt() throws Exception {
        AdaptiveCapacity a = builtIn(new Semaphore(2));
        SampledPermits all = a.acquireBlocking(2);
        CompletableFuture<String> first = a.withPermitsAsync(1, () -> CompletableFuture.completedFuture("first"));
        CompletableFuture<String> cancelled = a.withPermitsAsync(1, () -> CompletableFuture.completedFuture("never"));
        CompletableFuture<SampledPermits> handle = a.acquireAsync(2);
        assertEquals(3, a.semaphore().queueLength());
        assertTrue(cancelled.cancel(false));
        assertEquals(2, a.semaphore().queueLength(), "the wait is withdrawn");
        all.close();
        assertEquals("first", first.join());
        SampledPermits h = handle.join();
        assertEquals(2, a.inFlight());
        h.close();
        assertEquals(2, a.semaphore().availablePermits());
        assertEquals(3, sums(a)[0], "all, first, the handle: three successes");
    }

    /**
     * A future cancelled or timed out from outside has left the queue when it says so: what its
     * dependents see (a gate that sheds on that completion, a caller that counts the queue) is the
     * queue without it, as for the Semaphore's own futures.
     */
    @Test
    void aWaitHasLeftTheQueueWhenItsFutureEnds() throws Exception {
        AdaptiveCapacity a = builtIn(new Semaphore(2));
        SampledPermits all = a.acquireBlocking(2);
        List<Integer> seen = new ArrayList<>();
        CompletableFuture<SampledPermits> cancelled = a.acquireAsync(1);
        cancelled.whenComplete((p, e) -> seen.add(a.semaphore().queueLength()));
        CompletableFuture<String> scoped = a.withPermitsAsync(1, () -> CompletableFuture.completedFuture("never"));
        scoped.whenComplete((r, e) -> seen.add(a.semaphore().queueLength()));
        CompletableFuture<SampledPermits> timedOut = a.acquireAsync(1);
        timedOut.whenComplete((p, e) -> seen.add(a.semaphore().queueLength()));
        assertEquals(3, a.semaphore().queueLength());

        assertTrue(cancelled.cancel(false));
        assertTrue(scoped.cancel(false));
        assertTrue(timedOut.completeExceptionally(new TimeoutException("as orTimeout fails it")));
        assertEquals(List.of(2, 1, 0), seen, "each dependent sees its wait gone");
        assertTrue(cancelled.isCancelled() && scoped.isCancelled());
        assertTrue(assertThrows(CompletionException.class, timedOut::join).getCause() instanceof TimeoutException);
        all.close();
        assertEquals(2, a.semaphore().availablePermits());
        assertEquals(0, a.inFlight());
    }

    @Test
    void aRejectedAsyncCallFailsAndIsRecorded() {
        Semaphore s = Semaphore.builder(2).maxQueueLength(0).build();
        AdaptiveCapacity a = builtIn(s);
        assertTrue(s.tryAcquire(2));
        CompletableFuture<String> r = a.withPermitsAsync(1, () -> CompletableFuture.completedFuture("never"));
        CompletableFuture<SampledPermits> h = a.acquireAsync(1);
        assertTrue(assertThrows(CompletionException.class, r::join).getCause() instanceof SemaphoreRejectedException);
        assertTrue(assertThrows(CompletionException.class, h::join).getCause() instanceof SemaphoreRejectedException);
        assertEquals(2, sums(a)[2]);
        s.release(2);
    }

    @Test
    void startSampleWrapsPermitsTakenByAnotherFace() {
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(new Semaphore(10), limit);
        List<SampledPermits> started = new ArrayList<>();
        a.semaphore().acquireThen(2, () -> started.add(a.startSample(2)));
        now.addAndGet(3 * MS);
        started.get(0).close();
        assertEquals(List.of("start=5 rtt=3 inflight=2"), limit.samples);
        assertEquals(10, a.semaphore().availablePermits());
    }

    // ------------------------------------------------------------------ no lock, nothing lost

    @Test
    void concurrentSamplesAreAllCounted() throws Exception {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(4))
                .minCapacity(4)
                .maxCapacity(4)
                .window(Duration.ofHours(1))
                .build(); // real clock; no window closes within the hour
        int threads = 8;
        int calls = 5_000;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread w = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < calls; i++) {
                        if (i % 2 == 0) {
                            a.withPermitsBlocking(1, () -> null);
                        } else {
                            try (SampledPermits p = a.acquireBlocking(2)) {
                                if (i % 3 == 0) {
                                    p.markDropped();
                                }
                            }
                        }
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            w.start();
            workers.add(w);
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        long drops = threads * (long) countDrops(calls);
        assertEquals(threads * (long) calls - drops, sums(a)[0]);
        assertEquals(drops, sums(a)[1]);
        assertEquals(0, a.inFlight());
        assertEquals(4, a.semaphore().availablePermits());
    }

    private static int countDrops(int calls) {
        int n = 0;
        for (int i = 0; i < calls; i++) {
            if (i % 2 != 0 && i % 3 == 0) {
                n++;
            }
        }
        return n;
    }

    // ------------------------------------------------------------------ bad input

    @Test
    void badInputNamesTheCallTheValueAndTheLimit() {
        Semaphore s = new Semaphore(10);
        assertEquals(
                "builder(null): the semaphore is null",
                assertThrows(NullPointerException.class, () -> AdaptiveCapacity.builder(null))
                        .getMessage());
        AdaptiveCapacity.Builder b = AdaptiveCapacity.builder(s);
        assertEquals(
                "minCapacity(0): the least capacity must be between 1 and MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")",
                assertThrows(IllegalArgumentException.class, () -> b.minCapacity(0))
                        .getMessage());
        assertEquals(
                "maxCapacity(-3): the greatest capacity must be between 1 and MAX_PERMITS (" + Semaphore.MAX_PERMITS
                        + ")",
                assertThrows(IllegalArgumentException.class, () -> b.maxCapacity(-3))
                        .getMessage());
        assertEquals(
                "build(): maxCapacity (4) is below minCapacity (8)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> AdaptiveCapacity.builder(s)
                                        .minCapacity(8)
                                        .maxCapacity(4)
                                        .build())
                        .getMessage());
        assertEquals(
                "tolerance(1.0): must be between 1.05 and 10",
                assertThrows(IllegalArgumentException.class, () -> b.tolerance(1.0))
                        .getMessage());
        assertEquals(
                "tolerance(NaN): must be between 1.05 and 10",
                assertThrows(IllegalArgumentException.class, () -> b.tolerance(Double.NaN))
                        .getMessage());
        assertEquals(
                "smoothing(0.0): must be above 0 and at most 1",
                assertThrows(IllegalArgumentException.class, () -> b.smoothing(0))
                        .getMessage());
        assertEquals(
                "window(PT0S): must be between PT0.001S and PT1H",
                assertThrows(IllegalArgumentException.class, () -> b.window(Duration.ZERO))
                        .getMessage());
        assertEquals(
                "window(null): the window is null",
                assertThrows(NullPointerException.class, () -> b.window(null)).getMessage());
        assertEquals(
                "nanoClock(null): the clock is null",
                assertThrows(NullPointerException.class, () -> b.nanoClock(null))
                        .getMessage());
        assertEquals(
                "limit(null): the limit is null",
                assertThrows(NullPointerException.class, () -> b.limit(null)).getMessage());
        IllegalStateException both = assertThrows(
                IllegalStateException.class,
                () -> AdaptiveCapacity.builder(s)
                        .tolerance(2)
                        .limit(new RecordingLimit(5))
                        .build());
        assertTrue(
                both.getMessage()
                        .startsWith(
                                "build(): tolerance, smoothing and window set the built-in algorithm, which limit("),
                both.getMessage());

        AdaptiveCapacity a = AdaptiveCapacity.builder(s).minCapacity(4).build();
        String tooMany = "(11): the number of permits must be between 0 and the present capacity (10)";
        assertEquals(
                "withPermitsBlocking" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.withPermitsBlocking(11, () -> 1))
                        .getMessage());
        assertEquals(
                "withPermitsAsync" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.withPermitsAsync(11, () -> null))
                        .getMessage());
        assertEquals(
                "acquireBlocking" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.acquireBlocking(11))
                        .getMessage());
        assertEquals(
                "acquireAsync" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.acquireAsync(11))
                        .getMessage());
        assertEquals(
                "tryAcquire" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(11))
                        .getMessage());
        assertEquals(
                "startSample" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.startSample(11))
                        .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> a.tryAcquire(-1))
                .getMessage()
                .startsWith("tryAcquire(-1): "));
        assertEquals(
                "recordRejection(-2): the number of permits must not be negative",
                assertThrows(IllegalArgumentException.class, () -> a.recordRejection(-2))
                        .getMessage());
        assertEquals(
                "withPermitsBlocking(1, null): the body is null",
                assertThrows(NullPointerException.class, () -> a.withPermitsBlocking(1, null))
                        .getMessage());
        assertEquals(
                "withPermitsAsync(1, null): the body is null",
                assertThrows(NullPointerException.class, () -> a.withPermitsAsync(1, null))
                        .getMessage());
        assertEquals(0, a.inFlight(), "a refused call holds nothing");
        assertEquals(10, s.availablePermits());
    }

    @Test
    void theStartingCapacityIsTheSemaphoresWithinTheBounds() {
        Semaphore big = new Semaphore(5_000);
        AdaptiveCapacity a = AdaptiveCapacity.builder(big).build();
        assertEquals(1_000, a.capacity());
        assertEquals(1_000, big.capacity());
        assertEquals(1, a.minCapacity());
        assertEquals(1_000, a.maxCapacity());
        Semaphore small = new Semaphore(1);
        assertEquals(3, AdaptiveCapacity.builder(small).minCapacity(3).build().capacity());
        assertEquals(3, small.capacity());
        assertSame(small, AdaptiveCapacity.builder(small).minCapacity(3).build().semaphore());
        assertTrue(
                a.toString()
                        .startsWith(
                                "AdaptiveCapacity[capacity=1000, min=1, max=1000, inFlight=0, BaselineGradient[tolerance=1.5"),
                a.toString());
    }

    // ------------------------------------------------------------------ the optional dependency

    /**
     * A user without concurrency-limits on the class path: the classes of this module and of the
     * core in a loader that cannot see Netflix's, the built-in algorithm built and used.
     */
    @Test
    void theBuiltInAlgorithmNeedsNoNetflixClasses() throws Exception {
        URL adaptive =
                AdaptiveCapacity.class.getProtectionDomain().getCodeSource().getLocation();
        URL core = Semaphore.class.getProtectionDomain().getCodeSource().getLocation();
        URL tests = WithoutNetflix.class.getProtectionDomain().getCodeSource().getLocation();
        try (URLClassLoader loader =
                new URLClassLoader(new URL[] {adaptive, core, tests}, ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass("com.netflix.concurrency.limits.Limit"));
            Class<?> user = loader.loadClass(WithoutNetflix.class.getName());
            assertTrue(user.getClassLoader() == loader);
            assertEquals("ran with capacity 3", user.getMethod("run").invoke(null));
        }
    }

    /** User code that names no Netflix class, run by the test above in a loader without them. */
    public static final class WithoutNetflix {
        public static String run() throws Exception {
            AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(3))
                    .minCapacity(1)
                    .maxCapacity(10)
                    .build();
            try (SampledPermits p = a.acquireBlocking(1)) {
                p.markFailure();
            }
            return a.withPermitsBlocking(1, () -> "ran with capacity " + a.capacity());
        }
    }
}
