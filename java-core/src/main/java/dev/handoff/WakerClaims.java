// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * Whether a user's {@link Waker} has a {@link Waker#claim()} of its own. The claim of a waker that
 * keeps the interface's default (which takes every grant) is no user code: such a node claims under
 * the lock like an internal face's, and only wakers that override it pay for the claim after the
 * lock (a provisional grant, asked and settled once the lock is released; see "Claims after the
 * lock" in HandoffCore). Answered once per waker class.
 */
final class WakerClaims {

    private WakerClaims() {}

    private static final ClassValue<Boolean> OVERRIDES_CLAIM = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            try {
                return type.getMethod("claim").getDeclaringClass() != Waker.class;
            } catch (NoSuchMethodException | RuntimeException unexpected) {
                return true; // cannot tell: treat it as user code
            }
        }
    };

    /** Whether {@code waker}'s class overrides {@link Waker#claim()} (a claim that is user code). */
    static boolean ownClaim(Waker waker) {
        return OVERRIDES_CLAIM.get(waker.getClass());
    }
}
