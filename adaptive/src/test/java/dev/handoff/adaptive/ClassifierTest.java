// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** How the scoped calls count what a body throws: the JDK's timeouts by default, or the builder's classifier. */
class ClassifierTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(1_000 * MS);

    static long[] sums(AdaptiveCapacity a) {
        return ((BaselineGradient) a.controller()).sums(); // successes, drops, rejections, failures
    }

    @Test
    void theJdksTimeoutsAreDropsByDefault() {
        assertEquals(Outcome.DROPPED, Outcome.of(new TimeoutException()));
        assertEquals(Outcome.DROPPED, Outcome.of(new SocketTimeoutException("read timed out")));
        assertEquals(Outcome.DROPPED, Outcome.of(new InterruptedIOException()));
        assertEquals(Outcome.DROPPED, Outcome.of(new HttpTimeoutException("request timed out")));
        assertEquals(Outcome.DROPPED, Outcome.of(new HttpConnectTimeoutException("connect timed out")));
        assertEquals(
                Outcome.DROPPED,
                Outcome.of(new CompletionException(new ExecutionException(new SocketTimeoutException()))));
        assertEquals(Outcome.FAILURE, Outcome.of(new IOException("connection refused")));
        assertEquals(Outcome.FAILURE, Outcome.of(new IllegalStateException()));
    }

    /**
     * A full stall in which every call ends in a {@code SocketTimeoutException} after 50 ms: every
     * window holds only drops, closes on time and cuts. (Counted as failures, the capacity would
     * stay where it is.)
     */
    @Test
    void aStallOfSocketTimeoutsCutsTheCapacityWindowAfterWindow() throws Exception {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(40))
                .maxCapacity(100)
                .nanoClock(now::get)
                .build();
        long before = a.capacity();
        for (int i = 0; i < 6; i++) { // 300 ms
            assertThrows(
                    SocketTimeoutException.class,
                    () -> a.withPermitsBlocking(1, () -> {
                        now.addAndGet(50 * MS);
                        throw new SocketTimeoutException("read timed out");
                    }));
        }
        BaselineGradient algorithm = (BaselineGradient) a.controller();
        assertEquals(3, algorithm.windows(), "a window of only drops closes on time: " + a);
        assertTrue(a.capacity() < before, "cut: " + a);
        assertEquals(0, a.inFlight());
        assertEquals(a.capacity(), a.semaphore().availablePermits());
    }

    @Test
    void aClassifierOnTheBuilderDecidesForEveryScopedCall() throws Exception {
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(10))
                .window(Duration.ofHours(1))
                .nanoClock(now::get)
                .classifier(e -> e instanceof IllegalStateException
                        ? Outcome.DROPPED
                        : e instanceof NoSuchFieldException ? Outcome.SUCCESS : Outcome.FAILURE)
                .build();
        assertThrows(
                IllegalStateException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new IllegalStateException("503");
                }));
        CompletableFuture<String> async = a.withPermitsAsync(
                1, () -> CompletableFuture.failedFuture(new CompletionException(new IllegalStateException("503"))));
        assertTrue(async.isCompletedExceptionally());
        assertThrows(
                NoSuchFieldException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new NoSuchFieldException("404: an answer, a latency sample");
                }));
        assertThrows(
                TimeoutException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new TimeoutException("this classifier calls it a failure");
                }));
        assertEquals(Outcome.DROPPED, a.classify(new CompletionException(new IllegalStateException())));
        long[] sums = sums(a);
        assertEquals(1, sums[0], "success");
        assertEquals(2, sums[1], "drops");
        assertEquals(1, sums[3], "failure");
        assertEquals(10, a.semaphore().availablePermits());
    }

    @Test
    void aClassifierThatThrowsOrAnswersNothingCountsAFailureAndLosesNothing() throws Exception {
        IllegalArgumentException bug = new IllegalArgumentException("classifier bug");
        AdaptiveCapacity a = AdaptiveCapacity.builder(new Semaphore(4))
                .window(Duration.ofHours(1))
                .nanoClock(now::get)
                .classifier(e -> {
                    if (e instanceof IOException) {
                        throw bug;
                    }
                    return e instanceof TimeoutException ? null : Outcome.REJECTED;
                })
                .build();
        IOException thrown = assertThrows(
                IOException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new IOException("down");
                }));
        assertSame(bug, thrown.getSuppressed()[0], "the classifier's exception is reported with the body's");
        assertThrows(
                TimeoutException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new TimeoutException();
                }));
        assertThrows(
                IllegalStateException.class,
                () -> a.withPermitsBlocking(1, () -> {
                    throw new IllegalStateException();
                }));
        assertEquals(3, sums(a)[3], "three failures");
        assertEquals(0, sums(a)[2], "REJECTED from a classifier is not a rejection: the work had its permits");
        assertEquals(0, a.inFlight());
        assertEquals(4, a.semaphore().availablePermits());
    }

    @Test
    void theFairShareTakesAClassifierToo() throws Exception {
        AdaptiveFairShare<String> a = AdaptiveFairShare.builder(
                        FairShareSemaphore.<String>builder(4).build())
                .window(Duration.ofHours(1))
                .nanoClock(now::get)
                .classifier(e -> Outcome.DROPPED)
                .build();
        assertThrows(
                IOException.class,
                () -> a.withPermitsBlocking("t", 1, () -> {
                    throw new IOException("refused");
                }));
        assertEquals(1, ((BaselineGradient) a.controller()).sums()[1]);
        assertEquals(Outcome.DROPPED, a.classify(new IOException()));
    }

    @Test
    void aNullClassifierIsRefused() {
        assertEquals(
                "classifier(null): the classifier is null",
                assertThrows(
                                NullPointerException.class,
                                () -> AdaptiveCapacity.builder(new Semaphore(1)).classifier(null))
                        .getMessage());
        assertEquals(
                "classify(null): nothing was thrown",
                assertThrows(
                                NullPointerException.class,
                                () -> AdaptiveCapacity.builder(new Semaphore(1))
                                        .build()
                                        .classify(null))
                        .getMessage());
    }
}
