// SPDX-License-Identifier: Apache-2.0
package dev.handoff.jfr;

import dev.handoff.WaitListener;
import dev.handoff.WaitOutcome;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * A {@link WaitListener} of a {@link dev.handoff.Semaphore}, {@link dev.handoff.Mutex} or
 * {@link dev.handoff.RwLock} that records a JDK Flight Recorder event,
 * {@code dev.handoff.SemaphoreWait} (category {@code handoff}), for each wait at least as long as
 * the event's {@code waitThreshold} setting ({@value WaitThreshold#DEFAULT} by default, see
 * {@link WaitThreshold}):
 *
 * <pre>{@code
 * Semaphore uploads = Semaphore.builder(64L << 20)
 *         .name("uploads")                    // the events carry this name
 *         .listener(new JfrWaitListener())
 *         .build();
 * }</pre>
 *
 * <p>then start the application with {@code -XX:StartFlightRecording}, or record in code:
 * {@code recording.enable("dev.handoff.SemaphoreWait").with("waitThreshold", "5 ms")}. The event's
 * fields: {@code semaphore} (the primitive's name, see below), {@code permits}, {@code outcome}
 * ({@code granted}, {@code cancelled}, {@code timed_out}, {@code closed} or {@code failed}, see
 * {@link WaitOutcome}), {@code waitersAhead} (the queue length when the wait began) and
 * {@code waitTime}.
 *
 * <p><b>The name in the events.</b> A listener made with {@link #JfrWaitListener()} takes the name
 * of the primitive it is given to, when that primitive is built with a name
 * ({@code builder(..).name("uploads")}): it is told the name by {@link #attached(String)}. It may
 * serve several primitives of the same name; given to a second primitive of another name, it
 * refuses, and that primitive's {@code build()} throws {@link IllegalStateException} (the events
 * could not say which primitive waited: make one listener per primitive). Given only unnamed
 * primitives, its events have no name ({@code null}). A listener made with
 * {@link #JfrWaitListener(String)} writes that name whatever the primitives' names, and may serve
 * any number of primitives, named alike or not.
 *
 * <p>The event is committed when the wait ends, on the thread that ended it (the releasing,
 * cancelling, closing or timing-out one), so its start time is the end of the wait and it has no
 * stack trace. Only waits are seen: an acquisition granted at once records nothing. When no
 * recording has the event enabled, {@link #settled} allocates nothing and returns after one check.
 * Combine with other listeners with {@link WaitListener#all} (which passes the name on).
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

    /** Whether the name was given to the constructor: then {@link #attached} leaves it alone. */
    private final boolean nameGiven;

    /**
     * The name written in each event: the constructor's, or set once by {@link #attached} (under
     * {@code this}); read without a lock by {@link #settled} on any thread.
     */
    private volatile String semaphoreName;

    /**
     * Makes a listener whose events carry the name of the primitive it is given to (see the class
     * documentation): name the primitive in its builder.
     *
     * <pre>{@code
     * Mutex journal = Mutex.builder().name("journal").listener(new JfrWaitListener()).build();
     * }</pre>
     */
    public JfrWaitListener() {
        this.nameGiven = false;
    }

    /**
     * Makes a listener whose events carry {@code semaphoreName}, whatever the names of the
     * primitives it is given to.
     *
     * @param semaphoreName the name written in each event, not blank
     * @throws NullPointerException if {@code semaphoreName} is null
     * @throws IllegalArgumentException if {@code semaphoreName} is blank
     */
    public JfrWaitListener(String semaphoreName) {
        if (semaphoreName == null) {
            throw new NullPointerException("new JfrWaitListener(null): the semaphore's name is null");
        }
        if (semaphoreName.isBlank()) {
            throw new IllegalArgumentException(
                    "new JfrWaitListener(\"" + semaphoreName + "\"): the semaphore's name must not be blank");
        }
        this.nameGiven = true;
        this.semaphoreName = semaphoreName;
    }

    /**
     * Returns the name written in each event: the one given to the constructor, else the name of
     * the primitive this was given to, else {@code null} (no named primitive yet).
     *
     * @return the name in the events, or {@code null}
     */
    public @Nullable String semaphoreName() {
        return semaphoreName;
    }

    /**
     * Takes the name of the primitive this listener was given to, if none was given to the
     * constructor (see {@link WaitListener#attached(String)}). The same name again changes
     * nothing; a different one is refused, so that the events never mix two primitives under
     * one name.
     *
     * @param name the primitive's name
     * @throws IllegalStateException if this listener, made without a name, already serves a
     *     primitive of another name; the primitive being built is then not built
     */
    @Override
    public synchronized void attached(String name) {
        if (nameGiven) {
            return;
        }
        String current = semaphoreName;
        if (current == null) {
            semaphoreName = name;
        } else if (!current.equals(name)) {
            throw new IllegalStateException("attached(\"" + name + "\"): this JfrWaitListener serves the primitive"
                    + " named \"" + current + "\" already, and its events carry one name; give each primitive its own"
                    + " JfrWaitListener, or name the listener (new JfrWaitListener(\"...\")) to record both under it");
        }
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

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "JfrWaitListener[uploads]"}, or {@code "JfrWaitListener[unnamed]"}
     */
    @Override
    public String toString() {
        String name = semaphoreName;
        return "JfrWaitListener[" + (name == null ? "unnamed" : name) + "]";
    }
}
