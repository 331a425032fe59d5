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
 *     store.write(record, lease.fencingToken()); // the store rejects tokens older than one it has seen
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
 *       not released, the client connected, and the <em>local deadline</em> not passed. The local
 *       deadline is the send time of the last request the server answered, plus the negotiated
 *       session timeout, minus a fifth of it; the server cannot expire the session before that,
 *       so a lease that says valid has not been granted to anyone else. (A holder that leases for
 *       long is kept in contact by a light heartbeat.)</li>
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
     * across a deleted and recreated path). Give it to every write to a shared store, and let the
     * store refuse a token lower than the highest it has accepted for the same resource: a holder
     * whose lease was lost and whose permits went to a later request is refused there, even if it
     * has not noticed yet. A local front's leases share the token of the front's block.
     *
     * <pre>{@code
     * if (lease.isValid()) {
     *     store.putIfNewer(key, value, lease.fencingToken());   // refused if a later holder wrote first
     * }
     * }</pre>
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
        if (s != State.LOST && owner.pastDeadline()) {
            owner.lose(this, "the local deadline passed: the leader has not confirmed the session in time");
            return State.LOST;
        }
        return s;
    }

    /**
     * Completes when this lease is lost while not released: its session was lost, its node is gone,
     * or the local deadline passed. Never completes for a lease released first. A holder that must
     * stop its work when it loses the permits registers here:
     * {@code lease.whenLost().thenRun(worker::abort)}. The local deadline is noticed when the state
     * is read or by the heartbeat, within a fifth of the session timeout.
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

    String node() {
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
