// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import dev.handoff.WaitListener;
import dev.handoff.WaitOutcome;
import java.util.Locale;

/**
 * A semaphore's {@link WaitListener} that records a JDK Flight Recorder event,
 * {@code dev.handoff.SemaphoreWait} (category {@code handoff}), for each wait at least as long as
 * the event's {@code waitThreshold} setting ({@value WaitThreshold#DEFAULT} by default, see
 * {@link WaitThreshold}):
 *
 * <pre>{@code
 * Semaphore uploads = Semaphore.builder(64L << 20)
 *         .waitListener(new JfrWaitListener("uploads"))
 *         .build();
 * }</pre>
 *
 * <p>then start the application with {@code -XX:StartFlightRecording}, or record in code:
 * {@code recording.enable("dev.handoff.SemaphoreWait").with("waitThreshold", "5 ms")}. The event's
 * fields: {@code semaphore} (the name given here), {@code permits}, {@code outcome}
 * ({@code granted}, {@code cancelled}, {@code timed_out}, {@code closed} or {@code failed}, see
 * {@link WaitOutcome}), {@code waitersAhead} (the queue length when the wait began) and
 * {@code waitTime}.
 *
 * <p>The event is committed when the wait ends, on the thread that ended it (the releasing,
 * cancelling, closing or timing-out one), so its start time is the end of the wait and it has no
 * stack trace. Only waits are seen: an acquisition granted at once records nothing. When no
 * recording has the event enabled, {@link #settled} allocates nothing and returns after one check.
 * Combine with other listeners with {@link WaitListener#all}; one listener may serve several
 * semaphores of the same name.
 */
public final class JfrWaitListener implements WaitListener {

    private static final String[] OUTCOME_NAMES;

    static {
        WaitOutcome[] outcomes = WaitOutcome.values();
        OUTCOME_NAMES = new String[outcomes.length];
        for (WaitOutcome o : outcomes) {
            OUTCOME_NAMES[o.ordinal()] = o.name().toLowerCase(Locale.ROOT);
        }
    }

    /** Never committed: asked only whether the event type is enabled, which needs no allocation. */
    private static final SemaphoreWaitEvent PROBE = new SemaphoreWaitEvent();

    private final String semaphoreName;

    /**
     * Makes a listener whose events carry {@code semaphoreName}.
     *
     * @param semaphoreName the name of the semaphore, written in each event, not blank
     * @throws NullPointerException if {@code semaphoreName} is null
     * @throws IllegalArgumentException if {@code semaphoreName} is blank
     */
    public JfrWaitListener(String semaphoreName) {
        if (semaphoreName == null) {
            throw new NullPointerException("new JfrWaitListener(null): the semaphore's name is null");
        }
        if (semaphoreName.isBlank()) {
            throw new IllegalArgumentException("new JfrWaitListener(\"" + semaphoreName
                    + "\"): the semaphore's name must not be blank");
        }
        this.semaphoreName = semaphoreName;
    }

    /**
     * Returns the name written in each event.
     *
     * @return the semaphore's name
     */
    public String semaphoreName() {
        return semaphoreName;
    }

    /**
     * Commits a {@code dev.handoff.SemaphoreWait} event if the event is enabled and the wait lasted
     * at least its {@code waitThreshold}. See {@link WaitListener#settled}.
     *
     * @param permits the weight
     * @param outcome how the wait ended
     * @param waitNanos how long it waited
     * @param waitersAhead the queue length when it joined
     */
    @Override
    public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
        if (!PROBE.isEnabled()) {
            return;
        }
        SemaphoreWaitEvent event = new SemaphoreWaitEvent();
        event.waitTime = waitNanos;
        if (!event.shouldCommit()) { // enabled, and the wait passes waitThreshold
            return;
        }
        event.semaphore = semaphoreName;
        event.permits = permits;
        event.outcome = OUTCOME_NAMES[outcome.ordinal()];
        event.waitersAhead = waitersAhead;
        event.commit();
    }

    @Override
    public String toString() {
        return "JfrWaitListener[" + semaphoreName + "]";
    }
}
