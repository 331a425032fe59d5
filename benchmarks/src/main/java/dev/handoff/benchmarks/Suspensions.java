// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import kotlin.Unit;
import kotlin.coroutines.Continuation;

/**
 * Calls a suspending {@code acquire} with an explicit continuation, which Java can do directly:
 * a Kotlin {@code suspend fun acquire(permits: Long)} is {@code Object acquire(long, Continuation)}
 * on the JVM, returning {@code COROUTINE_SUSPENDED} when it suspends. The benchmarks use it to run
 * an uncontended acquire without a coroutine around it, and to count real suspensions.
 */
final class Suspensions {
    private Suspensions() {}

    /**
     * {@code permits.acquire(n)} with {@code continuation} as its caller's continuation.
     *
     * @return {@code COROUTINE_SUSPENDED} if it suspended, otherwise its result.
     */
    static Object acquire(SuspendingPermits permits, long n, Continuation<? super Unit> continuation) {
        return permits.acquire(n, continuation);
    }
}
