// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * One wait for permits: the handle by which the caller watches and cancels it, and the queue node
 * of the semaphore's wait queue (so a wait costs one allocation).
 *
 * <p>An acquisition is in exactly one of five states. It starts <em>waiting</em> (or is settled at
 * once when it starts), and leaves that state once, to one of:
 * <ul>
 *   <li><em>granted</em> ({@link #isGranted()}): all {@link #permits()} permits now belong to the
 *       caller, who must {@link Semaphore#release(long) release} them;</li>
 *   <li><em>closed</em> ({@link #isClosed()}): the semaphore was closed first; nothing is held;</li>
 *   <li><em>failed</em> ({@link #failure()} is not {@code null}): the grant could not be taken
 *       because the waker's {@link Waker#claim()} (or {@link #claim()}) threw; nothing is held and
 *       the permits went on to the next waiters;</li>
 *   <li><em>cancelled</em>: {@link #cancel()} returned {@code true}, or the claim declined the
 *       grant; nothing is held.</li>
 * </ul>
 * Granted, closed and failed acquisitions are woken; cancelled ones never are.
 *
 * <p>Example: give up on a wait after a deadline, without ever leaking a permit. Everything runs
 * on one event-loop thread, so the handle is stored before the deadline or the task posted by
 * {@code wake()} can read it. Exactly one of the grant, the close and the deadline decides; only a
 * grant is released, and then once, however the send ends.
 * <pre>{@code
 * final class Send implements Waker {                      // created and started on the loop
 *     private Acquisition acquisition;
 *     void start() {
 *         acquisition = budget.acquireThen(bytes, this);
 *         loop.schedule(() -> {
 *             if (acquisition.cancel()) request.fail("timed out waiting for " + bytes + " bytes");
 *         }, 5, TimeUnit.SECONDS);                           // false: granted or closed, run() sees it
 *     }
 *     public void wake() { loop.execute(this::run); }     // never runs after a cancel() that won
 *     private void run() {
 *         if (!acquisition.isGranted()) { request.fail("shutting down"); return; } // nothing held
 *         try { send(request); } finally { budget.release(bytes); }
 *     }
 * }
 * }</pre>
 *
 * <h2>Subclassing: an acquisition that is its own waker</h2>
 * An adapter (a coroutine bridge, a reactive operator) that would otherwise allocate a
 * {@link Waker} and a node per wait can extend this class and be both: override {@link #wake()}
 * (and, if the waiting party can go away, {@link #claim()}), then start it with
 * one of the hooks of {@link dev.handoff.spi.Adapters} ({@code startAcquisition},
 * {@code startAcquisitionUpTo}, {@code startLock}, {@code startReadLock}, {@code startWriteLock}). The
 * rules of {@link Waker} apply to the two methods unchanged. An instance can be started once;
 * everything else about it (its queue links, its state) stays inside this package.
 * <pre>{@code
 * final class Signal extends Acquisition {
 *     final CountDownLatch done = new CountDownLatch(1);
 *     @Override protected void wake() { done.countDown(); }
 * }
 * Signal s = Adapters.startAcquisition(semaphore, 4, new Signal());
 * try {
 *     s.done.await();
 * } catch (InterruptedException e) {
 *     if (!s.cancel() && s.isGranted()) semaphore.release(4); // the grant won the race
 *     throw e;
 * }
 * if (s.isGranted()) { try { work(); } finally { semaphore.release(4); } } // else: nothing held
 * }</pre>
 */
public abstract class Acquisition {

    // ---- states; written under the owner's lock (but CLAIMING -> GRANTED), read anywhere (volatile) ----
    static final int WAITING = 0;
    static final int GRANTED = 1;
    static final int CLOSED = 2;
    static final int CANCELLED = 3;
    static final int FAILED = 4;
    /**
     * Granted provisionally, its waker's {@link Waker#claim()} not asked yet or still running: the
     * claim runs after the internal lock is released, and then settles the node (see "Claims after
     * the lock" in HandoffCore). Not waiting any more (a cancel() answers false; the waker hears
     * the outcome), not settled yet (isGranted() waits for the claim's answer, see FifoCore.awaitClaim).
     */
    static final int CLAIMING = 5;

    /** The core this acquisition waits on; set once when it starts (by CAS for subclasses). */
    FifoCore owner;

    /** The weight asked for. Set once when it starts, before the node is visible to the core. */
    long permits;

    /**
     * What the node keeps besides its weight and links, packed in one field to keep it small; read
     * and written only through {@link NodeHook}, which says what it may hold.
     */
    Object hook;

    /**
     * One of the states above. Written under {@code owner}'s lock, except a CLAIMING node's grant,
     * written by the thread that ran its claim; volatile for lock-free reads.
     */
    volatile int state;

    /**
     * Queue links, guarded by {@code owner}'s lock. Once the node has left the queue to be woken,
     * {@code next} links the chain of nodes to wake (see {@link FifoCore}'s notes); the chain
     * is owned by the thread that runs it, with no lock. Within one hold of the lock, a node that
     * declined its grant in handOut has {@code prev == this} until publishOutcomes reads and
     * clears the mark.
     */
    Acquisition prev;

    Acquisition next;

    /**
     * The core's queue counters (see "Queue counters" in WaitQueue): this
     * node's place in the queue, counting the nodes appended before it since the queue was last
     * empty, and the sum of the low 32 bits of their minimums, its own included.
     * Written before the node is published to the queue, never changed while it is queued.
     */
    int seq;

    long cumLo;

    /**
     * Whether a grant made while this node was queued is still provisional (see
     * {@link #provisionalGrant()}): set under the core's lock at the grant, cleared once by CAS,
     * by {@link #confirmGrant()} or {@link #undoGrant(Executor)}.
     */
    volatile boolean provisional;

    /**
     * Whether the scheduler in front of the core asks this node's claim itself, after its own lock
     * (a fair share's ticket whose party is a user's Waker): the core's claim takes the grant for it
     * and the core publishes the node CLAIMING, leaving it to the front (see "Claims after the lock"
     * in FairShareClaims). Set at construction.
     */
    boolean claimsInFront;

    /**
     * For subclasses that are their own waker: an acquisition that has not started yet. Start it
     * with one of the {@code start...} methods of {@link Semaphore}, {@link Mutex} or
     * {@link RwLock}, which set its weight.
     */
    protected Acquisition() {}

    /** An internal face's node, bound at construction. */
    Acquisition(FifoCore owner, long permits, Runnable onGrant) {
        this.owner = owner;
        this.permits = permits;
        this.hook = onGrant;
    }

    /**
     * Binds a subclass instance to {@code core} with its weight; once only. Called by the faces'
     * {@code start...} methods after they checked the arguments. {@code min < n} makes it an
     * up-to request for {@code min} to {@code n} permits (a semaphore's, which has no grant hook):
     * its minimum is kept in {@link #hook} (an {@link UpTo}), so exact requests pay nothing for it.
     */
    final void bind(FifoCore core, long min, long n, Runnable grantHook, String call) {
        if (!OWNER.compareAndSet(this, null, core)) {
            throw new IllegalStateException(CoreMessages.describe(call, min, n)
                    + ": this acquisition was already started (" + this + "); an Acquisition can be started once");
        }
        this.permits = n;
        this.hook = min < n ? new NodeHook.UpTo(min) : grantHook;
    }

    /** Whether this acquisition is started on {@code core} (a volatile read: see FifoCore's cancel). */
    final boolean boundTo(HandoffCore core) {
        return OWNER.getVolatile(this) == core;
    }

    /** Undoes {@link #bind} after the start was refused before the core saw the node. */
    final void unbind() {
        this.permits = 0;
        this.hook = null;
        OWNER.setVolatile(this, null);
    }

    /**
     * Returns the number of permits this acquisition asked for.
     *
     * @return the weight it was started with; {@code 0} before it started
     */
    public final long permits() {
        return permits;
    }

    /**
     * Returns whether all {@link #permits()} permits now belong to the caller, who must release
     * them. Once {@code true}, stays {@code true}. The grant happens-before this method returns
     * {@code true}.
     *
     * @return {@code true} if granted
     */
    public final boolean isGranted() {
        return settledState() == GRANTED;
    }

    /**
     * Returns whether this acquisition failed because the semaphore was closed (while it waited,
     * or before it started). Nothing is held in that case.
     *
     * @return {@code true} if failed by close
     */
    public final boolean isClosed() {
        return settledState() == CLOSED;
    }

    /**
     * Returns the exception that ended this acquisition without a grant: what the waker's
     * {@link Waker#claim()} (or this object's {@link #claim()}) threw when the semaphore tried to
     * grant it. Nothing is held in that case, the permits went on to the next waiters, and the
     * acquisition was woken so that its waiter learns of it.
     *
     * @return the exception, or {@code null} if the acquisition did not fail that way
     */
    public final @Nullable Throwable failure() {
        return settledState() == FAILED ? failureCause() : null;
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
     *     already granted, closed, failed or cancelled, or has not started
     */
    public final boolean cancel() {
        FifoCore core = owner;
        return core != null && state == WAITING && core.cancel(this, null, false);
    }

    /**
     * Withdraws like {@link #cancel()} (or like {@link #cancel(Executor)} if {@code wakeExecutor}
     * is not null), telling the semaphore's {@link WaitListener} that the wait timed out. For
     * faces and subclasses whose wait ends because of a deadline.
     *
     * @param wakeExecutor where the wake-ups caused by this withdrawal run, or {@code null} for
     *     the calling thread
     * @return {@code true} if this call withdrew a waiting acquisition; {@code false} if it was
     *     already granted, closed, failed or cancelled, or has not started
     */
    protected final boolean cancelTimedOut(Executor wakeExecutor) {
        FifoCore core = owner;
        if (core == null || state != WAITING) {
            return false;
        }
        return core.cancel(this, wakeExecutor, true);
    }

    /**
     * Withdraws the acquisition like {@link #cancel()}, but the wakers of the waiters that its
     * partially handed permits complete run on {@code wakeExecutor}, not on the calling thread.
     * The withdrawal itself (leaving the queue, handing the permits on) is done before this method
     * returns, exactly as by {@code cancel()}; only the {@code wake()} calls move. Use it when
     * cancelling from a thread that must not run other parties' callbacks (a shared timer
     * thread). If the executor rejects the task, the wakers run on the calling thread. The
     * executor must run every task it accepts: the waiters it holds are granted already. Threads
     * parked in a blocking acquire are unparked at once, never through the executor (no user code
     * runs there); if nobody else is woken, the executor is not used.
     *
     * <pre>{@code
     * timer.schedule(() -> {
     *     if (acquisition.cancel(eventLoop)) eventLoop.execute(() -> request.fail("timed out")); // nothing held
     * }, 5, TimeUnit.SECONDS);
     * }</pre>
     *
     * @param wakeExecutor where the wake-ups caused by this withdrawal run
     * @return {@code true} if this call withdrew a waiting acquisition; {@code false} if it was
     *     already granted, closed, failed or cancelled, or has not started
     * @throws NullPointerException if {@code wakeExecutor} is null
     */
    public final boolean cancel(Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("cancel(null): the executor is null");
        }
        FifoCore core = owner;
        return core != null && state == WAITING && core.cancel(this, wakeExecutor, false);
    }

    /**
     * Returns whether the acquisition has started and not settled yet, read without any lock: a
     * cheap hint for a subclass (for example, whether a cancellation handler is still needed). A
     * settlement in progress on another thread may not be visible yet; {@link #isGranted()},
     * {@link #isClosed()} and {@link #failure()} are exact.
     *
     * @return {@code true} if started and, as far as this thread can tell, still waiting
     */
    protected final boolean isPending() {
        return owner != null && node().state == WAITING;
    }

    /**
     * Returns the semaphore, mutex or read-write lock that started this acquisition — the
     * {@link Semaphore}, {@link FairShareSemaphore}, {@link Mutex} or {@link RwLock} whose
     * that a hook of {@link dev.handoff.spi.Adapters} started it on, or whose
     * {@code acquireThen(n, waker)} made it — or {@code null} before it was started. An adapter whose
     * queue node is a subclass finds its face here (to give back a grant its caller never used, or
     * to name it in a message) instead of keeping a reference of its own in every node.
     *
     * <pre>{@code
     * // in a subclass, once granted: hand back permits its caller will never use
     * ((Semaphore) startedOn()).release(permits());
     * }</pre>
     *
     * @return the face that started this acquisition, or {@code null} if it was not started yet
     */
    protected final @Nullable Object startedOn() {
        FifoCore core = owner;
        return core == null ? null : core.face;
    }

    /**
     * Asks whether the grant may go to this waiter; see {@link Waker#claim()}, whose rules apply,
     * except that for a subclass it is called <em>under the semaphore's internal lock</em> (an
     * adapter's claim is a field read, and answering under the lock spares its grant the
     * provisional step): a short non-blocking step that never calls into a handoff semaphore or
     * lock (such a call gets an {@link IllegalStateException}, which fails the acquisition). Returning {@code false} declines (the acquisition
     * counts as cancelled and is not woken); throwing fails it (it is woken, and
     * {@link #failure()} returns the exception). The default takes every grant.
     *
     * @return {@code true} to take the grant, {@code false} to decline it
     */
    protected boolean claim() {
        return true;
    }

    /**
     * The name of the call that started this acquisition, as an error message should show it: an
     * adapter that starts its nodes with {@link dev.handoff.spi.Adapters#startAcquisition(Semaphore, long, Acquisition)} on
     * behalf of a method of its own returns that method's name, so that a refusal names what its
     * caller called. The Kotlin {@code acquire(5)} of {@code handoff-kotlin} returns {@code "acquire"};
     * when the wait queue is full it throws {@code SemaphoreRejectedException("acquire(5): rejected,
     * the wait queue is full ...")}, not {@code "startAcquisition(5): ..."}.
     *
     * <p>Called only when such a message is built (a refusal, or a weight above the capacity, as
     * after a shrink that raced the adapter's own argument check), possibly under the semaphore's
     * internal lock: return a constant (or build the string from the node's own fields) and call
     * nothing else. If it throws, the message keeps the starting method's name.
     *
     * <pre>{@code
     * @Override protected String callName() { return "acquireRows"; }
     * }</pre>
     *
     * @return the call's name, without arguments (the message adds the weight, or
     *     {@code "(min, max)"} for an up-to request), or its whole description with them, such as
     *     {@code "acquireRows(2, 2)"}, which is used as it is; {@code null} (the default) for the
     *     name of the method that started it
     */
    protected @Nullable String callName() {
        return null;
    }

    /**
     * The grant, the close or the failure is final: run the waiter; see {@link Waker#wake()}.
     * Called at most once, never while an internal lock is held. Check {@link #isGranted()},
     * {@link #isClosed()} or {@link #failure()} to tell which.
     */
    protected abstract void wake();

    /**
     * For the listener, read after this node declined its grant (claim false): whether it declined
     * because its wait had already timed out, so that the wait is reported as timed out rather than
     * cancelled. The future face overrides it; the others decline only when their party is gone.
     */
    boolean declinedByTimeout() {
        return false;
    }

    /**
     * Whether this node's {@link #claim()} is a user's {@link Waker#claim()}, which the core runs
     * after its lock is released, on a grant made provisionally first (see "Claims after the lock"
     * in HandoffCore). The nodes of the internal faces and of adapters claim under the lock.
     */
    boolean claimsAfterUnlock() {
        return false;
    }

    /**
     * Whether {@link #wake()} only unparks a thread blocked in an acquire, running no user code:
     * such wake-ups are never deferred and run before the others of a chain (see the wake
     * trampoline). The nodes of the blocking faces override it.
     */
    boolean parksThread() {
        return false;
    }

    /**
     * The least number of permits this acquisition can be granted with: {@link #permits} for an
     * exact request; an up-to request's minimum (then {@code permits} is its maximum until the
     * grant, and what it took after). Fixed once started.
     */
    long minimum() {
        return NodeHook.minimum(hook, permits);
    }

    /** The exception of a FAILED node (see {@link #hook}); {@code null} otherwise. */
    final Throwable failureCause() {
        return NodeHook.failure(hook);
    }

    /** The face's grant bookkeeping, or {@code null} (see {@link #hook}). */
    @GuardedBy("lock")
    final Runnable grantHook() {
        return NodeHook.grantHook(hook);
    }

    /** Before the state is published: the node fails with {@code t}. */
    @GuardedBy("lock")
    final void fail(Throwable t) {
        hook = NodeHook.failed(hook, t);
    }

    /**
     * As the node joins the queue of a semaphore that has a {@link WaitListener} (under the lock, or
     * just before a lock-free append publishes it): remembers when and behind how many, for the
     * listener (see {@link NodeHook#watched(Object, int)}).
     */
    final void watch(int waitersAhead) {
        hook = NodeHook.watched(hook, waitersAhead);
    }

    /** What {@link #watch} stored, or {@code null} if the node was never watched. */
    final NodeHook.Watch watched() {
        return NodeHook.watch(hook);
    }

    /**
     * Whether a grant made while this acquisition waits in the queue stays <em>provisional</em>
     * until this acquisition calls {@link #confirmGrant()} or {@link #undoGrant(Executor)}. For an
     * adapter whose waiter may still turn the grant down after {@link Waker#claim()} accepted it,
     * as a coroutine cancelled before it resumes does: while provisional, the permits count as
     * held by nobody, so a {@code release} that could only succeed by counting them waits until
     * the grant is confirmed (then they are held) or undone (then they were never held), and the
     * outcome is the same as if the cancellation or the resumption had come first. A grant made
     * at once, inside the call that started the acquisition, is never provisional. On a
     * {@link FairShareSemaphore} the permits are held by nobody per key: {@code heldPermits(key)}
     * leaves them out, and the key's releases wait as above. The default is {@code false}. Called
     * under the semaphore's internal lock: return a constant.
     *
     * @return {@code true} if this acquisition confirms or undoes each queued grant itself, and
     *     promptly (within its waker's own run)
     */
    protected boolean provisionalGrant() {
        return false;
    }

    /**
     * Confirms a provisional grant (see {@link #provisionalGrant()}): from now on its permits are
     * held by this acquisition's waiter, who releases them as usual. Lock-free. Does nothing if the
     * grant was confirmed or undone already, or was not provisional.
     *
     * <pre>{@code
     * protected void wake() {
     *     if (isGranted()) { confirmGrant(); resumeWaiter(); } else { failWaiter(); }
     * }
     * }</pre>
     */
    protected final void confirmGrant() {
        FifoCore core = owner;
        if (core != null) {
            core.confirm(this);
        }
    }

    /**
     * Undoes a provisional grant that its waiter will not take (see {@link #provisionalGrant()}):
     * the permits go back to the semaphore at once, as a release of them would (to the next
     * waiters, in FIFO order), without an over-release check since they are exactly this grant's,
     * and it counts as never held. The wake-ups of the waiters it completes run on
     * {@code wakeExecutor} (here if it refuses the task; threads parked in a blocking acquire are
     * unparked here), as with {@link Semaphore#release(long, Executor)}.
     *
     * @param wakeExecutor where the wake-ups it causes run
     * @return {@code true} if it gave the permits back; {@code false} (nothing changed) if the
     *     grant was confirmed, undone already or not provisional: then the waiter holds the
     *     permits and releases them as usual
     * @throws NullPointerException if {@code wakeExecutor} is null
     */
    protected final boolean undoGrant(Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("undoGrant(null): the executor is null");
        }
        FifoCore core = owner;
        return core != null && core.undo(this, wakeExecutor);
    }

    private int settledState() {
        FifoCore core = owner;
        return core == null ? WAITING : core.settledState(node());
    }

    /**
     * The queue node whose state is this acquisition's: itself, or, for an acquisition a
     * scheduler in front of the core started, the scheduler's own node that it is the party of
     * (kept in {@link #hook}, which such an acquisition needs for nothing else: the core never
     * sees it). A hook holds an {@link Acquisition} in that case only.
     */
    final Acquisition node() {
        Object h = hook;
        return h instanceof Acquisition ? (Acquisition) h : this;
    }

    /**
     * Returns a description with the weight and the state, for logs.
     *
     * @return for example {@code "Acquisition[permits=4, waiting]"}, or
     *     {@code "Acquisition[permits=2..8, waiting]"} for an up-to request that waits
     */
    @Override
    public String toString() {
        String s;
        String weight = Long.toString(permits);
        if (owner == null) {
            s = "not started";
        } else {
            switch (node().state == CLAIMING ? CLAIMING : settledState()) { // never waits for a claim
                case WAITING:
                    s = "waiting";
                    long min = minimum();
                    if (min < permits) {
                        weight = min + ".." + permits;
                    }
                    break;
                case GRANTED:
                    s = "granted";
                    break;
                case CLOSED:
                    s = "closed";
                    break;
                case FAILED:
                    s = "failed: " + failureCause();
                    break;
                case CLAIMING:
                    s = "being granted";
                    break;
                default:
                    s = "cancelled";
                    break;
            }
        }
        return "Acquisition[permits=" + weight + ", " + s + "]";
    }

    private static final VarHandle OWNER;

    static {
        try {
            OWNER = MethodHandles.lookup().findVarHandle(Acquisition.class, "owner", FifoCore.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        // Before any acquisition exists, so before an adapter can start one through the hooks.
        dev.handoff.spi.Adapters.install(new SpiAccess());
    }
}
