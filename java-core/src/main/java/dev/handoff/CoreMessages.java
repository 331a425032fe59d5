// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * The messages of the core's exceptions: each names the call, the value and the limit.
 */
final class CoreMessages {

    private CoreMessages() {}

    /** The failure of a waiting node whose minimum the capacity can no longer cover. */
    static IllegalStateException tooHeavy(String call, long weight, long capacity) {
        return new IllegalStateException(call + ": the weight " + weight + " exceeds the capacity " + capacity
                + " (set by setCapacity), so it could never be granted");
    }

    /** The exception a blocking caller gets when its grant failed: the cause itself if unchecked. */
    static RuntimeException failedGrant(String call, Throwable cause) {
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        if (cause instanceof RuntimeException) {
            return (RuntimeException) cause;
        }
        return new IllegalStateException(call + ": the grant failed", cause);
    }

    /**
     * The call to name in an error message about {@code a}: the one {@link Acquisition#callName()}
     * gives (an adapter naming its own method), else {@code call}. Only on the paths that throw,
     * possibly under the lock, so a callName() that throws (or calls back, which the lock refuses)
     * leaves {@code call}.
     */
    static String callOf(Acquisition a, String call) {
        try {
            String own = a.callName();
            return own != null ? own : call;
        } catch (RuntimeException e) {
            return call;
        }
    }

    /**
     * A call's description for a message. The hot faces (startAcquisition, acquireAsync,
     * acquireBlocking) pass a constant name and this adds the weight, {@code "name(n)"}, only
     * when a message is built, so a wait allocates no string; other calls pass their full
     * description, which is returned as it is.
     */
    static String describe(String call, long n) {
        return call.indexOf('(') >= 0 ? call : call + "(" + n + ")";
    }

    /**
     * As {@link #describe(String, long)} for a request of {@code min} to {@code max} permits:
     * {@code "name(min, max)"} for an up-to request, {@code "name(n)"} for an exact one.
     */
    static String describe(String call, long min, long max) {
        return min == max || call.indexOf('(') >= 0 ? describe(call, max) : call + "(" + min + ", " + max + ")";
    }

    static SemaphoreClosedException closedException(String call) {
        return new SemaphoreClosedException(call + ": the semaphore is closed");
    }
}
