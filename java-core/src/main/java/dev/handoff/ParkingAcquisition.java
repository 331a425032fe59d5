// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.locks.LockSupport;

/**
 * A node for a parked thread: the waker is the node itself. Its wake() runs no user code, so
 * it is never deferred (see wakeAll). A grant that wins against a timeout or interrupt may
 * leave a stray unpark on the thread, as in java.util.concurrent's locks; park callers must
 * loop on their condition anyway.
 *
 */
final class ParkingAcquisition extends HandleAcquisition {

    private final Thread thread = Thread.currentThread();

    /** The least it takes: {@code permits} for an exact request, less for an up-to one. */
    private final long min;

    /**
     * {@code back}: once granted, this node is the caller's {@link Permits} handle, giving back
     * through the face's release by count; null for a timed wait, whose caller gets a boolean.
     */
    ParkingAcquisition(FifoCore owner, long min, long max, Runnable onGrant, PermitHandles.GiveBack back) {
        super(owner, max, onGrant, back);
        this.min = min;
    }

    @Override
    long minimum() {
        return min;
    }

    @Override
    boolean parksThread() {
        return true;
    }

    @Override
    protected void wake() {
        if (thread != Thread.currentThread()) { // settled inside enqueue: nobody is parked
            LockSupport.unpark(thread);
        }
    }
}
