// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacityTest.RecordingLimit;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link AdaptiveFairShare}: the fair share's total capacity follows the algorithm (on a virtual
 * clock, as {@link BaselineGradientTest}), every keyed face samples and gives its permits back to
 * its key, per-key limits are not read as demand, and bad input is refused with messages that name
 * the call, the value and the limit.
 */
class AdaptiveFairShareTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);

    AdaptiveFairShare<String> builtIn(FairShareSemaphore<String> fair, long min, long max) {
        return AdaptiveFairShare.builder(fair)
                .minCapacity(min)
                .maxCapacity(max)
                .nanoClock(now::get)
                .build();
    }

    AdaptiveFairShare<String> bridged(FairShareSemaphore<String> fair, RecordingLimit limit) {
        return AdaptiveFairShare.builder(fair)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .nanoClock(now::get)
                .build();
    }

    static long[] sums(AdaptiveFairShare<?> a) {
        return ((BaselineGradient) a.controller()).sums(); // successes, drops, rejections, failures
    }

    /**
     * One window (100 ms) of rounds, as {@code BaselineGradientTest.window}: in each round up to
     * {@code inFlight} uses take a permit each with {@code tryAcquire}, for the keys in turn, are
     * held for {@code latencyMillis} and end with {@code outcome}. Then the clock moves to the
     * window's end and a use of zero permits closes it.
     */
    void window(AdaptiveFairShare<String> a, List<String> keys, long inFlight, long latencyMillis, Outcome outcome) {
        long end = now.get() + 100 * MS;
        while (now.get() + latencyMillis * MS < end) {
            List<SampledPermits> held = new ArrayList<>();
            for (long i = 0; i < inFlight; i++) {
                SampledPermits p = a.tryAcquire(keys.get((int) (i % keys.size())), 1);
                if (p != null) {
                    held.add(p);
                }
            }
            now.addAndGet(latencyMillis * MS);
            for (SampledPermits p : held) {
                if (outcome == Outcome.DROPPED) {
                    p.markDropped();
                }
                p.close();
            }
        }
        now.set(end);
        a.startSample(keys.get(0), 0).close();
    }

    // ------------------------------------------------------------------ the capacity follows the algorithm

    @Test
    void theFairSharesCapacityFollowsTheBuiltInAlgorithm() {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(16).build();
        AdaptiveFairShare<String> a = builtIn(fair, 1, 100);
        List<String> tenants = List.of("a", "b", "c");
        window(a, tenants, 16, 10, Outcome.SUCCESS); // all in use, at the baseline: + sqrt(16)
        assertEquals(20, a.capacity());
        assertEquals(20, fair.capacity());
        window(a, tenants, 20, 10, Outcome.SUCCESS); // 20 + 4.47
        assertEquals(24, fair.capacity());
        window(a, tenants, 24, 20, Outcome.SUCCESS); // twice the baseline: gradient 0.75 of 24 in use
        assertEquals(18, fair.capacity());
        window(a, tenants, 18, 10, Outcome.DROPPED); // drops: a fifth off what was in use
        assertEquals(Math.round(18 * BaselineGradient.DROP_BACKOFF), fair.capacity());
        assertEquals(a.capacity(), fair.capacity());
        assertEquals(0, a.inFlight());
        for (String t : tenants) {
            assertEquals(0, fair.heldPermits(t), t);
        }
        assertEquals(4, ((BaselineGradient) a.controller()).windows());
    }

    @Test
    void theFairShareFollowsANetflixLimitWithinTheBounds() {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(1).build();
        RecordingLimit limit = new RecordingLimit(20);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        assertEquals(20, fair.capacity(), "starts at the limit's value");
        limit.set(35);
        assertEquals(35, fair.capacity());
        limit.set(500);
        assertEquals(50, fair.capacity(), "clamped to maxCapacity");
        limit.set(0);
        assertEquals(2, fair.capacity(), "clamped to minCapacity");
        assertEquals(2, a.capacity());
    }

    @Test
    void requestsHeldBackOnlyByTheirKeysCapAreNotDemandForTheCapacity() {
        FairShareSemaphore<String> fair =
                FairShareSemaphore.<String>builder(10).maxPermitsPerKey(2).build();
        AdaptiveFairShare<String> a = builtIn(fair, 1, 100);
        assertTrue(fair.tryAcquire("greedy", 2)); // at its cap, outside the adaptive object
        CompletableFuture<Permits> capped = fair.acquireAsync("greedy", 1);
        assertEquals(1, fair.queueLength(), "waits for its own cap, with 8 permits free");
        assertNull(a.tryAcquire("greedy", 1), "refused by the cap");
        assertEquals(0, sums(a)[2], "a refusal by the key's cap is no rejection of the shared capacity");
        for (int i = 0; i < 10; i++) {
            window(a, List.of("polite"), 2, 10, Outcome.SUCCESS); // 2 of 10 in use
        }
        assertEquals(10, a.capacity(), "a capped waiter while permits are free is no reason to grow");
        assertFalse(capped.isDone());
        fair.release("greedy", 2);
        capped.join().release();
    }

    // ------------------------------------------------------------------ keyed faces: sampled, released to their key

    @Test
    void scopedBlockingCallsAreSampledAndReleasedToTheirKey() throws Exception {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(10).build();
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        assertEquals("ok", a.withPermitsBlocking("a", 2, () -> {
            assertEquals(2, fair.heldPermits("a"));
            assertEquals(0, fair.heldPermits("b"));
            now.addAndGet(7 * MS);
            return "ok";
        }));
        assertThrows(
                TimeoutException.class,
                () -> a.withPermitsBlocking("b", 1, () -> {
                    assertEquals(1, fair.heldPermits("b"));
                    now.addAndGet(30 * MS);
                    throw new TimeoutException("downstream");
                }));
        assertThrows(
                IOException.class,
                () -> a.withPermitsBlocking("a", 1, () -> {
                    throw new IOException("refused");
                }));
        assertEquals(
                List.of("start=1000 rtt=7 inflight=2", "start=1007 rtt=30 inflight=1 dropped"),
                limit.samples,
                "the success and the timeout as a drop; the failure is not sent");
        assertEquals(0, fair.heldPermits("a"));
        assertEquals(0, fair.heldPermits("b"));
        assertEquals(10, fair.availablePermits());
        assertEquals(0, a.inFlight());
    }

    @Test
    void asyncCallsAreSampledAndReleasedToTheirKey() {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(10).build();
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        CompletableFuture<String> stage = new CompletableFuture<>();
        CompletableFuture<String> r = a.withPermitsAsync("c", 2, () -> stage);
        assertEquals(2, fair.heldPermits("c"));
        assertEquals(2, a.inFlight());
        now.addAndGet(9 * MS);
        stage.complete("ok");
        assertEquals("ok", r.join());
        assertEquals(0, fair.heldPermits("c"));
        CompletableFuture<String> timedOut = a.withPermitsAsync(
                "d", 1, () -> CompletableFuture.failedFuture(new CompletionException(new TimeoutException())));
        assertTrue(assertThrows(ExecutionException.class, timedOut::get).getCause() instanceof TimeoutException);
        CompletableFuture<String> nullStage = a.withPermitsAsync("d", 1, () -> null);
        assertEquals(
                "withPermitsAsync(d, 1): the body returned null",
                assertThrows(ExecutionException.class, nullStage::get)
                        .getCause()
                        .getMessage());
        assertEquals(List.of("start=1000 rtt=9 inflight=2", "start=1009 rtt=0 inflight=1 dropped"), limit.samples);
        assertEquals(0, fair.heldPermits("d"));
        assertEquals(0, a.inFlight());
    }

    @Test
    void handlesReleaseToTheirKeyAndSampleOnce() throws Exception {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(10).build();
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        SampledPermits blocking = a.acquireBlocking("a", 2);
        SampledPermits async = a.acquireAsync("b", 1).join();
        SampledPermits tried = a.tryAcquire("c", 1);
        assertEquals(2, fair.heldPermits("a"));
        assertEquals(1, fair.heldPermits("b"));
        assertEquals(1, fair.heldPermits("c"));
        assertEquals("SampledPermits[a, 2, held, SUCCESS]", blocking.toString());
        now.addAndGet(4 * MS);
        blocking.markDropped();
        assertTrue(blocking.release());
        assertFalse(blocking.release());
        async.close();
        tried.markFailure();
        tried.close();
        assertEquals(List.of("start=1000 rtt=4 inflight=2 dropped", "start=1000 rtt=4 inflight=3"), limit.samples);
        assertEquals(10, fair.availablePermits());
        List<SampledPermits> started = new ArrayList<>();
        fair.acquireThen("e", 2, () -> started.add(a.startSample("e", 2)));
        assertEquals(2, fair.heldPermits("e"));
        now.addAndGet(3 * MS);
        started.get(0).close();
        assertEquals(0, fair.heldPermits("e"));
        assertEquals("start=1004 rtt=3 inflight=2", limit.samples.get(2));
        assertEquals(0, a.inFlight());
    }

    @Test
    void anAsyncCallWaitsInFairOrderAndACancelBeforeTheGrantHoldsNothing() {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(2).build();
        RecordingLimit limit = new RecordingLimit(2);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        assertTrue(fair.tryAcquire("a", 2)); // every permit held, outside the adaptive object
        CompletableFuture<String> cancelled =
                a.withPermitsAsync("b", 1, () -> CompletableFuture.completedFuture("never"));
        CompletableFuture<String> served = a.withPermitsAsync("c", 1, () -> CompletableFuture.completedFuture("c"));
        CompletableFuture<SampledPermits> handle = a.acquireAsync("b", 1);
        assertEquals(3, fair.queueLength());
        assertTrue(cancelled.cancel(false));
        assertEquals(2, fair.queueLength(), "the wait is withdrawn");
        fair.release("a", 2);
        assertEquals("c", served.join());
        SampledPermits b = handle.join();
        assertEquals(1, fair.heldPermits("b"));
        b.close();
        assertEquals(2, fair.availablePermits());
        assertEquals(2, limit.samples.size(), "the cancelled call is not sampled: " + limit.samples);
        assertEquals(0, a.inFlight());
    }

    @Test
    void aRejectionByAQueueBoundIsRecordedAndThrown() throws Exception {
        FairShareSemaphore<String> fair =
                FairShareSemaphore.<String>builder(2).maxQueueLength(0).build();
        AdaptiveFairShare<String> a = builtIn(fair, 2, 10);
        SampledPermits all = a.acquireBlocking("a", 2);
        assertThrows(SemaphoreRejectedException.class, () -> a.withPermitsBlocking("b", 1, () -> "never"));
        CompletableFuture<String> async = a.withPermitsAsync("b", 1, () -> CompletableFuture.completedFuture("never"));
        assertTrue(
                assertThrows(CompletionException.class, async::join).getCause() instanceof SemaphoreRejectedException);
        assertNull(a.tryAcquire("b", 1));
        all.close();
        a.recordRejection(1);
        assertEquals(List.of(1L, 0L, 4L, 0L), List.of(sums(a)[0], sums(a)[1], sums(a)[2], sums(a)[3]));
        assertEquals(0, a.inFlight());
        assertEquals(2, fair.availablePermits());
    }

    // ------------------------------------------------------------------ bad input

    @Test
    void badInputNamesTheCallTheValueAndTheLimitAndHoldsNothing() {
        FairShareSemaphore<String> fair =
                FairShareSemaphore.<String>builder(10).maxPermitsPerKey(3).build();
        assertEquals(
                "builder(null): the fair share is null",
                assertThrows(NullPointerException.class, () -> AdaptiveFairShare.builder(null))
                        .getMessage());
        AdaptiveFairShare.Builder<String> b = AdaptiveFairShare.builder(fair);
        assertEquals(
                "minCapacity(0): the least capacity must be between 1 and MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")",
                assertThrows(IllegalArgumentException.class, () -> b.minCapacity(0))
                        .getMessage());
        assertEquals(
                "window(PT0S): must be between PT0.001S and PT1H",
                assertThrows(IllegalArgumentException.class, () -> b.window(Duration.ZERO))
                        .getMessage());
        assertEquals(
                "build(): maxCapacity (4) is below minCapacity (8)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> AdaptiveFairShare.builder(fair)
                                        .minCapacity(8)
                                        .maxCapacity(4)
                                        .build())
                        .getMessage());
        assertTrue(assertThrows(
                        IllegalStateException.class,
                        () -> AdaptiveFairShare.builder(fair)
                                .smoothing(0.5)
                                .limit(new RecordingLimit(5))
                                .build())
                .getMessage()
                .startsWith("build(): tolerance, smoothing and window set the built-in algorithm, which limit("));

        AdaptiveFairShare<String> a =
                AdaptiveFairShare.builder(fair).minCapacity(4).build();
        assertSame(fair, a.fairShare());
        String tooMany = "(a, 11): the number of permits must be between 0 and the present capacity (10)";
        assertEquals(
                "withPermitsBlocking" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.withPermitsBlocking("a", 11, () -> 1))
                        .getMessage());
        assertEquals(
                "withPermitsAsync" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.withPermitsAsync("a", 11, () -> null))
                        .getMessage());
        assertEquals(
                "acquireBlocking" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.acquireBlocking("a", 11))
                        .getMessage());
        assertEquals(
                "acquireAsync" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.acquireAsync("a", 11))
                        .getMessage());
        assertEquals(
                "tryAcquire" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.tryAcquire("a", 11))
                        .getMessage());
        assertEquals(
                "startSample" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> a.startSample("a", 11))
                        .getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> a.tryAcquire("a", -1))
                .getMessage()
                .startsWith("tryAcquire(a, -1): the number of permits must be between 0"));
        assertEquals(
                "acquireBlocking(a, 4): exceeds maxPermitsPerKey (3) of the fair share, so it could never be granted",
                assertThrows(IllegalArgumentException.class, () -> a.acquireBlocking("a", 4))
                        .getMessage());
        assertEquals(
                "withPermitsBlocking(null, 1): the key is null",
                assertThrows(NullPointerException.class, () -> a.withPermitsBlocking(null, 1, () -> 1))
                        .getMessage());
        assertEquals(
                "acquireAsync(null, 1): the key is null",
                assertThrows(NullPointerException.class, () -> a.acquireAsync(null, 1))
                        .getMessage());
        assertEquals(
                "withPermitsBlocking(a, 1, null): the body is null",
                assertThrows(NullPointerException.class, () -> a.withPermitsBlocking("a", 1, null))
                        .getMessage());
        assertEquals(
                "withPermitsAsync(a, 1, null): the body is null",
                assertThrows(NullPointerException.class, () -> a.withPermitsAsync("a", 1, null))
                        .getMessage());
        assertEquals(
                "recordRejection(-1): the number of permits must not be negative",
                assertThrows(IllegalArgumentException.class, () -> a.recordRejection(-1))
                        .getMessage());
        assertEquals(0, a.inFlight(), "a refused call holds nothing");
        assertEquals(0, fair.heldPermits("a"));
        assertEquals(10, fair.availablePermits());
        assertEquals(0, fair.queueLength());
        assertTrue(
                a.toString()
                        .startsWith("AdaptiveFairShare[capacity=10, min=4, max=1000, inFlight=0, BaselineGradient["),
                a.toString());
    }

    // ------------------------------------------------------------------ the classification

    @Test
    void outcomeOfClassifiesAsTheScopedCallsDo() {
        assertEquals(Outcome.DROPPED, Outcome.of(new TimeoutException()));
        assertEquals(
                Outcome.DROPPED, Outcome.of(new CompletionException(new ExecutionException(new TimeoutException()))));
        assertEquals(Outcome.FAILURE, Outcome.of(new IOException("refused")));
        assertEquals(Outcome.FAILURE, Outcome.of(new CompletionException(null)));
        assertEquals(
                "of(null): nothing was thrown",
                assertThrows(NullPointerException.class, () -> Outcome.of(null)).getMessage());
    }
}
