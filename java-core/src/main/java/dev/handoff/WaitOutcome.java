// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * How a wait in a semaphore's queue ended, as told to a {@link WaitListener}.
 */
public enum WaitOutcome {
    /** The acquisition was granted: its permits now belong to the waiter. */
    GRANTED,
    /**
     * The waiter gave up: {@link Acquisition#cancel()}, a cancelled future or coroutine, an
     * interrupted blocking call, or a grant declined by {@link Waker#claim()}. Nothing is held.
     */
    CANCELLED,
    /**
     * A timed wait ran out of time: {@code tryAcquireBlocking(n, timeout)}, {@code tryAcquireAsync},
     * {@code orTimeout} on an acquisition's future (or on {@code withPermitsAsync}'s), Kotlin's
     * {@code withTimeout} and {@code tryAcquire(permits, timeout)}. Nothing is held. If a release
     * reaches the wait in the instant between its timer firing and its withdrawal, the wait
     * declines that grant; a future's timeout is still reported here, a Kotlin {@code withTimeout}
     * then as {@link #CANCELLED} (its cancellation is all the semaphore sees at the grant).
     */
    TIMED_OUT,
    /** The semaphore was closed while the acquisition waited. Nothing is held. */
    CLOSED,
    /**
     * The acquisition failed: its claim threw, or {@link Semaphore#setCapacity(long)} shrank the
     * capacity below its weight. Nothing is held.
     */
    FAILED
}
