// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The callers of one JVM behind one cluster request: a local FIFO queue of {@code localCapacity}
 * permits, fed by one lease (a <em>block</em>) of {@code localCapacity} permits of a
 * {@link ZooKeeperSemaphore}.
 *
 * <p>The first local acquisition takes a block of {@code localCapacity} cluster permits (one
 * znode, one place in the cluster queue); while the block is held, local acquisitions are served
 * from it, FIFO within this JVM, without a round trip to ZooKeeper. So thousands of threads or
 * coroutines of one replica cost one znode, and ZooKeeper sees one request per busy period of the
 * replica instead of one per call.
 *
 * <p><b>Handing on.</b> A front does not keep its block while the rest of the cluster waits. It
 * watches the cluster queue, and as soon as another request waits behind its block, or once it has
 * admitted callers on the block for {@code maxHold} (see
 * {@link ZooKeeperSemaphore#withLocalFront(long, Duration)}), it stops admitting local callers on
 * that block: the callers already holding finish, the block goes back to the cluster when the last
 * of them releases, and local callers still waiting are served by the front's next block, which
 * queues behind the other requests like any request. So another replica waits at most for the
 * front to notice (one watch notification, or {@code maxHold}) plus the longest local hold in
 * progress. The block also goes back as soon as the front is idle (nobody holds, nobody waits).
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
 * <p>A local lease shares the block's {@linkplain Lease#state() state} and
 * {@linkplain Lease#fencingToken() fencing token}. If the block is lost (its session lost, its
 * local deadline passed), every local lease of it reports {@link Lease#isValid()} {@code false}
 * and completes {@link Lease#whenLost()}, local waiters fail with {@link SessionLostException},
 * and the next acquisition starts over with a new block.
 */
public final class LocalFront {

    /** The maximum hold of {@link ZooKeeperSemaphore#withLocalFront(long)}: 10 seconds. */
    public static final Duration DEFAULT_MAX_HOLD = Duration.ofSeconds(10);

    /*
     * Implementation notes. Everything below is guarded by `lock`; futures are completed and
     * cluster calls made after unlocking (a completion runs the caller's dependent stages).
     *   admitting: the block that serves local callers now, or null;
     *   blocks:    every block held (admitting or draining);
     *   pending:   the cluster request for the next block, or null;
     *   queue:     local waiters, FIFO; the head is served first, nobody barges (a request that
     *              fits while the head does not waits behind it).
     * A block stops admitting (admitting = null, draining) when the cluster tells that another
     * request waits behind it, when maxHold passes, or when it is lost. A draining block goes back
     * when its last local lease is released. If local callers wait then, the next block is
     * requested at once, so it queues behind the request that made this one hand on.
     * A waiter that gives up (timeout, cancel) leaves the queue; if nobody waits any more, the
     * pending block request is withdrawn too.
     */

    private final ZooKeeperSemaphore cluster;
    private final long localCapacity;
    private final Duration maxHold;
    private final ReentrantLock lock = new ReentrantLock();
    private Block admitting;
    private final Set<Block> blocks = new java.util.HashSet<>();
    private CompletableFuture<Lease> pending;
    private final ArrayDeque<Waiter> queue = new ArrayDeque<>();

    /** Blocks handed on because another request waited, or because maxHold passed; for the tests. */
    final java.util.concurrent.atomic.AtomicLong handedOn = new java.util.concurrent.atomic.AtomicLong();

    /** A front of cluster; the checks are those of withLocalFront, whose name the messages give. */
    LocalFront(ZooKeeperSemaphore cluster, long localCapacity, Duration maxHold) {
        Objects.requireNonNull(maxHold, "maxHold");
        long c = cluster.capacity();
        if (localCapacity < 1 || localCapacity > c) {
            throw new IllegalArgumentException("withLocalFront(" + localCapacity
                    + "): the local capacity must be from 1 to the capacity " + c + " of " + cluster.path());
        }
        if (maxHold.isZero() || maxHold.isNegative()) {
            throw new IllegalArgumentException(
                    "withLocalFront(" + localCapacity + ", " + maxHold + "): the maximum hold must be positive");
        }
        this.cluster = cluster;
        this.localCapacity = localCapacity;
        this.maxHold = maxHold;
    }

    /** One lease of localCapacity cluster permits and the local permits it serves. */
    private static final class Block {
        final Lease lease;
        long free;
        long held;
        ScheduledFuture<?> holdTimer;

        Block(Lease lease, long free) {
            this.lease = lease;
            this.free = free;
        }
    }

    private static final class Waiter {
        final long n;
        final CompletableFuture<Lease> future = new CompletableFuture<>();

        Waiter(long n) {
            this.n = n;
        }
    }

    /** A local lease to hand to its waiter once the lock is released. */
    private record Grant(Waiter waiter, Lease lease) {}

    /**
     * The number of cluster permits this front takes at a time: the local callers share them.
     *
     * @return the local capacity
     */
    public long localCapacity() {
        return localCapacity;
    }

    /**
     * How long this front admits local callers on one block at most.
     *
     * @return the maximum hold given to {@link ZooKeeperSemaphore#withLocalFront(long, Duration)}
     */
    public Duration maxHold() {
        return maxHold;
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
     * Whether this front holds a block of cluster permits now (admitting or draining).
     *
     * @return {@code true} while a block is held
     */
    public boolean holdsBlock() {
        lock.lock();
        try {
            return !blocks.isEmpty();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Requests {@code n} permits: granted locally, in FIFO order within this JVM, from this front's
     * block of cluster permits (taken first if needed). Cancellation as for
     * {@link ZooKeeperSemaphore#acquireAsync(long)}: a cancelled future never holds permits, and if
     * nobody else waits locally, the front's request for a block is withdrawn as well.
     *
     * <pre>{@code
     * front.acquireAsync(1).thenCompose(lease -> callDownstreamAsync().whenComplete((r, e) -> lease.close()));
     * }</pre>
     *
     * @param n the number of permits, from 1 to {@link #localCapacity()}
     * @return a future completed with the lease
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     */
    public CompletableFuture<Lease> acquireAsync(long n) {
        return acquire("acquireAsync", n);
    }

    private CompletableFuture<Lease> acquire(String call, long n) {
        if (n < 1 || n > localCapacity) {
            throw new IllegalArgumentException(
                    call + "(" + n + "): the number of permits must be from 1 to the local capacity " + localCapacity
                            + " of this front of " + cluster.path());
        }
        Waiter w = new Waiter(n);
        Grant now = null;
        boolean request = false;
        lock.lock();
        try {
            Block b = admitting;
            if (b != null && queue.isEmpty() && b.free >= n) {
                now = take(b, w);
            } else {
                queue.add(w);
                request = admitting == null && pending == null;
            }
        } finally {
            lock.unlock();
        }
        if (now != null) {
            hand(now);
            return w.future;
        }
        w.future.whenComplete((lease, failure) -> {
            if (failure != null) {
                gaveUp(w);
            }
        });
        if (request) {
            requestBlock();
        }
        return w.future;
    }

    /**
     * Requests {@code n} permits and parks the calling thread (platform or virtual) until granted.
     * Interrupts as for {@link ZooKeeperSemaphore#acquireBlocking(long)}.
     *
     * <pre>{@code
     * try (Lease lease = front.acquireBlocking(1)) {
     *     callDownstream();
     * }
     * }</pre>
     *
     * @param n the number of permits, from 1 to {@link #localCapacity()}
     * @return the lease; close it to release the permits
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the block's session was lost before the grant
     */
    public Lease acquireBlocking(long n) throws InterruptedException {
        return LeaseFutures.awaitLease(acquire("acquireBlocking", n));
    }

    /**
     * Requests {@code n} permits, giving up after {@code timeout} with nothing held; a front that
     * gives up its last local waiter also withdraws its request for a block. A zero or negative
     * timeout takes the permits only if this front's block can serve them at once.
     *
     * <pre>{@code
     * Optional<Lease> lease = front.tryAcquireBlocking(1, Duration.ofMillis(200));
     * }</pre>
     *
     * @param n       the number of permits, from 1 to {@link #localCapacity()}
     * @param timeout how long to wait at most
     * @return the lease, or empty on timeout
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > localCapacity()}
     * @throws NullPointerException     if {@code timeout} is null
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the block's session was lost before the grant
     */
    public Optional<Lease> tryAcquireBlocking(long n, Duration timeout) throws InterruptedException {
        Objects.requireNonNull(timeout, "timeout");
        return LeaseFutures.awaitLease(acquire("tryAcquireBlocking", n), timeout);
    }

    /**
     * Shows the local capacity, the cluster path, the blocks held and the local waiters.
     *
     * @return a description for logs
     */
    @Override
    public String toString() {
        lock.lock();
        try {
            return "LocalFront[localCapacity=" + localCapacity + ", cluster=" + cluster.path() + ", blocks held="
                    + blocks.size() + (admitting != null ? " (admitting)" : "") + ", waiting here=" + queue.size()
                    + "]";
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------------

    /** Under lock: takes w's permits from b. */
    private Grant take(Block b, Waiter w) {
        b.free -= w.n;
        b.held += w.n;
        return new Grant(w, new Lease(w.n, b.lease, l -> released(b, l)));
    }

    /** Under lock: serves the queue's heads from the admitting block, in order. */
    private List<Grant> serveHeads() {
        List<Grant> out = new ArrayList<>();
        Block b = admitting;
        while (b != null && !queue.isEmpty()) {
            Waiter head = queue.peek();
            if (head.future.isDone()) {
                queue.poll();
                continue;
            }
            if (head.n > b.free) {
                break;
            }
            queue.poll();
            out.add(take(b, head));
        }
        return out;
    }

    private static void hand(Grant g) {
        if (!g.waiter.future.complete(g.lease)) {
            g.lease.release(); // cancelled meanwhile
        }
    }

    private void requestBlock() {
        CompletableFuture<Lease> f = null;
        RuntimeException refused = null;
        lock.lock();
        try {
            if (pending != null || queue.isEmpty()) {
                return;
            }
            f = cluster.acquireAsync(localCapacity);
            pending = f;
        } catch (RuntimeException e) {
            refused = e; // the cluster's capacity shrank below localCapacity
        } finally {
            lock.unlock();
        }
        if (refused != null) {
            failWaiters(refused);
            return;
        }
        CompletableFuture<Lease> requested = f;
        requested.whenComplete((lease, failure) -> blockSettled(requested, lease, failure));
    }

    private void blockSettled(CompletableFuture<Lease> f, Lease lease, Throwable failure) {
        List<Grant> grants;
        Block b;
        boolean idle;
        lock.lock();
        try {
            if (pending != f) {
                if (lease != null) {
                    lease.release(); // withdrawn, but granted first
                }
                return;
            }
            pending = null;
            if (failure != null) {
                b = null;
                grants = List.of();
                idle = false;
            } else {
                b = new Block(lease, localCapacity);
                blocks.add(b);
                admitting = b;
                grants = serveHeads();
                idle = b.held == 0 && queue.isEmpty();
                if (idle) {
                    blocks.remove(b);
                    admitting = null;
                }
            }
        } finally {
            lock.unlock();
        }
        if (failure != null) {
            Throwable cause =
                    failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            if (!(cause instanceof java.util.concurrent.CancellationException)) {
                failWaiters(
                        cause instanceof RuntimeException
                                ? (RuntimeException) cause
                                : new IllegalStateException(cause.toString(), cause));
            }
            return;
        }
        if (idle) {
            lease.release(); // every waiter gave up meanwhile
            return;
        }
        b.holdTimer = ZooKeeperSemaphore.TIMER.schedule(() -> handOn(b), maxHold.toNanos(), TimeUnit.NANOSECONDS);
        lease.whenLost().thenRun(() -> blockLost(b));
        cluster.whenOthersWait(lease, () -> handOn(b));
        grants.forEach(LocalFront::hand);
    }

    /** Another request waits in the cluster queue, or maxHold passed: stop admitting on b. */
    private void handOn(Block b) {
        boolean giveBack;
        boolean request;
        lock.lock();
        try {
            if (admitting != b) {
                return;
            }
            handedOn.incrementAndGet();
            admitting = null;
            giveBack = b.held == 0;
            if (giveBack) {
                blocks.remove(b);
            }
            request = !queue.isEmpty() && pending == null;
        } finally {
            lock.unlock();
        }
        if (giveBack) {
            giveBack(b);
        }
        if (request) {
            requestBlock();
        }
    }

    private void released(Block b, Lease local) {
        List<Grant> grants = List.of();
        boolean giveBack = false;
        boolean request = false;
        lock.lock();
        try {
            b.held -= local.permits();
            if (admitting == b) {
                b.free += local.permits();
                grants = serveHeads();
                if (b.held == 0 && queue.isEmpty()) {
                    admitting = null; // idle: the block goes back
                    blocks.remove(b);
                    giveBack = true;
                }
            } else if (b.held == 0 && blocks.remove(b)) {
                giveBack = true; // the last local holder of a draining block
                request = !queue.isEmpty() && pending == null && admitting == null;
            }
        } finally {
            lock.unlock();
        }
        grants.forEach(LocalFront::hand);
        if (giveBack) {
            giveBack(b);
        }
        if (request) {
            requestBlock();
        }
    }

    private void giveBack(Block b) {
        ScheduledFuture<?> t = b.holdTimer;
        if (t != null) {
            t.cancel(false);
        }
        cluster.stopWatchingForWaiters(b.lease);
        b.lease.release();
    }

    /** A waiter timed out, was cancelled or interrupted: it leaves the queue, and so may the block request. */
    private void gaveUp(Waiter w) {
        CompletableFuture<Lease> withdraw = null;
        lock.lock();
        try {
            queue.remove(w);
            if (queue.isEmpty() && pending != null) {
                withdraw = pending;
                pending = null;
            }
        } finally {
            lock.unlock();
        }
        if (withdraw != null) {
            withdraw.cancel(false); // withdraws its node; a grant that raced is released by blockSettled
            withdraw.whenComplete((lease, failure) -> {
                if (lease != null) {
                    lease.release();
                }
            });
        }
    }

    /** The block was lost: its local leases are lost with it (they share its state), local waiters fail. */
    private void blockLost(Block b) {
        boolean giveBack;
        lock.lock();
        try {
            if (admitting == b) {
                admitting = null;
            }
            giveBack = b.held == 0 && blocks.remove(b);
        } finally {
            lock.unlock();
        }
        if (giveBack) {
            giveBack(b);
        }
        failWaiters(new SessionLostException("the block of " + localCapacity + " permits of " + cluster.path()
                + " that this local front held was lost (its session lost, or its local deadline passed)"));
    }

    private void failWaiters(RuntimeException why) {
        List<Waiter> failed;
        lock.lock();
        try {
            failed = new ArrayList<>(queue);
            queue.clear();
        } finally {
            lock.unlock();
        }
        for (Waiter w : failed) {
            w.future.completeExceptionally(why);
        }
    }
}
