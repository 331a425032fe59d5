// SPDX-License-Identifier: Apache-2.0
package dev.handoff.reactor;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.adaptive.Outcome;
import dev.handoff.adaptive.SampledPermits;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import reactor.core.publisher.Mono;

/**
 * Reactor faces of {@code handoff-adaptive}: the scoped calls of {@link AdaptiveCapacity} and
 * {@link AdaptiveFairShare} for a {@code Mono}, which take permits when subscribed, time how long
 * the body holds them, classify how it ended, and release them exactly once.
 *
 * <pre>{@code
 * Mono<Response> call = ReactorAdaptive.withPermits(adaptive, 1,
 *         () -> client.send(request).timeout(Duration.ofSeconds(2)));   // a timeout is a drop
 * }</pre>
 *
 * <p>Each operator is {@link ReactorSemaphores#withPermits(Semaphore, long, Supplier)} on the
 * adaptive object's semaphore (or fair share, for the key), with the permits sampled from the grant
 * to the release: it is lazy, releases exactly once on complete, error or cancel, and a cancel that
 * races the grant leaves nothing held. What each ending counts as, for the algorithm:
 * <ul>
 * <li><b>Success</b>: the body's {@code Mono} completes (with or without a value). Its hold time is
 *     a latency sample. The value is emitted after the release.</li>
 * <li><b>Drop</b>: the body fails with a {@link TimeoutException}, as Reactor's
 *     {@code timeout(..)} fails it <em>inside</em> the body, or with an I/O timeout. Overload: the
 *     capacity shrinks. (The adaptive object's {@code classify}, set by its builder's
 *     {@code classifier}, decides how the body's errors count.)</li>
 * <li><b>Failure</b>: the body fails with anything else, or the body supplier throws or returns
 *     {@code null}; and a cancel after the grant (a {@code timeout(..)} <em>outside</em> the
 *     operator, {@code take}, a disposed subscription), which says nothing about the downstream.
 *     Neither a latency sample nor overload. Put the timeout inside the body to have it count as a
 *     drop.</li>
 * <li><b>Rejection</b>: a queue bound refuses the wait; the subscription fails with
 *     {@link SemaphoreRejectedException}, nothing is held, the body does not run.</li>
 * <li><b>Nothing</b>: a cancel before the grant withdraws the wait; a grant that wins that race is
 *     released by the library, unsampled.</li>
 * </ul>
 *
 * <p>There is no {@code Flux} form: the hold time of a stream includes the pace of whoever
 * consumes it, which is not a latency of the downstream. Sample a stream's call yourself with
 * {@link AdaptiveCapacity#startSample(long)} where it makes sense.
 *
 * <p>{@code handoff-adaptive} is an optional dependency of this module, as reactor-core is: add
 * both to use this class. {@link ReactorSemaphores} does not need it.
 */
public final class ReactorAdaptive {

