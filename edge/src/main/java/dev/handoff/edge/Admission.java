// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import dev.handoff.Permits;
import dev.handoff.adaptive.Outcome;
import dev.handoff.adaptive.SampledPermits;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The permits of one admitted request, held until its response ends. {@code release} gives them
 * back exactly once: the first call, from whichever thread, releases and returns {@code true};
 * every later or concurrent call does nothing and returns {@code false}, so an adapter may call it
 * from both a completion callback and a cancellation callback. With an adaptive limit the first
 * release also records how the request ended ({@link Outcome}); with a fixed one it only releases.
 *
 * <pre>{@code
 * gate.admitAsync(call).thenAccept(d -> {
 *     Admission a = d.admission();
 *     if (a == null) { reject(d.retryAfter()); return; }
 *     handle(call).whenComplete((r, e) -> {
 *         if (e == null) a.release(); else a.release(e);   // the adaptive classifier counts e
 *     });
 * });
 * }</pre>
 */
public final class Admission implements AutoCloseable {
    private final Permits permits;
    private final Limiter<?> limiter;
    private final AtomicBoolean released = new AtomicBoolean();

    Admission(Permits permits, Limiter<?> limiter) {
        this.permits = permits;
        this.limiter = limiter;
    }

    /**
     * Returns the permits this admission holds (or held): the request's cost.
     *
     * @return the cost, at least 1
     */
    public long cost() {
        return permits.permits();
    }

    /**
     * Releases the permits, the request counted as a success (an adaptive limit samples its time).
     * The same as {@code release(Outcome.SUCCESS)}.
     *
     * @return {@code true} if this call released them, {@code false} if they were released before
     */
    public boolean release() {
        return release(Outcome.SUCCESS);
    }

    /**
     * Releases the permits and tells an adaptive limit how the request ended: {@link Outcome#SUCCESS}
     * (its time is a latency sample), {@link Outcome#FAILURE} (an error that says nothing of load:
     * not sampled) or {@link Outcome#DROPPED} (overload, a timeout: shrinks the capacity). An adapter
     * maps its framework's status to these, for example HTTP 503 and 504 or gRPC
     * {@code DEADLINE_EXCEEDED} to {@code DROPPED}, other 5xx to {@code FAILURE}. A fixed limit
     * only releases. Only the first release counts.
     *
     * @param outcome how the request ended
     * @return {@code true} if this call released them, {@code false} if they were released before
     * @throws NullPointerException if {@code outcome} is null
     * @throws IllegalArgumentException if {@code outcome} is {@link Outcome#REJECTED}, which is for
     *     requests that never got permits (checked before anything is released)
     */
    public boolean release(Outcome outcome) {
        if (outcome == null) {
            throw new NullPointerException("release(null): the outcome is null");
        }
        if (outcome == Outcome.REJECTED) {
            throw new IllegalArgumentException("release(REJECTED): an admitted request was not rejected;"
                    + " release with SUCCESS, FAILURE or DROPPED");
        }
        if (!released.compareAndSet(false, true)) {
            return false;
        }
        if (permits instanceof SampledPermits) {
            SampledPermits sampled = (SampledPermits) permits;
            if (outcome == Outcome.DROPPED) {
                sampled.markDropped();
            } else if (outcome == Outcome.FAILURE) {
                sampled.markFailure();
            }
        }
        permits.release();
        return true;
    }

    /**
     * Releases the permits for a request that ended with {@code thrown}, counted as the adaptive
     * limit's classifier says ({@code AdaptiveCapacity.classify}: by default a drop for a timeout, a
     * failure for anything else); with a fixed limit, as {@link Outcome#of(Throwable)} says, which
     * makes no difference: it only releases. Only the first release counts.
     *
     * @param thrown what the request's handling threw or failed with
     * @return {@code true} if this call released them, {@code false} if they were released before
     * @throws NullPointerException if {@code thrown} is null
     */
    public boolean release(Throwable thrown) {
        if (thrown == null) {
            throw new NullPointerException("release((Throwable) null): nothing was thrown");
        }
        if (released.get()) {
            return false;
        }
        Outcome outcome = limiter.classify(thrown);
        return release(outcome == Outcome.SUCCESS || outcome == Outcome.REJECTED ? Outcome.FAILURE : outcome);
    }

    /**
     * Tells whether the permits were released.
     *
     * @return {@code true} once a {@code release} call (or {@link #close()}) has released them
     */
    public boolean isReleased() {
        return released.get();
    }

    /** Releases the permits as {@link #release()} does (a success); nothing if released before. */
    @Override
    public void close() {
        release();
    }

    /**
     * Gives back the permits of a grant that came after the request's decision was settled (it
     * was cancelled or timed out): not a sample of latency, so an adaptive limit sees a failure.
     */
    void abandon() {
        release(Outcome.FAILURE);
    }

    /**
     * Describes the admission.
     *
     * @return for example {@code "Admission[cost=3, released=false]"}
     */
    @Override
    public String toString() {
        return "Admission[cost=" + cost() + ", released=" + released.get() + "]";
    }
}
