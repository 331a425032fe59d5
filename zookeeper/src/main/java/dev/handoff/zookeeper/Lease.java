// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * Permits granted by a {@link ZooKeeperSemaphore} (or by its {@link LocalFront}), held until
 * {@link #close()}. Use it in try-with-resources:
 *
 * <pre>{@code
 * try (Lease lease = semaphore.acquireBlocking(3)) {
 *     // at most capacity() permits are held cluster-wide, these 3 among them
 * }
 * }</pre>
 *
 * <p>A lease is <em>valid</em> from its grant until it is closed, or until the ZooKeeper session
 * that holds it is lost: then the ephemeral node that carried the permits is gone, other clients
 * may already have been granted them, and {@link #whenLost()} completes. Closing a lost lease is
 * still correct (and still needed for a local front's lease): it releases whatever is left to
 * release.
 */
public final class Lease implements AutoCloseable {

    private final long permits;
    /** The cluster node that carries the permits (for a local front's lease, that of its block). */
    private final String node;
    private final Consumer<Lease> releaser;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Completed once, by the connection listener (or a failed node check), when the session is lost. */
    private final CompletableFuture<Void> lost = new CompletableFuture<>();

    Lease(long permits, String node, Consumer<Lease> releaser) {
        this.permits = permits;
        this.node = node;
        this.releaser = releaser;
    }

    /**
     * The number of permits this lease holds.
     *
     * @return the weight that was asked for
     */
    public long permits() {
        return permits;
    }

    /**
     * Whether the permits are still held: false once {@link #close()} was called, and false once
     * the session that held them was lost (the permits may then be granted to another client).
     *
     * @return {@code true} while the lease holds its permits
     */
    public boolean isValid() {
        return !closed.get() && !lost.isDone();
    }

    /**
     * Completes when this lease is lost with its ZooKeeper session while still open; never completes
     * for a lease that is closed first. A holder that must stop its work when it loses the
     * permits registers here: {@code lease.whenLost().thenRun(worker::abort)}.
     *
     * @return a stage completed with {@code null} on loss
     */
    public CompletionStage<Void> whenLost() {
        return lost.minimalCompletionStage();
    }

    /**
     * Releases the permits: deletes the request's node (Curator retries the delete across
     * connection loss). Idempotent; later calls do nothing.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            releaser.accept(this);
        }
    }

    /**
     * Shows the permits, the node and the state.
     *
     * @return a description for logs
     */
    @Override
    public String toString() {
        return "Lease[permits=" + permits + ", node=" + node + ", "
                + (closed.get() ? "closed" : lost.isDone() ? "lost" : "valid") + "]";
    }

    String node() {
        return node;
    }

    void markLost() {
        if (!closed.get()) {
            lost.complete(null);
        }
    }
}
