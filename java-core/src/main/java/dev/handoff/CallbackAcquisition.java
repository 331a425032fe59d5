// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/** The node of the callback faces ({@code acquireThen(n, waker)}, {@code lockThen(waker)}, ...): a user's {@link Waker}. */
final class CallbackAcquisition extends Acquisition {

    private final Waker waker;

    /** Whether the waker has a claim() of its own (see {@link WakerClaims}). */
    private final boolean ownClaim;

    CallbackAcquisition(FifoCore owner, long permits, Runnable onGrant, Waker waker) {
        super(owner, permits, onGrant);
        this.waker = waker;
        this.ownClaim = WakerClaims.ownClaim(waker);
    }

    @Override
    protected boolean claim() {
        return !ownClaim || waker.claim(); // the default claim takes every grant
    }

    @Override
    boolean claimsAfterUnlock() {
        return ownClaim; // user code: never under the lock
    }

    @Override
    protected void wake() {
        waker.wake();
    }
}
