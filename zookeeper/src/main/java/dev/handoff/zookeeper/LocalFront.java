// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The callers of one JVM behind one cluster request: a local {@link dev.handoff.Semaphore} of
 * {@code localCapacity} permits, fed by one lease of {@code localCapacity} permits of a
 * {@link ZooKeeperSemaphore}.
 *
 * <p>The first local acquisition takes a <em>block</em> of {@code localCapacity} cluster permits
 * (one znode, one place in the cluster queue); while the block is held, local acquisitions are
 * served by the local semaphore, FIFO within this JVM, without a round trip to ZooKeeper; when the
 * last local lease is closed and nobody waits locally, the block goes back to the cluster. So
 * thousands of threads or coroutines of one replica cost one znode, and ZooKeeper sees one request
 * per busy period of the replica instead of one per call.
 *
 * <p>The price: a replica holds its whole block while any of its callers holds any part of it, so
 * the cluster's permits are shared between replicas in blocks, and fairness across the cluster is
 * per block (strict FIFO between replicas' blocks, strict FIFO between callers of one replica).
 * Use the {@link ZooKeeperSemaphore} itself when requests are few and heavy, or when every
 * request must take its own place in the cluster-wide queue.
 *
 * <pre>{@code
 * LocalFront front = cluster.withLocalFront(8);      // this replica takes 8 of the cluster's permits at a time
 * try (Lease lease = front.acquireBlocking(1)) {
 *     callDownstream();
 * }
 * }</pre>
 *
 * <p>If the block's session is lost, every local lease of that block reports
 * {@link Lease#isValid()} {@code false} and completes {@link Lease#whenLost()}, local waiters fail
 * with {@link SessionLostException}, and the next acquisition starts over with a new block.
 */
public final class LocalFront {

    /*
     * Implementation notes. A Generation is one local Semaphore(localCapacity) and at most one
     * block. Between blocks the front itself holds all localCapacity local permits, so local
     * acquisitions queue (FIFO) in the local semaphore; the first one to queue starts the cluster
     * request for the block. The grant releases the front's local permits, which the local
     * semaphore hands to its queue in order. A local release that leaves the local semaphore idle
     * (everything free, nobody queued: tryAcquire(localCapacity) succeeds) takes the permits back
     * for the front and closes the block. The decisions "start a block" and "return the block" are
     * made under `lock`, as is every local acquisition that may queue, so a block is never returned
     * while someone is about to queue for it. Local releases (which run local waiters' callbacks)
     * and cluster calls happen outside the lock.
     * When the block is lost, its generation's local semaphore is closed (its waiters fail) and a
     * fresh generation takes its place; leases of the old generation release into the old one.
     */

    private final ZooKeeperSemaphore cluster;
    private final long localCapacity;
    private final ReentrantLock lock = new ReentrantLock();
    /** The current generation; replaced under lock. */
    private Generation current;

    LocalFront(ZooKeeperSemaphore cluster, long localCapacity) {
        this.cluster = cluster;
        this.localCapacity = localCapacity;
        this.current = new Generation();
    }

    private final class Generation {
        final Semaphore local = new Semaphore(localCapacity);
        /** The cluster lease of this generation, or null. Guarded by lock. */
        Lease block;
        /** The cluster request in flight, or null. Guarded by lock. */
        CompletableFuture<Lease> pending;
        /** Why this generation ended, or null. Written before local.close(). */
        volatile RuntimeException failure;
        final Set<Lease> leases = ConcurrentHashMap.newKeySet();

        Generation() {
            if (!local.tryAcquire(localCapacity)) {
                throw new AssertionError("a new local semaphore is free");
            }
        }
    }

    /**
     * The number of cluster permits this front takes at a time, and the capacity of its local
     * semaphore.
     *
     * @return the local capacity
     */
    public long localCapacity() {
        return localCapacity;
    }

    /**
     * The cluster semaphore behind this front.
     *
     * @return the semaphore given to {@link ZooKeeperSemaphore#withLocalFront(long)}
     */
    public ZooKeeperSemaphore cluster() {
        return cluster;
    }

    /**
     * Whether this front holds its block of cluster permits now.
     *
     * @return {@code true} while a block is held
     */
    public boolean holdsBlock() {
        lock.lock();
        try {
            return current.block != null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Requests {@code n} permits: granted locally, in FIFO order within this JVM, once this front
     * holds its block of cluster permits. Cancellation as for
     * {@link ZooKeeperSemaphore#acquireAsync(long)}: a cancelled future never holds permits.
     *
     * @param n the number of permits, from 1 to {@link #localCapacity()}
     * @return a future completed with the lease
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     */
    public CompletableFuture<Lease> acquireAsync(long n) {
        if (n < 1 || n > localCapacity) {
            throw new IllegalArgumentException("acquireAsync(" + n + "): the number of permits must be from 1 to the local capacity "
                    + localCapacity + " of this front of " + cluster.path());
        }
        Generation g;
        CompletableFuture<Permits> local;
        CompletableFuture<Lease> startedBlock = null;
        lock.lock();
        try {
            g = current;
            local = g.local.acquireAsync(n);
            if (!local.isDone() && g.block == null && g.pending == null) {
                startedBlock = cluster.acquireAsync(localCapacity);
                g.pending = startedBlock;
            }
        } finally {
            lock.unlock();
        }
        if (startedBlock != null) {
            Generation gen = g;
            startedBlock.whenComplete((block, failure) -> blockSettled(gen, block, failure));
        }
        CompletableFuture<Permits> localRequest = local;
        CompletableFuture<Lease> result = new CompletableFuture<>() {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                localRequest.cancel(mayInterruptIfRunning);
                return super.cancel(mayInterruptIfRunning);
            }
        };
        Generation gen = g;
        local.whenComplete((ignored, failure) -> {
            if (failure != null) {
                Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                if (cause instanceof SemaphoreClosedException && gen.failure != null) {
                    cause = gen.failure;
                }
                result.completeExceptionally(cause);
                return;
            }
            Lease lease = new Lease(n, blockNode(gen), l -> released(gen, l));
            gen.leases.add(lease);
            if (gen.failure != null) {
                lease.markLost();
            }
            if (!result.complete(lease)) {
                lease.close();
            }
        });
        return result;
    }

    /**
     * Requests {@code n} permits and parks the calling thread (platform or virtual) until granted.
     * Interrupts as for {@link ZooKeeperSemaphore#acquireBlocking(long)}.
     *
     * @param n the number of permits, from 1 to {@link #localCapacity()}
     * @return the lease; close it to release the permits
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the block's session was lost before the grant
     */
    public Lease acquireBlocking(long n) throws InterruptedException {
        return ZooKeeperSemaphore.awaitLease(acquireAsync(n));
    }

    /**
     * Requests {@code n} permits, giving up after {@code timeout} with nothing held.
     *
     * @param n       the number of permits, from 1 to {@link #localCapacity()}
     * @param timeout how long to wait at most
     * @return the lease, or empty on timeout
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     * @throws NullPointerException     if {@code timeout} is null
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the block's session was lost before the grant
     */
    public Optional<Lease> tryAcquire(long n, Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        return ZooKeeperSemaphore.awaitLease(acquireAsync(n), timeout);
    }

    /**
     * Shows the local capacity, the cluster path and whether the block is held.
     *
     * @return a description for logs
     */
    @Override
    public String toString() {
        return "LocalFront[localCapacity=" + localCapacity + ", cluster=" + cluster.path() + ", block "
                + (holdsBlock() ? "held" : "not held") + "]";
    }

    private String blockNode(Generation g) {
        lock.lock();
        try {
            return g.block != null ? g.block.node() : null;
        } finally {
            lock.unlock();
        }
    }

    private void blockSettled(Generation g, Lease block, Throwable failure) {
        if (failure != null) {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            end(g, cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause.toString(), cause));
            return;
        }
        lock.lock();
        try {
            g.pending = null;
            g.block = block;
        } finally {
            lock.unlock();
        }
        block.whenLost().thenRun(() -> end(g, new SessionLostException("the block of " + localCapacity
                + " permits of " + cluster.path() + " that this local front held was lost with its session")));
        g.local.release(localCapacity); // to the local queue, in order
        returnBlockIfIdle(g);
    }

    private void released(Generation g, Lease lease) {
        g.leases.remove(lease);
        g.local.release(lease.permits());
        returnBlockIfIdle(g);
    }

    private void returnBlockIfIdle(Generation g) {
        Lease toClose = null;
        lock.lock();
        try {
            if (g.block != null && g.failure == null && g.local.tryAcquire(localCapacity)) {
                toClose = g.block;
                g.block = null;
            }
        } finally {
            lock.unlock();
        }
        if (toClose != null) {
            toClose.close();
        }
    }

    /** Ends generation g (its block lost or refused): its waiters fail, its leases are lost. */
    private void end(Generation g, RuntimeException why) {
        lock.lock();
        try {
            if (g.failure != null) {
                return;
            }
            g.failure = why;
            g.pending = null;
            g.block = null;
            if (current == g) {
                current = new Generation();
            }
        } finally {
            lock.unlock();
        }
        for (Lease lease : g.leases) {
            lease.markLost();
        }
        g.local.close();
    }
}
