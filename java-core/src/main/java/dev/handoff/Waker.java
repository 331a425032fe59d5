package dev.handoff;

/**
 * The continuation of a waiting {@link Acquisition}: what the semaphore runs when the wait is over.
 *
 * <p>One abstract method, so a lambda is a {@code Waker}:
 * <pre>{@code
 * Acquisition a = semaphore.acquire(4, () -> executor.execute(this::sendBatch));
 * }</pre>
 *
 * <p><b>Settling.</b> Every acquisition settles through its waker exactly once: on a grant the
 * semaphore first calls {@link #claim()} and, if that returns {@code true}, later calls
 * {@link #wake()}; on {@link Semaphore#close() close} it calls only {@link #wake()}. A cancelled
 * acquisition ({@link Acquisition#cancel()} returned {@code true}, or {@code claim()} returned
 * {@code false}) is never woken.
 *
 * <p><b>Threads and locks.</b> {@code wake()} runs on the thread whose {@code acquire},
 * {@code release}, {@code close} or {@code cancel} call resolved the acquisition, after every
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
     * The grant (or the close) is final: run the waiter. Check {@link Acquisition#isGranted()} or
     * {@link Acquisition#isClosed()} to tell which. Called at most once, never while an internal
     * lock is held. After a successful {@link #claim()}, {@code wake()} runs on the same thread as
     * that {@code claim()}, so state handed from one to the other needs no synchronization.
     */
    void wake();

    /**
     * Asks whether the grant may go to this waiter. Called <em>under the semaphore's internal
     * lock</em>, at the moment the semaphore decides to grant; it must therefore be a short,
     * non-blocking step (typically one compare-and-set) that never calls into this or any other
     * handoff semaphore or lock (two semaphores whose claims call each other could deadlock).
     *
     * <p>Returning {@code false} says that the waiting party is gone (its coroutine or future was
     * cancelled): the acquisition then counts as cancelled, the permits it was partially handed
     * go on to the next waiters in the same release, and {@link #wake()} is not called. This is
     * what makes "exactly one of grant and cancel wins" exact when the waiting party can be
     * cancelled from outside. A {@code claim()} that throws counts as {@code false}; the exception
     * is passed to the thread's uncaught-exception handler once the lock is released. A
     * {@code claim()} that calls a method of the semaphore that needs the lock gets an
     * {@link IllegalStateException} (and so counts as {@code false}).
     *
     * @return {@code true} (the default) to take the grant, {@code false} to decline it
     */
    default boolean claim() {
        return true;
    }
}