    private ReactorAdaptive() {}

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding {@code n} permits of the
     * adaptive capacity's semaphore, and samples the hold time and the outcome (see the class
     * documentation): on each subscription, acquires, then subscribes to {@code body.get()}, and
     * releases exactly once when it completes, fails or is cancelled.
     *
     * <pre>{@code
     * Mono<Page> page = ReactorAdaptive.withPermits(adaptive, 1,
     *         () -> http.get(url).timeout(Duration.ofSeconds(2)));
     * }</pre>
     *
     * @param adaptive the adaptive capacity to take permits from
     * @param n the number of permits, from {@code 0} to the present {@link AdaptiveCapacity#capacity()}
     * @param body supplies the work to run holding the permits; called once per subscription,
     *     after the grant
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > adaptive.capacity()}
     * @throws NullPointerException if {@code adaptive} or {@code body} is null
     */
    public static <T> Mono<T> withPermits(AdaptiveCapacity adaptive, long n, Supplier<? extends Mono<T>> body) {
        if (adaptive == null) {
            throw new NullPointerException("withPermits(null, " + n + "): the adaptive capacity is null");
        }
        String arguments = Long.toString(n);
        checkPermits(arguments, n, adaptive.capacity());
        checkBody(arguments, body);
        Semaphore semaphore = adaptive.semaphore();
        return sampled(
                ReactorSemaphores.lazyAcquisition(() -> semaphore.acquireAsync(n)),
                n,
                adaptive::recordRejection,
                () -> adaptive.startSample(n),
                adaptive::classify,
                body);
    }

    /**
     * Runs the {@code Mono} that {@code body} supplies while holding {@code n} permits of the
     * adaptive fair share for {@code key} (in fair order across keys, FIFO within {@code key}),
     * and samples the hold time and the outcome (see the class documentation): on each
     * subscription, acquires, then subscribes to {@code body.get()}, and releases to {@code key}
     * exactly once when it completes, fails or is cancelled.
     *
     * <pre>{@code
     * Mono<Rows> rows = ReactorAdaptive.withPermits(adaptive, request.tenant(), 1,
     *         () -> database.query(sql).timeout(Duration.ofSeconds(2)));
     * }</pre>
     *
     * @param adaptive the adaptive fair share to take permits from
     * @param key the key the permits are for
     * @param n the number of permits, from {@code 0} to the present {@link AdaptiveFairShare#capacity()} and
     *     the fair share's per-key cap
     * @param body supplies the work to run holding the permits; called once per subscription,
     *     after the grant
     * @param <K> the key type
     * @param <T> the value type
     * @return a lazy {@code Mono} with {@code body}'s outcome
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > adaptive.capacity()} or
     *     {@code n} exceeds the per-key cap; a share of {@code key} out of range fails the
     *     subscription instead
     * @throws NullPointerException if {@code adaptive}, {@code key} or {@code body} is null
     */
    public static <K, T> Mono<T> withPermits(
            AdaptiveFairShare<K> adaptive, K key, long n, Supplier<? extends Mono<T>> body) {
        if (adaptive == null) {
            throw new NullPointerException(
                    "withPermits(null, " + key + ", " + n + "): the adaptive fair share is null");
        }
        if (key == null) {
            throw new NullPointerException("withPermits(null, " + n + "): the key is null");
        }
        String arguments = key + ", " + n;
        checkPermits(arguments, n, adaptive.capacity());
        FairShareSemaphore<K> fairShare = adaptive.fairShare();
        long cap = fairShare.maxPermitsPerKey();
        if (n > cap) {
            throw new IllegalArgumentException("withPermits(" + arguments + "): exceeds maxPermitsPerKey (" + cap
                    + ") of the fair share, so it could never be granted");
        }
        checkBody(arguments, body);
        return sampled(
                ReactorSemaphores.lazyAcquisition(() -> fairShare.acquireAsync(key, n)),
                n,
                adaptive::recordRejection,
                () -> adaptive.startSample(key, n),
                adaptive::classify,
                body);
    }

    /**
     * The operator of both faces. {@code acquisition} is the one of {@link ReactorSemaphores}:
     * exact under a racing cancel, and a grant nobody receives is released through the core's
     * handle, so it is never sampled. A grant that is received becomes a sample at once (the
     * sample releases by count, to the key; the core's handle is not used again), and
     * {@code usingWhen} ends it exactly once: one of its three cleanups runs, once.
     */
    private static <T> Mono<T> sampled(
            Mono<Permits> acquisition,
            long n,
            LongConsumer recordRejection,
            Supplier<SampledPermits> startSample,
            Function<Throwable, Outcome> classify,
            Supplier<? extends Mono<T>> body) {
        Mono<SampledPermits> granted = acquisition
                .doOnError(SemaphoreRejectedException.class, rejected -> recordRejection.accept(n))
                .map(permits -> startSample.get());
        return Mono.usingWhen(
                granted,
                sample -> body.get(),
                sample -> Mono.fromRunnable(sample::release),
                (sample, failure) -> Mono.fromRunnable(() -> {
                    Outcome outcome = classify.apply(failure);
                    if (outcome == Outcome.DROPPED) {
                        sample.markDropped();
                    } else if (outcome != Outcome.SUCCESS) {
                        sample.markFailure();
                    }
                    sample.release();
                }),
                sample -> Mono.fromRunnable(() -> {
                    sample.markFailure(); // cancelled after the grant: no latency, no overload
                    sample.release();
                }));
    }

    private static void checkPermits(String arguments, long n, long capacity) {
        if (n < 0 || n > capacity) {
            throw new IllegalArgumentException("withPermits(" + arguments + "): the number of permits must be between 0"
                    + " and the present capacity (" + capacity + ")");
        }
    }

    private static void checkBody(String arguments, Supplier<?> body) {
        if (body == null) {
            throw new NullPointerException("withPermits(" + arguments + ", null): the body is null");
        }
    }
}
