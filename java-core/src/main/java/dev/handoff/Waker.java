// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * The continuation of a waiting {@link Acquisition}: what the semaphore runs when the wait is over.
 *
 * <p>One abstract method, so a lambda is a {@code Waker}. A waker also runs when nothing was
 * granted (on close), so the code it leads to checks {@link Acquisition#isGranted()} before it
 * uses and releases the permits. Here everything runs on one event-loop thread, so the task that
 * {@code wake()} posts runs after the handle is stored (see
 * {@link Semaphore#acquireThen(long, Waker)}):
 * <pre>{@code
 * pending = semaphore.acquireThen(4, () -> loop.execute(this::sendBatch));    // called on the loop
 *
 * void sendBatch() {
 *     if (!pending.isGranted()) { batch.fail("closed"); return; }         // nothing held
 *     try { send(batch); } finally { semaphore.release(4); }
 * }
 * }</pre>
 *
 * <p><b>Settling.</b> Every acquisition settles through its waker exactly once: on a grant the
 * semaphore first calls {@link #claim()} and, if that returns {@code true}, later calls
 * {@link #wake()}; on {@link Semaphore#close() close} it calls only {@link #wake()}; if
 * {@code claim()} throws, it calls {@link #wake()} without a grant
 * ({@link Acquisition#failure()}). A cancelled acquisition ({@link Acquisition#cancel()} returned
 * {@code true}, or {@code claim()} returned {@code false}) is never woken.
 *
 * <p><b>Threads and locks.</b> {@code wake()} runs on the thread whose {@code acquire},
 * {@code release}, {@code close} or {@code cancel} call resolved the acquisition — or on the
 * executor that call was given ({@link Acquisition#cancel(java.util.concurrent.Executor)},
 * {@link Semaphore#release(long, java.util.concurrent.Executor)} and the unlock overloads of
 * {@link Mutex} and {@link RwLock}; a thread parked in a blocking acquire is still unparked by
 * the call itself) — after every
 * internal lock has been released, so it may call back into the semaphore (for example
 * {@code release}). Wake-ups started from inside a {@code wake()} run at once, nested, up to a small
 * depth; deeper ones are run by the outermost call, one after another, so a chain of wakers that
 * release to each other does not grow the stack however long it is. A consequence is that a
 * {@code wake()} should hand long or blocking work to an executor rather than block on something
 * that a deeply nested wake-up would provide (waking a thread parked in {@code acquireBlocking} is
 * never deferred). A {@code wake()} that throws does not stop the other wakers nor the call that
 * runs it:
 * the exception is passed to the thread's {@link Thread.UncaughtExceptionHandler}.
 */
@FunctionalInterface
public interface Waker {

    /**
     * The grant (or the close, or a failed claim) is final: run the waiter. Check
     * {@link Acquisition#isGranted()}, {@link Acquisition#isClosed()} or
     * {@link Acquisition#failure()} to tell which; only a granted acquisition holds permits to
     * release. Called at most once, never while an internal
     * lock is held. After a successful {@link #claim()}, {@code wake()} runs on the same thread as
     * that {@code claim()}, so state handed from one to the other needs no synchronization —
     * unless the resolving call was given an executor (see above): then {@code wake()} runs in a
     * task on it, ordered after the {@code claim()} by the executor's own hand-off (every
     * {@code java.util.concurrent} executor gives that ordering).
     */
    void wake();

    /**
     * Asks whether the grant may go to this waiter. Called once the semaphore has decided to grant
     * it, <em>after its internal lock is released</em>, on the thread of the call that made the
     * grant and before that call returns (before {@link #wake()}). Until it answers, the permits
     * are granted provisionally: held by nobody, so other waiters, releases of held permits and
     * observers ({@code queueLength()}, {@code queuedPermits()}, {@code toString()}, other
     * acquisitions' state) never wait for it; only a count that this grant's outcome decides
     * ({@code availablePermits()} or a failing {@code tryAcquire} while nobody else waits) waits
     * for the answer, for at most tens of milliseconds (on a {@link FairShareSemaphore}, where a
     * grant moves a request out of its key's queue and into what the key holds, every observer
     * waits for it that way). Keep it a short, non-blocking step
     * (typically one compare-and-set): a slow claim delays the call that made the grant.
     * Meanwhile {@link Acquisition#cancel()} of this acquisition returns {@code false} (it no
     * longer waits; the waker hears the outcome), and {@link Acquisition#isGranted()},
     * {@link Acquisition#isClosed()} and {@link Acquisition#failure()} wait for the claim's answer,
     * so that a caller whose {@code cancel()} lost learns exactly whether it holds the permits
     * (called from inside the claim, they answer at once, not granted).
     *
     * <p>Returning {@code false} says that the waiting party is gone (its coroutine or future was
     * cancelled): the acquisition then counts as cancelled, the permits it was partially handed
     * go on to the next waiters in the same release, and {@link #wake()} is not called. This is
     * what makes "exactly one of grant and cancel wins" exact when the waiting party can be
     * cancelled from outside. A {@code claim()} that throws fails the acquisition: nothing is
     * held, the permits go on as for {@code false}, and the waiter is woken so that it learns of it
     * ({@link Acquisition#failure()} returns the exception). A {@code claim()} may read the
     * semaphore; one that releases permits works too, though a claim is better kept to its own
     * state.
     *
     * <p>A waker that does not override this method has nothing to ask: its grants are final at
     * once, with none of the provisional steps above.
     *
     * @return {@code true} (the default) to take the grant, {@code false} to decline it
     */
    default boolean claim() {
        return true;
    }
}
