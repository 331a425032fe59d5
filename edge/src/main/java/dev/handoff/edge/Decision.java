// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The answer of {@link AdmissionControl} to one request: admitted, with the {@link Admission} that
 * holds its permits, or shed, with a {@link ShedReason} and how long the client should wait before
 * it tries again. Immutable.
 *
 * <pre>{@code
 * Decision d = gate.tryAdmit(request);
 * if (!d.isAdmitted()) {
 *     response.setHeader("Retry-After", Long.toString(d.retryAfterSeconds()));
 *     response.sendError(503);
 *     return;
 * }
 * try (Admission a = d.admission()) {
 *     chain.doFilter(request, response);
 * }
 * }</pre>
 */
public final class Decision {
    private final @Nullable Admission admission;
    private final @Nullable ShedReason reason;
    private final Duration retryAfter;

    private Decision(@Nullable Admission admission, @Nullable ShedReason reason, Duration retryAfter) {
        this.admission = admission;
        this.reason = reason;
        this.retryAfter = retryAfter;
    }

    static Decision admitted(Admission admission) {
        return new Decision(admission, null, Duration.ZERO);
    }

    static Decision shed(ShedReason reason, Duration retryAfter) {
        return new Decision(null, Objects.requireNonNull(reason), retryAfter);
    }

    /**
     * Tells whether the request was admitted: then run its handler and release
     * {@link #admission()} when its response ends.
     *
     * @return {@code true} if admitted, {@code false} if shed
     */
    public boolean isAdmitted() {
        return admission != null;
    }

    /**
     * Returns the handle of the admitted request's permits, to release exactly once when its
     * response ends, however it ends.
     *
     * @return the handle, or {@code null} if the request was shed
     */
    public @Nullable Admission admission() {
        return admission;
    }

    /**
     * Returns why the request was shed.
     *
     * @return the reason, or {@code null} if the request was admitted
     */
    public @Nullable ShedReason shedReason() {
        return reason;
    }

    /**
     * Returns how long a shed request's client should wait before it tries again: the gate's
     * {@link AdmissionControl.Builder#retryAfter(Duration) retryAfter}.
     *
     * @return the hint, {@link Duration#ZERO} if the request was admitted
     */
    public Duration retryAfter() {
        return retryAfter;
    }

    /**
     * Returns {@link #retryAfter()} in whole seconds, rounded up, as the HTTP {@code Retry-After}
     * header takes it: 1 for a hint of 200 ms, 0 only for a zero hint.
     *
     * @return the hint in seconds, {@code 0} if the request was admitted
     */
    public long retryAfterSeconds() {
        long seconds = retryAfter.getSeconds();
        return retryAfter.getNano() > 0 ? seconds + 1 : seconds;
    }

    /**
     * Describes the decision.
     *
     * @return for example {@code "Decision[admitted, cost=3]"} or
     *     {@code "Decision[shed, reason=TIMED_OUT, retryAfter=PT1S]"}
     */
    @Override
    public String toString() {
        return admission != null
                ? "Decision[admitted, cost=" + admission.cost() + "]"
                : "Decision[shed, reason=" + reason + ", retryAfter=" + retryAfter + "]";
    }
}
