// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.netflix.concurrency.limits.Limit;
import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * {@link ReactorAdaptive}: every ending of the operator, as the algorithm sees it. The samples are
 * observed through a recording Netflix {@code Limit} behind the adaptive object's bridge, which is
 * sent successes and drops (failures and rejections are not sent, as Netflix's limiters do); the
 * clock is virtual, so the hold times are exact.
 */
class ReactorAdaptiveTest {
    static final long MS = 1_000_000L;

    final AtomicLong now = new AtomicLong(5 * MS);

    /** A Limit that records the samples it is sent and never moves. */
    static final class RecordingLimit implements Limit {
        final List<String> samples = new ArrayList<>();
        private final int limit;

        RecordingLimit(int limit) {
            this.limit = limit;
        }

        @Override
        public int getLimit() {
            return limit;
        }

        @Override
        public void notifyOnChange(Consumer<Integer> consumer) {}

        @Override
        public synchronized void onSample(long startTime, long rtt, int inflight, boolean didDrop) {
            samples.add("start=" + startTime / MS + " rtt=" + rtt / MS + " inflight=" + inflight
                    + (didDrop ? " dropped" : ""));
        }

        synchronized int count() {
            return samples.size();
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

    AdaptiveFairShare<String> bridged(FairShareSemaphore<String> fair, RecordingLimit limit) {
        return AdaptiveFairShare.builder(fair)
                .minCapacity(2)
                .maxCapacity(50)
                .limit(limit)
                .nanoClock(now::get)
                .build();
    }

    // ------------------------------------------------------------------ success, error, timeout

    @Test
    void aSuccessIsTimedFromTheGrantToTheReleaseAndReachesTheAlgorithm() {
        Semaphore s = new Semaphore(10);
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(s, limit);
        AtomicInteger bodies = new AtomicInteger();
        Mono<String> call = ReactorAdaptive.withPermits(
                a,
                2,
                () -> Mono.fromCallable(() -> {
                    bodies.incrementAndGet();
                    assertEquals(8, s.availablePermits());
                    assertEquals(2, a.inFlight());
                    now.addAndGet(7 * MS);
                    return "ok";
                }));
        assertEquals(0, bodies.get(), "lazy: nothing before a subscription");
        StepVerifier.create(call.map(v -> v + ", then " + s.availablePermits() + " free"))
                .expectNext("ok, then 10 free") // the value comes after the release
                .verifyComplete();
        StepVerifier.create(call).expectNext("ok").verifyComplete();
        assertEquals(2, bodies.get(), "each subscription acquires and samples anew");
        assertEquals(List.of("start=5 rtt=7 inflight=2", "start=12 rtt=7 inflight=2"), limit.samples);
        StepVerifier.create(ReactorAdaptive.withPermits(a, 1, Mono::empty)).verifyComplete();
        assertEquals(3, limit.samples.size(), "an empty Mono is a success too");
        assertEquals(0, a.inFlight());
        assertEquals(10, s.availablePermits());
    }

    @Test
    void anErrorIsAFailureAndATimeoutInsideTheBodyADrop() {
        Semaphore s = new Semaphore(10);
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveCapacity a = bridged(s, limit);
        StepVerifier.create(ReactorAdaptive.withPermits(a, 1, () -> Mono.error(new IOException("refused"))))
                .verifyErrorMessage("refused");
        StepVerifier.create(ReactorAdaptive.<String>withPermits(a, 1, () -> {
                    throw new IllegalStateException("no body");
                }))
                .verifyErrorMessage("no body");
        StepVerifier.create(ReactorAdaptive.<String>withPermits(a, 1, () -> null))
                .verifyError(NullPointerException.class);
        assertEquals(List.of(), limit.samples, "failures are not latency samples (nor sent to a Limit)");
        StepVerifier.create(ReactorAdaptive.withPermits(
                        a,
                        2,
                        () -> Mono.defer(() -> {
                            now.addAndGet(3 * MS);
                            return Mono.error(new TimeoutException("slow"));
                        })))
                .verifyError(TimeoutException.class);
        StepVerifier.create(ReactorAdaptive.withPermits(a, 1, () -> Mono.never().timeout(Duration.ofMillis(1))))
                .verifyError(TimeoutException.class); // Reactor's own timeout, inside the body
        assertEquals(List.of("start=5 rtt=3 inflight=2 dropped", "start=8 rtt=0 inflight=1 dropped"), limit.samples);
        assertEquals(0, a.inFlight());
        assertEquals(10, s.availablePermits());
    }

    // ------------------------------------------------------------------ cancellation

    @Test
    void aCancelBeforeTheGrantHoldsNothingAndSamplesNothing() {
        Semaphore s = new Semaphore(2);
        RecordingLimit limit = new RecordingLimit(2);
        AdaptiveCapacity a = bridged(s, limit);
        assertTrue(s.tryAcquire(2)); // every permit held elsewhere
        AtomicInteger bodies = new AtomicInteger();
        Disposable waiting = ReactorAdaptive.withPermits(a, 1, () -> {
                    bodies.incrementAndGet();
                    return Mono.just(1);
                })
                .subscribe();
        assertEquals(1, s.queueLength());
        waiting.dispose();
        assertEquals(0, s.queueLength(), "the wait is withdrawn");
        s.release(2);
        assertEquals(2, s.availablePermits());
        assertEquals(0, bodies.get());
        assertEquals(0, a.inFlight());
        assertEquals(List.of(), limit.samples);
    }

    @Test
    void aCancelAfterTheGrantReleasesOnceAsAFailure() {
        Semaphore s = new Semaphore(3);
        assertTrue(s.tryAcquire(1)); // a bystander: a double release would show as one permit too many
        RecordingLimit limit = new RecordingLimit(3);
        AdaptiveCapacity a = bridged(s, limit);
        StepVerifier.create(ReactorAdaptive.withPermits(a, 2, Mono::never))
                .expectSubscription()
                .then(() -> {
                    assertEquals(0, s.availablePermits());
                    assertEquals(2, a.inFlight());
                })
                .thenCancel()
                .verify();
        assertEquals(2, s.availablePermits());
        assertEquals(0, a.inFlight());
        // A timeout outside the operator cancels it: a failure too, not a drop.
        StepVerifier.create(ReactorAdaptive.withPermits(a, 1, Mono::never).timeout(Duration.ofMillis(1)))
                .verifyError(TimeoutException.class);
        assertEquals(2, s.availablePermits());
        assertEquals(List.of(), limit.samples);
        s.release(1);
    }

    /**
     * The cancel racing the grant on real threads, as {@link CancelRacingGrantTest}: whichever
     * wins, the permit comes back, once, and a grant that never reached a body is never sampled.
     */
    @Test
    void aCancelRacingTheGrantLeavesNothingHeldAndSamplesOnlyBodiesThatRan() throws InterruptedException {
        Semaphore s = new Semaphore(2);
        assertTrue(s.tryAcquire(1)); // the bystander
        RecordingLimit limit = new RecordingLimit(2); // never moves: the capacity stays 2
        AdaptiveCapacity a = AdaptiveCapacity.builder(s)
                .minCapacity(1)
                .maxCapacity(2)
                .limit(limit)
                .build();
        AtomicInteger bodies = new AtomicInteger();
        int rounds = 20_000;
        int ran = 0;
        try (Racer racer = new Racer()) {
            for (int round = 0; round < rounds; round++) {
                assertTrue(s.tryAcquire(1));
                Mono<Integer> body = round % 2 == 0 ? Mono.just(round) : Mono.never();
                Disposable subscription = ReactorAdaptive.withPermits(a, 1, () -> {
                            bodies.incrementAndGet();
                            return body;
                        })
                        .subscribe();
                int bodiesBefore = bodies.get();
                int samplesBefore = limit.count();
                if (round % 4 < 2) {
                    racer.race(() -> s.release(1), subscription::dispose);
                } else {
                    racer.race(subscription::dispose, () -> s.release(1));
                }
                int bodyRan = bodies.get() - bodiesBefore;
                int sampled = limit.count() - samplesBefore;
                ran += bodyRan;
                if (s.availablePermits() != 1
                        || s.queueLength() != 0
                        || a.inFlight() != 0
                        || sampled > (round % 2 == 0 ? bodyRan : 0)) {
                    throw new AssertionError("round " + round + ": " + s + ", inFlight " + a.inFlight() + ", body ran "
                            + bodyRan + ", samples sent " + sampled);
                }
            }
        }
        assertEquals(2, s.capacity());
        System.out.printf("ReactorAdaptive.withPermits: the grant reached the body in %d of %d rounds%n", ran, rounds);
    }

    // ------------------------------------------------------------------ rejection

    /**
     * A rejection is not sent to a Limit, so it is observed through the built-in algorithm: a
     * window in which the permits were not in use grows the capacity only if a rejection says that
     * the demand was above it. Without the operator's rejection, the same window leaves it alone.
     */
    @Test
    void aRejectionFailsTheSubscriptionAndIsRecorded() throws Exception {
        assertEquals(6, capacityAfterAWindow(true), "4 + sqrt(4): the rejection counts as demand");
        assertEquals(4, capacityAfterAWindow(false));
    }

    private long capacityAfterAWindow(boolean rejectOne) throws Exception {
        now.set(5 * MS);
        Semaphore s = Semaphore.builder(4).maxQueueLength(0).build();
        AdaptiveCapacity a = AdaptiveCapacity.builder(s)
                .minCapacity(1)
                .maxCapacity(100)
                .nanoClock(now::get)
                .build();
        for (int i = 0; i < 10; i++) {
            a.withPermitsBlocking(1, () -> now.addAndGet(5 * MS)); // one at a time: a quarter in use
        }
        if (rejectOne) {
            assertTrue(s.tryAcquire(4));
            AtomicInteger bodies = new AtomicInteger();
            StepVerifier.create(ReactorAdaptive.withPermits(a, 1, () -> {
                        bodies.incrementAndGet();
                        return Mono.just(1);
                    }))
                    .verifyError(SemaphoreRejectedException.class);
            assertEquals(0, bodies.get());
            s.release(4);
        }
        now.set(105 * MS); // the window's end: a use of no permits closes it
        a.startSample(0).close();
        assertEquals(0, a.inFlight());
        return a.capacity();
    }

    // ------------------------------------------------------------------ the fair share, by key

    @Test
    void theKeyedFormSamplesAndReleasesToTheKey() {
        FairShareSemaphore<String> fair = FairShareSemaphore.<String>builder(10).build();
        RecordingLimit limit = new RecordingLimit(10);
        AdaptiveFairShare<String> a = bridged(fair, limit);
        StepVerifier.create(ReactorAdaptive.withPermits(
                        a,
                        "a",
                        2,
                        () -> Mono.fromCallable(() -> {
                            assertEquals(2, fair.heldPermits("a"));
                            now.addAndGet(6 * MS);
                            return fair.heldPermits("b");
                        })))
                .expectNext(0L)
                .verifyComplete();
        assertEquals(0, fair.heldPermits("a"));
        StepVerifier.create(ReactorAdaptive.withPermits(a, "b", 1, () -> Mono.error(new TimeoutException())))
                .verifyError(TimeoutException.class);
        StepVerifier.create(ReactorAdaptive.withPermits(a, "b", 1, Mono::never))
                .expectSubscription()
                .then(() -> assertEquals(1, fair.heldPermits("b")))
                .thenCancel()
                .verify();
        assertEquals(0, fair.heldPermits("b"));

        assertTrue(fair.tryAcquire("x", 10)); // every permit held elsewhere
        Disposable waiting =
                ReactorAdaptive.withPermits(a, "b", 1, () -> Mono.just(1)).subscribe();
        assertEquals(1, fair.queueLength("b"));
        waiting.dispose();
        assertEquals(0, fair.queueLength());
        fair.release("x", 10);

        assertEquals(List.of("start=5 rtt=6 inflight=2", "start=11 rtt=0 inflight=1 dropped"), limit.samples);
        assertEquals(0, a.inFlight());
        assertEquals(10, fair.availablePermits());
    }

    // ------------------------------------------------------------------ bad input

    @Test
    void argumentErrorsAreThrownAtAssemblyWithNothingQueued() {
        Semaphore s = new Semaphore(10);
        AdaptiveCapacity a = AdaptiveCapacity.builder(s).minCapacity(4).build();
        Supplier<Mono<Integer>> body = () -> Mono.just(1);
        String tooMany = "): the number of permits must be between 0 and the present capacity (10)";
        assertEquals(
                "withPermits(11" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> ReactorAdaptive.withPermits(a, 11, body))
                        .getMessage());
        assertEquals(
                "withPermits(-1" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> ReactorAdaptive.withPermits(a, -1, body))
                        .getMessage());
        assertEquals(
                "withPermits(null, 1): the adaptive capacity is null",
                assertThrows(
                                NullPointerException.class,
                                () -> ReactorAdaptive.withPermits((AdaptiveCapacity) null, 1, body))
                        .getMessage());
        assertEquals(
                "withPermits(1, null): the body is null",
                assertThrows(NullPointerException.class, () -> ReactorAdaptive.<Integer>withPermits(a, 1, null))
                        .getMessage());

        FairShareSemaphore<String> fair =
                FairShareSemaphore.<String>builder(10).maxPermitsPerKey(3).build();
        AdaptiveFairShare<String> f =
                AdaptiveFairShare.builder(fair).minCapacity(4).build();
        assertEquals(
                "withPermits(a, 11" + tooMany,
                assertThrows(IllegalArgumentException.class, () -> ReactorAdaptive.withPermits(f, "a", 11, body))
                        .getMessage());
        assertEquals(
                "withPermits(a, 4): exceeds maxPermitsPerKey (3) of the fair share, so it could never be granted",
                assertThrows(IllegalArgumentException.class, () -> ReactorAdaptive.withPermits(f, "a", 4, body))
                        .getMessage());
        assertEquals(
                "withPermits(null, 1): the key is null",
                assertThrows(NullPointerException.class, () -> ReactorAdaptive.withPermits(f, null, 1, body))
                        .getMessage());
        assertEquals(
                "withPermits(null, a, 1): the adaptive fair share is null",
                assertThrows(
                                NullPointerException.class,
                                () -> ReactorAdaptive.withPermits((AdaptiveFairShare<String>) null, "a", 1, body))
                        .getMessage());
        assertEquals(
                "withPermits(a, 1, null): the body is null",
                assertThrows(
                                NullPointerException.class,
                                () -> ReactorAdaptive.<String, Integer>withPermits(f, "a", 1, null))
                        .getMessage());
        assertEquals(0, s.queueLength());
        assertEquals(10, s.availablePermits());
        assertEquals(0, fair.queueLength());
        assertEquals(10, fair.availablePermits());
    }

    // ------------------------------------------------------------------ the optional dependency

    /**
     * A user of {@link ReactorSemaphores} without handoff-adaptive on the class path: the classes
     * of this module, the core and Reactor in a loader that cannot see handoff-adaptive's.
     */
    @Test
    void reactorSemaphoresNeedNoAdaptiveClasses() throws Exception {
        URL[] urls = {
            ReactorSemaphores.class.getProtectionDomain().getCodeSource().getLocation(),
            Semaphore.class.getProtectionDomain().getCodeSource().getLocation(),
            Mono.class.getProtectionDomain().getCodeSource().getLocation(),
            Publisher.class.getProtectionDomain().getCodeSource().getLocation(),
            WithoutAdaptive.class.getProtectionDomain().getCodeSource().getLocation(),
        };
        try (URLClassLoader loader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader())) {
            assertThrows(ClassNotFoundException.class, () -> loader.loadClass(AdaptiveCapacity.class.getName()));
            Class<?> user = loader.loadClass(WithoutAdaptive.class.getName());
            assertTrue(user.getClassLoader() == loader);
            assertEquals("1 free while held", user.getMethod("run").invoke(null));
        }
    }

    /** User code that names no class of handoff-adaptive, run by the test above in a loader without them. */
    public static final class WithoutAdaptive {
        public static String run() {
            Semaphore s = new Semaphore(2);
            return ReactorSemaphores.withPermits(s, 1, () -> Mono.fromCallable(s::availablePermits))
                            .block() + " free while held";
        }
    }
}
