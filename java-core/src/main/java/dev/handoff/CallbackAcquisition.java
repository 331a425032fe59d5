// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/** The node of the callback faces ({@code acquireThen(n, waker)}, {@code lockThen(waker)}, ...): a user's {@link Waker}. */
final class CallbackAcquisition extends Acquisition {

    private final Waker waker;

    CallbackAcquisition(FifoCore owner, long permits, Runnable onGrant, Waker waker) {
        super(owner, permits, onGrant);
        this.waker = waker;
    }

    @Override
    protected boolean claim() {
        return waker.claim();
    }

    @Override
    boolean claimsAfterUnlock() {
        return true; // user code: never under the lock
    }

    @Override
    protected void wake() {
        waker.wake();
    }
}
