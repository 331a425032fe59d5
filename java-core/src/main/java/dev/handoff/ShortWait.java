// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.locks.LockSupport;

/**
 * One turn of waiting for a short step that another thread is taking outside every lock (a claim
 * being answered, a handle being released, a provisional grant being confirmed): a few
 * instructions unless that thread was descheduled in the middle. Polls first, then yields the core
 * to it a bounded number of times, then parks briefly on {@code blocker} (no monitor, so a virtual
 * thread is not pinned) rather than keep a core busy. The caller loops while the step is pending
 * and counts its turns from 1.
 */
final class ShortWait {

    /** Turns that only poll. */
    static final int SPINS = 64;

    /** Turns after the polls that yield; parks from then on. */
    static final int YIELDS = 64;

    private ShortWait() {}

    /** Turn {@code waits} (from 1) of the wait: polls, yields, or parks up to {@code parkNanos}. */
    static void pause(Object blocker, int waits, long parkNanos) {
        if (waits < SPINS) {
            Thread.onSpinWait();
        } else if (waits < SPINS + YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(blocker, parkNanos);
        }
    }

    /** Whether turn {@code waits} would park: a bounded wait checks its bound from then on. */
    static boolean parks(int waits) {
        return waits >= SPINS + YIELDS;
    }
}
