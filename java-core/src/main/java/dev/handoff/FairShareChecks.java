// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The argument checks of {@link FairShareSemaphore}'s faces and their messages, which name the
 * call the user made: {@code n} first, then null arguments, then the bounds (the capacity, the
 * per-key cap), as on {@link Semaphore}.
 */
final class FairShareChecks {
    private FairShareChecks() {}

    /** The refusal of a request that would have to queue past a queue bound (nothing changed). */
    static SemaphoreRejectedException queueFull(
            String call,
            Object key,
            long n,
            int waiting,
            int maxQueueLength,
            long waitingPermits,
            long maxQueuedPermits,
            long keyQueued,
            long maxQueuedPermitsPerKey) {
        return new SemaphoreRejectedException(call + "(" + key + ", " + n + "): rejected, the wait queue is full"
                + " (queue length " + waiting + " + 1 > maxQueueLength " + maxQueueLength
                + ", or queued permits " + waitingPermits + " + " + n + " > maxQueuedPermits " + maxQueuedPermits
                + ", or queued permits of the key " + keyQueued + " + " + n + " > maxQueuedPermitsPerKey "
                + maxQueuedPermitsPerKey + ")");
    }

    /** The arguments of a face that waits: {@code n}, then the key, the capacity and the cap. */
    static void request(String call, @Nullable Object key, long n, FifoCore core, long maxPermitsPerKey) {
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (key == null) {
            throw new NullPointerException(call + "(null, " + n + "): the key is null");
        }
        long c = core.capacity;
        if (n > c) {
            throw new IllegalArgumentException(
                    call + "(" + key + ", " + n + "): exceeds the capacity " + c + ", so it could never be granted");
        }
        if (n > maxPermitsPerKey) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): exceeds maxPermitsPerKey "
                    + maxPermitsPerKey + ", so it could never be granted");
        }
    }

    /** As {@link #request(String, Object, long, FifoCore, long)}, the face's last argument not null (checked after {@code n}). */
    static void request(
            String call,
            @Nullable Object key,
            long n,
            @Nullable Object last,
            String what,
            FifoCore core,
            long maxPermitsPerKey) {
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (last == null) {
            throw new NullPointerException(call + "(" + key + ", " + n + ", null): the " + what + " is null");
        }
        request(call, key, n, core, maxPermitsPerKey);
    }

    /** The arguments of a face that never waits: {@code n}, then the key. */
    static void countAndKey(String call, @Nullable Object key, long n) {
        if (n < 0) {
            throw negative(call, key, n);
        }
        Objects.requireNonNull(key, () -> call + "(null, " + n + "): the key is null");
    }

    /** Before a blocking face waits: clears the interrupt flag, throwing if it was set. */
    static void notInterrupted(String call, Object key, long n) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(call + "(" + key + ", " + n + "): interrupted before waiting");
        }
    }

    private static IllegalArgumentException negative(String call, @Nullable Object key, long n) {
        return new IllegalArgumentException(
                call + "(" + key + ", " + n + "): the number of permits must not be negative");
    }

    /** {@code a + b} for two non-negative longs, saturated at {@code Long.MAX_VALUE}. */
    static long saturatedAdd(long a, long b) {
        long s = a + b;
        return s < 0 ? Long.MAX_VALUE : s;
    }

    /** The failure of a {@code release(key, n)} that exceeds what the key holds; nothing changed. */
    static IllegalStateException overRelease(String call, Object key, long n, long held) {
        return new IllegalStateException(call + "(" + key + ", " + n + "): exceeds the " + held
                + " permits held by that key, so nothing was released");
    }
}
