// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import dev.handoff.Permits;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * Permits granted by a {@link ZooKeeperSemaphore} (or by its {@link LocalFront}), held until
 * {@link #release()} or {@link #close()}. Use it in try-with-resources:
 *
 * <pre>{@code
 * try (Lease lease = semaphore.acquireBlocking(3)) {
 *     if (!lease.isValid()) {
 *         return;                              // do not start work on permits that may be gone
 *     }
 *     work(record);
 * }
 * }</pre>
 *
 * <p><b>What a lease can and cannot promise.</b> The permits live in an ephemeral znode of the
 * client's ZooKeeper session. The server deletes that node when the session expires, about one
 * session timeout after it last heard from the client, and may then grant the permits to another
 * client; the client may learn of it much later (a frozen network link, a long GC pause).
 * No lease on a remote lock service can know at every instant that it still holds: this one
 * promises only what it can check locally, and errs on the side of "not valid":
 * <ul>
 *   <li>{@link #isValid()} is {@code true} only while the lease is {@link State#VALID}: granted,
 *       not released, its node not seen deleted, the client connected, and the <em>local
 *       deadline</em> not passed. Only the leader expires sessions, no earlier than one session
 *       timeout {@code T} after it last heard from the session; a follower cut from the leader
 *       keeps answering reads and pings from its own copy for up to {@code syncLimit × tickTime},
 *       so answered reads never move the deadline. It moves only when an operation the leader
 *       orders succeeds (the request's create, a capacity write, and a {@code sync} that a
 *       heartbeat sends every {@code T/10} while anything is held or waiting), and it is set to
 *       {@code A + 9T/10}, where {@code A} is an instant at or before which the leader had heard
 *       from the session: the send time of an operation answered at least {@code 3T/10} before
 *       that confirmation was sent (a follower passes the sessions it heard from to the leader in
 *       its answers to the leader's pings, every {@code tickTime/2}), or, lacking one,
 *       {@code 3T/10 + T/3} before it (the ZooKeeper client pings after {@code T/3} of silence).
 *       <b>Bound:</b> a lease says valid no later than {@code L + 9T/10} by the client's clock,
 *       where {@code L} is the last instant the leader is known to have heard from the session,
 *       so never after the leader may have expired it, provided that
 *       <ul>
 *         <li>{@code tickTime <= T/2}: ZooKeeper's default {@code minSessionTimeout} of two ticks
 *             guarantees it; an ensemble configured with a lower minimum and a client asking for
 *             such a short timeout is outside the bound;</li>
 *         <li>the client's and the leader's clocks run at rates within 10% of each other, and the
 *             leader's pings to its followers are at most {@code T/20} late;</li>
 *         <li>a partition cuts a link in both directions at once (a link that drops one
 *             direction only for an instant, at the moment a confirmation passes, is not
 *             covered).</li>
 *       </ul>
 *       The client sees only the session timeout the server granted: the semaphore's constructor
 *       refuses one below {@link ZooKeeperSemaphore#MIN_SESSION_TIMEOUT_MS} and warns below
 *       {@link ZooKeeperSemaphore#WARN_SESSION_TIMEOUT_MS}; the ensemble's {@code tickTime} and
 *       the clocks' rates it cannot see, so they stay assumptions.
 *       {@code syncLimit} does not enter the bound: a follower's answers do not extend it. A
 *       lease therefore turns {@link State#LOST} once no confirmation has come for between about
 *       {@code 4T/15} and {@code 6T/10}; a node deleted by hand is noticed by a watch (and by the
 *       next heartbeat at the latest).</li>
 *   <li>When Curator reports the connection {@code SUSPENDED}, the lease turns
 *       {@link State#SUSPENDED} ({@code isValid()} false) and {@link #whenSuspended()} completes;
 *       on {@code RECONNECTED}, if its node is still there, it turns valid again.</li>
 *   <li>When the session is lost ({@code LOST}, the node gone after a reconnection, the client
 *       closed) or the local deadline passes, the lease turns {@link State#LOST} for good and
 *       {@link #whenLost()} completes.</li>
 * </ul>
 * What it cannot promise: that the permits are still held <em>between</em> a check and the work
 * that follows it. Check {@link #isValid()} right before each step that needs exclusivity, stop
 * work on {@link #whenSuspended()}, and give every write to a shared store the
 * {@link #fencingToken()}, so that the store itself refuses a holder that has been overtaken.
 *
 * <p>Closing a lost lease is still correct (and still needed for a local front's lease): it
 * releases whatever is left to release.
 */
public final class Lease implements Permits {

    /** Where a lease stands; see {@link Lease#state()}. */
    public enum State {
        /** Granted, not released, connected, within the local deadline: the permits are held. */
        VALID,
        /** The client's connection is suspended: the permits may be held or gone; not valid for now. */
        SUSPENDED,
        /** The session was lost, or the local deadline passed: the permits may be another client's. For good. */
        LOST,
        /** {@link Lease#release()} or {@link Lease#close()} was called. */
        RELEASED
    }

    private final long permits;
    /** The cluster node that carries the permits (for a local front's lease, that of its block). */
    private final String node;

    private final long fencingToken;
    /** The semaphore that answers for the session and the deadline; null for a local front's lease. */
    private final ZooKeeperSemaphore owner;
    /** For a local front's lease: the block lease whose state it shares. */
    private final Lease block;

    private final Consumer<Lease> releaser;
    private final AtomicBoolean released = new AtomicBoolean();
    /** VALID, SUSPENDED or LOST (RELEASED comes from `released`); LOST is final. */
    private final AtomicReference<State> state = new AtomicReference<>(State.VALID);

    private final CompletableFuture<Void> lost = new CompletableFuture<>();
    private final CompletableFuture<Void> suspended = new CompletableFuture<>();

    Lease(long permits, String node, long fencingToken, ZooKeeperSemaphore owner, Consumer<Lease> releaser) {
        this.permits = permits;
        this.node = node;
        this.fencingToken = fencingToken;
        this.owner = owner;
        this.block = null;
        this.releaser = releaser;
    }

    /** A local front's lease: shares the block's node, token and state. */
    Lease(long permits, Lease block, Consumer<Lease> releaser) {
        this.permits = permits;
        this.node = block.node;
        this.fencingToken = block.fencingToken;
        this.owner = null;
        this.block = block;
        this.releaser = releaser;
    }

    /**
     * The number of permits this lease holds.
     *
     * @return the weight that was asked for (unchanged by a release)
     */
    @Override
    public long permits() {
        return permits;
    }

    /**
     * A number that increases with the queue order across every client of the semaphore's path: a
     * request that was queued after another one, and so granted no earlier, has a larger token
     * (it is the zxid that created the request's node, so it also increases across generations and
     * across a deleted and recreated path).
     *
     * <p><b>Exclusive use: the highest-token rule.</b> When every lease holds the whole capacity
     * (capacity 1, or each request asks for {@link ZooKeeperSemaphore#capacity()}), no two leases
     * overlap, so a store may refuse a token lower than the highest it has accepted for the
     * resource: a holder whose lease was lost and whose permits went to a later request is refused
     * there, even if it has not noticed yet.
     *
     * <pre>{@code
     * ZooKeeperSemaphore writer = new ZooKeeperSemaphore(curator, "/locks/ledger", 1);
     * try (Lease lease = writer.acquireBlocking(1)) {
     *     ledger.appendIfNotOlder(entry, lease.fencingToken());   // refused once a later holder wrote
     * }
     * }</pre>
     *
     * <p><b>Shared use: no rule on the token alone.</b> With capacity above the lease's permits,
     * holders overlap legitimately: a holder granted earlier may still be inside its lease when a
     * later one writes, and a store that sees only tokens cannot tell it from an overtaken holder
     * (it does not see releases). The highest-token rule would refuse legitimate holders there, so
     * do not use it. What does fence shared use is a check of the lease's own node at the store, in
     * the same atomic step as the write: for a store in the same ZooKeeper ensemble, a transaction
     * with a check of {@link #node()} at any version ({@code -1}: only its existence matters) and
     * the write; the write then fails once the node is gone, whether its session expired or
     * someone deleted it. For another store, no token rule replaces that check.
     *
     * <pre>{@code
     * try (Lease lease = pool.acquireBlocking(2)) {                // capacity 16: holders overlap
     *     curator.transaction().forOperations(
     *             curator.transactionOp().check().withVersion(-1).forPath(lease.node()),
     *             curator.transactionOp().setData().forPath("/results/" + job, result));
     * }
     * }</pre>
     *
     * <p>A {@link LocalFront}'s leases share the token (and node) of the front's block: they are
     * one cluster request, shared by the callers of one JVM in the front's own local order, so to a
     * store they are overlapping holders of one block, and only the shared-use rule applies
     * between them.
     *
     * @return the fencing token, positive
     */
    public long fencingToken() {
        return fencingToken;
    }

    /**
     * Whether the permits are held for certain now: {@code true} only in {@link State#VALID}. See
     * the class documentation for what this does and does not promise. A snapshot: check it right
     * before each step that must not overlap with another holder.
     *
     * @return {@code true} while the lease is valid
     */
    public boolean isValid() {
        return state() == State.VALID;
    }

    /**
     * Where this lease stands: {@link State#VALID}, {@link State#SUSPENDED} (the connection is
     * suspended), {@link State#LOST} (for good) or {@link State#RELEASED}. Reading it also applies
     * the local deadline: a lease past it turns {@link State#LOST} here.
     *
     * @return the state now
     */
    public State state() {
        if (released.get()) {
            return State.RELEASED;
        }
        if (block != null) {
            State s = block.state();
            return s == State.RELEASED ? State.LOST : s;
        }
        State s = state.get();
        if (s != State.LOST && owner.guard.pastDeadline()) {
            owner.guard.lose(this, "the local deadline passed: the leader has not confirmed the session in time");
            return State.LOST;
        }
        return s;
    }

    /**
     * Completes when this lease is lost while not released: its session was lost, its node is gone,
     * or the local deadline passed. Never completes for a lease released first. A holder that must
     * stop its work when it loses the permits registers here:
     * {@code lease.whenLost().thenRun(worker::abort)}. The local deadline is noticed when the state
     * is read or by the heartbeat, within a tenth of the session timeout; a deleted node by a watch
     * on it, or by the heartbeat's check of it.
     *
     * @return a stage completed with {@code null} on loss, on a ZooKeeper or heartbeat thread
     */
    public CompletionStage<Void> whenLost() {
        return block != null ? block.whenLost() : lost.minimalCompletionStage();
    }

    /**
     * Completes the first time this lease stops being certainly valid while not released: the
     * connection was suspended, or the lease was lost. That is the moment to pause work that must
     * not overlap with another holder; {@link #isValid()} tells whether it may resume.
     *
     * <pre>{@code
     * lease.whenSuspended().thenRun(worker::pause);
     * }</pre>
     *
     * @return a stage completed with {@code null}, on a ZooKeeper or heartbeat thread
     */
    public CompletionStage<Void> whenSuspended() {
        return block != null ? block.whenSuspended() : suspended.minimalCompletionStage();
    }

    /**
     * Releases the permits the first time it is called: deletes the request's node (Curator retries
     * the delete across connection loss), or gives a local front's permits back to the front.
     * Releasing a lost lease is allowed and returns {@code true} the first time: it deletes the
     * node if it is still there.
     *
     * @return {@code true} if this call released the permits, {@code false} if already released
     */
    @Override
    public boolean release() {
        if (released.compareAndSet(false, true)) {
            releaser.accept(this);
            return true;
        }
        return false;
    }

    /**
     * Whether {@link #release()} or {@link #close()} has been called.
     *
     * @return {@code true} once released
     */
    @Override
    public boolean isReleased() {
        return released.get();
    }

    /**
     * Same as {@link #release()}, for try-with-resources. Idempotent; never throws.
     */
    @Override
    public void close() {
        release();
    }

    /**
     * Shows the permits, the node, the fencing token and the state.
     *
     * @return a description for logs
     */
    @Override
    public String toString() {
        return "Lease[permits=" + permits + ", node=" + node + ", fencingToken=" + fencingToken + ", " + state() + "]";
    }

    /**
     * The path of the znode that carries these permits (for a local front's lease, its block's):
     * it exists exactly while the permits are held, so a store in the same ensemble can check it
     * in the transaction that writes (see {@link #fencingToken()}).
     *
     * @return the node's full path
     */
    public String node() {
        return node;
    }

    /** SUSPENDED: not valid until RECONNECTED confirms the node. */
    void markSuspended() {
        if (state.compareAndSet(State.VALID, State.SUSPENDED) && !released.get()) {
            suspended.complete(null);
        }
    }

    /** RECONNECTED and the node is still there. */
    void markConfirmed() {
        state.compareAndSet(State.SUSPENDED, State.VALID);
    }

    /** Lost for good; true if this call made it so (it was not lost, nor released, before). */
    boolean markLost() {
        State before = state.getAndSet(State.LOST);
        if (before != State.LOST && !released.get()) {
            suspended.complete(null);
            lost.complete(null);
            return true;
        }
        return false;
    }
}
