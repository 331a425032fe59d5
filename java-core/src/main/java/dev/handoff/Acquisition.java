package dev.handoff;

/**
 * One call to {@link Semaphore#acquire(long, Waker)}: the handle by which the caller watches and
 * cancels its wait.
 *
 * <p>An acquisition is in exactly one of four states. It starts <em>waiting</em> (or is settled at
 * once inside {@code acquire}), and leaves that state once, to one of:
 * <ul>
 *   <li><em>granted</em> ({@link #isGranted()}): all {@link #permits()} permits now belong to the
 *       caller, who must {@link Semaphore#release(long) release} them;</li>
 *   <li><em>closed</em> ({@link #isClosed()}): the semaphore was closed first; nothing is held;</li>
 *   <li><em>cancelled</em>: {@link #cancel()} returned {@code true}, or the waker's
 *       {@link Waker#claim()} declined the grant; nothing is held.</li>
 * </ul>
 *
 * <p>Example: give up on a wait after a deadline, without ever leaking a permit.
 * <pre>{@code
 * Acquisition a = budget.acquire(bytes, () -> loop.execute(() -> send(request)));
 * loop.schedule(() -> {
 *     if (a.cancel()) request.fail("timed out waiting for " + bytes + " bytes of budget");
 * }, 5, TimeUnit.SECONDS);
 * }</pre>
 *
 * <p>This class is also the queue node of the semaphore's wait queue, so a wait costs one
 * allocation. It cannot be subclassed outside this package.
 */
public class Acquisition {

    // ---- states; written only under the owner's lock, read anywhere (volatile) ----
    static final int WAITING = 0;
    static final int GRANTED = 1;
    static final int CLOSED = 2;
    static final int CANCELLED = 3;

    /** The core this acquisition waits on. Immutable. */
    final BatchSemaphore owner;

    /** The weight asked for. Immutable. */
    final long permits;

    /** The continuation, or {@code null} for the internal faces that override {@link #wake()}. */
    private final Waker waker;

    /** One of the states above. Written under {@code owner}'s lock; volatile for lock-free reads. */
    volatile int state;

    /**
     * Permits already handed to this waiter while it waits (partial assignment). Only the head of
     * the queue ever has a non-zero value. Guarded by {@code owner}'s lock.
     */
    long assigned;

    /**
     * Queue links, guarded by {@code owner}'s lock. Once the node has left the queue to be woken,
     * {@code next} links the chain of nodes to wake (see {@link BatchSemaphore}'s notes); the chain
     * is owned by the thread that runs it, with no lock.
     */
    Acquisition prev;
    Acquisition next;

    Acquisition(BatchSemaphore owner, long permits, Waker waker) {
        this.owner = owner;
        this.permits = permits;
        this.waker = waker;
    }

    /**
     * Returns the number of permits this acquisition asked for.
     *
     * @return the weight passed to {@code acquire}
     */
    public long permits() {
        return permits;
    }

    /**
     * Returns whether all {@link #permits()} permits now belong to the caller, who must release
     * them. Once {@code true}, stays {@code true}. The grant happens-before this method returns
     * {@code true}.
     *
     * @return {@code true} if granted
     */
    public boolean isGranted() {
        return owner.settledState(this) == GRANTED;
    }

    /**
     * Returns whether this acquisition failed because the semaphore was closed (while it waited,
     * or before it started). Nothing is held in that case.
     *
     * @return {@code true} if failed by close
     */
    public boolean isClosed() {
        return owner.settledState(this) == CLOSED;
    }

    /**
     * Withdraws the acquisition if it is still waiting: it leaves the queue, the permits it was
     * partially handed go back (they may complete the waiters behind it, whose wakers then run on
     * this thread, normally before {@code cancel} returns; see {@link Waker}), and its waker will
     * never be called.
     *
     * <p>Races with a concurrent grant or close are exact: exactly one of them wins. If the grant
     * or close won, this method returns {@code false} and changes nothing; in particular a granted
     * acquisition still holds its permits and the caller must release them. Idempotent.
     *
     * @return {@code true} if this call withdrew a waiting acquisition; {@code false} if it was
     *     already granted, closed or cancelled
     */
    public boolean cancel() {
        return state == WAITING && owner.cancel(this);
    }

    /** Called under the owner's lock at the moment of a grant; see {@link Waker#claim()}. */
    boolean claim() {
        return waker.claim();
    }

    /** Called with no lock held, once, after a successful claim or a close. */
    void wake() {
        waker.wake();
    }

    /**
     * Returns a description with the weight and the state, for logs.
     *
     * @return for example {@code "Acquisition[permits=4, waiting]"}
     */
    @Override
    public String toString() {
        String s;
        switch (owner.settledState(this)) {
            case WAITING: s = "waiting"; break;
            case GRANTED: s = "granted"; break;
            case CLOSED: s = "closed"; break;
            default: s = "cancelled"; break;
        }
        return "Acquisition[permits=" + permits + ", " + s + "]";
    }
}
