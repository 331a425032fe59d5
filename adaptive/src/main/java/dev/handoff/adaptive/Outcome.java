// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import java.io.InterruptedIOException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * How one use of permits ended, as {@link AdaptiveCapacity} counts it. The scoped calls classify
 * it themselves; a {@link SampledPermits} handle is a success unless marked otherwise before it is
 * closed.
 *
 * <ul>
 *   <li>{@link #SUCCESS}: the work ended normally; its hold time is a latency sample.</li>
 *   <li>{@link #FAILURE}: the work threw. Its hold time is <em>not</em> a latency sample (an error
 *       that returns at once says nothing about queueing), and it does not shrink the capacity:
 *       mark {@link #DROPPED} for errors that mean overload.</li>
 *   <li>{@link #DROPPED}: the work held permits and timed out (by default a
 *       {@link TimeoutException}, an {@link InterruptedIOException} such as a
 *       {@code SocketTimeoutException}, or an {@code HttpTimeoutException}; see {@link #of}), or a
 *       handle was marked dropped. Overload: the built-in algorithm shrinks the capacity, and
 *       the hold time is never read as a fast sample.</li>
 *   <li>{@link #REJECTED}: the work never got permits (the queue was full, a wait timed out, a
 *       {@code tryAcquire} found none). Counted as a drop; it means the demand is above the
 *       capacity, and lets the capacity grow if latency allows; it never counts as latency.</li>
 * </ul>
 */
public enum Outcome {
    /** The work ended normally. */
    SUCCESS,
    /** The work threw (not a timeout). */
    FAILURE,
    /** The work held permits and timed out, or was marked dropped. */
    DROPPED,
    /** The work never got permits: rejected, or its wait timed out. */
    REJECTED;

    /**
     * Returns the outcome the scoped calls record, by default, for work that threw {@code thrown}:
     * {@link #DROPPED} for a timeout — a {@link TimeoutException}, an
     * {@link InterruptedIOException} (a {@link java.net.SocketTimeoutException} among them) or a
     * {@code java.net.http.HttpTimeoutException} (also as the cause of a
     * {@link CompletionException} or an {@link ExecutionException}) — and {@link #FAILURE} for
     * anything else. For code that samples with {@link AdaptiveCapacity#startSample(long)} and
     * classifies as they do (with a classifier set on the builder, use
     * {@link AdaptiveCapacity#classify(Throwable)}).
     *
     * <pre>{@code
     * callDownstream().whenComplete((r, e) -> {
     *     if (e != null && Outcome.of(e) == Outcome.DROPPED) p.markDropped();
     *     else if (e != null) p.markFailure();
     *     p.close();
     * });
     * }</pre>
     *
     * @param thrown what the work threw
     * @return {@link #DROPPED} or {@link #FAILURE}
     * @throws NullPointerException if {@code thrown} is null
     */
    public static Outcome of(Throwable thrown) {
        if (thrown == null) {
            throw new NullPointerException("of(null): nothing was thrown");
        }
        Throwable cause = unwrap(thrown);
        return cause instanceof TimeoutException || cause instanceof InterruptedIOException || isHttpTimeout(cause)
                ? DROPPED
                : FAILURE;
    }

    /** Whether {@code thrown} is a {@code java.net.http.HttpTimeoutException}, named so that this module needs no java.net.http. */
    private static boolean isHttpTimeout(Throwable thrown) {
        for (Class<?> c = thrown.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals("java.net.http.HttpTimeoutException")) {
                return true;
            }
        }
        return false;
    }

    /** The exception inside CompletionExceptions and ExecutionExceptions, as the faces report it. */
    static Throwable unwrap(Throwable thrown) {
        Throwable cause = thrown;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
