// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import dev.handoff.SemaphoreClosedException;
import dev.handoff.SemaphoreRejectedException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.utils.PathUtils;

/**
 * A weighted, strictly FIFO semaphore shared by every client of one ZooKeeper path: the
 * cluster-wide counterpart of {@link dev.handoff.Semaphore}.
 *
 * <p>Every process that constructs a {@code ZooKeeperSemaphore} on the same ensemble and path
 * shares one budget of {@link #capacity()} permits. A request for {@code n} permits is granted all
 * at once or not at all, and requests are granted strictly in the order in which they reached
 * ZooKeeper, across all clients: a heavy request at the head blocks lighter ones behind it (no
 * barging, no starvation).
 *
 * <pre>{@code
 * ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-bytes", 64 << 20);
 * try (Lease lease = budget.acquireBlocking(body.length)) {
 *     downstream.send(body);
 * }
 * }</pre>
 *
 * <p><b>Leases.</b> Each request is an ephemeral znode of the client's session. A {@link Lease}
 * says valid only while its holder can be sure the server has not expired that session: see
 * {@link Lease} for what it promises (not valid while the connection is suspended, lost for good
 * when the session is lost, its node is deleted or a local deadline passes, a deadline moved only by
 * operations the leader ordered) and for what a downstream store may do with the
 * {@linkplain Lease#fencingToken() fencing token} (refuse an overtaken holder when leases are
 * exclusive; check the lease's node when they overlap). When the session expires
 * (a crashed or partitioned process), ZooKeeper deletes the nodes, so the permits of a crashed
 * holder come back by themselves; its waiting requests fail with {@link SessionLostException}.
 *
 * <p><b>Capacity.</b> {@link #setCapacity(long)} changes it for every client, with the core's
 * rules: growth grants waiting requests, a shrink below what is held is a debt that releases pay
 * first, and waiting requests heavier than the new capacity fail.
 *
 * <p><b>Limits.</b> The queue holds at most {@link #MAX_QUEUE_LENGTH} requests (a request queued
 * beyond it fails with {@link SemaphoreRejectedException}), so that one read of it stays well
 * under ZooKeeper's {@code jute.maxbuffer}. ZooKeeper numbers a node's children with a signed
 * 32-bit counter that moves on every create and delete (two per request); before it can run out,
 * the semaphore moves on to a new <em>generation</em> (a fresh child node, whose counter starts at
 * zero), about every {@value #SWITCH_AT_SEQUENCE} counts, that is every 500 million requests:
 * there is no limit on the requests in a path's lifetime. If the counter still misbehaves (a path
 * used by an older client, a node made by hand), granting stops instead of guessing, and an alarm
 * is raised: logged, counted by {@link #alarmCount()} and passed to the
 * {@linkplain #addAlarmListener(Consumer) alarm listeners}.
 *
 * <p><b>Threads.</b> Every method is thread-safe and none uses {@code synchronized}: the blocking
 * faces park on a {@link CompletableFuture}, so virtual threads are not pinned. The future returned
 * by {@link #acquireAsync(long)} is completed on Curator's event thread: dependent stages that
 * block should be attached with an {@code *Async} method.
 */
public final class ZooKeeperSemaphore implements AutoCloseable {

    /*
     * Implementation notes
     * ====================
     *
     * Znode layout
     * ------------
     *   <path>                        PERSISTENT, created by the first client if absent; data = the
     *                                 capacity in decimal ASCII ("16"); its data version is the
     *                                 capacity's version (setCapacity writes with it)
     *   <path>/gen-<10 digits>        PERSISTENT, one per generation; the highest is the newest,
     *                                 where new requests go
     *   <path>/gen-N/[_c_<uuid>-]req-w<weight:19 digits>-<sequence:10 digits>
     *                                 EPHEMERAL_SEQUENTIAL, one per request, created by the
     *                                 requesting client (protected mode: a create retried after a
     *                                 connection loss finds its own node by the uuid); no data until
     *                                 granted, then "granted" (a signal for the request behind it)
     *   <path>/gen-N/seal-<sequence>  PERSISTENT_SEQUENTIAL: generation N is closed; its requests with
     *                                 a larger sequence are void (their owners ask again in N+1)
     *
     * The weight is in the node's NAME: one getChildren read returns every request of a generation
     * and its weight from one consistent snapshot.
     *
     * The rule (QueueSnapshot, which also fails closed on a child it cannot order)
     * ---------------------------------------------------------------------------
     * Valid requests are ordered by (generation, sequence). Request k is granted exactly when the
     * weights of the valid requests up to and including k sum to at most the capacity. The left side
     * only decreases for a given k: a new request is queued after k (a higher sequence in k's
     * generation, or a later generation), deletions only remove weight, and the requests of an older,
     * sealed generation that count are those below its seal, all created before the seal and so
     * all visible in any read that shows the seal. So a grant, once seen, stays true, and each client
     * decides alone from its own reads. A client reads a generation after its own create succeeded
     * (ZooKeeper's per-session FIFO order), so the read contains every request queued before it.
     * Reading several generations one after the other is safe for the same reason: an older
     * generation read earlier can only have lost requests since. A generation is sealed and the next
     * one started before its 32-bit counter can run out (Generations).
     *
     * The parts, each in its own file with its own notes
     * ------------------------------------------------
     *   ZooKeeperSemaphore  the public API: requests started, leases released, the state read by
     *                       gauges, close; the constructor opens the path (Capacity, Generations)
     *   Request             one request: its node's create, re-create and withdrawal, its future
     *   Evaluation          one shared read of the queue, then of the capacity; the decision for
     *                       every local waiter; grants; the watches
     *   QueueSnapshot       one read of the whole queue and the rule applied to it (pure)
     *   Capacity            the path's data: opened, written by setCapacity, watched, applied
     *   Generations         sealing, creating and deleting generations
     *   SessionGuard        the leases' local deadline, the heartbeat, the watches on held nodes,
     *                       the connection's state changes, and losing leases
     *   LeaseFutures        how the blocking faces wait for a lease's future
     *   ScopedLease         withPermitsAsync's result
     *   Alarms              children that stop granting: logged, counted, told to the listeners
     *   LocalFront          one JVM's callers served from one block of cluster permits
     */

    /** The largest capacity: that of the local semaphore, {@link dev.handoff.Semaphore#MAX_PERMITS}. */
    public static final long MAX_CAPACITY = dev.handoff.Semaphore.MAX_PERMITS;

    /**
     * The most requests the cluster queue holds (granted and waiting, across every client); a
     * request queued beyond it fails with {@link SemaphoreRejectedException}. A request's node name
     * is about 80 bytes, so one read of a full queue is about 330 KB, a third of ZooKeeper's
     * default {@code jute.maxbuffer} (1 MB), beyond which every client of the path would lose its
     * connection on each read.
     */
    public static final int MAX_QUEUE_LENGTH = 4096;

    /**
     * The sequence from which a generation is sealed and a new one started: a third of the way below
     * the 32-bit counter's end ({@code 2147483647}), leaving room for the creates that race the switch.
     */
    public static final long SWITCH_AT_SEQUENCE = 1_000_000_000L;

    /**
     * The shortest session timeout (as the server granted it) with which the constructor opens a
     * semaphore, in milliseconds. A lease's validity bound ({@link Lease}) assumes that the leader's
     * pings to its followers are at most a twentieth of the timeout late, and a heartbeat every
     * tenth of it, at least 20 ms apart: below 200 ms the first is under 10 ms, less than a garbage
     * collection pause on the leader, and the second no longer holds.
     */
    public static final int MIN_SESSION_TIMEOUT_MS = 200;

    /**
     * The session timeout below which the constructor logs a warning, in milliseconds: the leader's
     * pings may then be less than 50 ms late before a lease could outlive its session.
     */
    public static final int WARN_SESSION_TIMEOUT_MS = 1_000;

    static final String GENERATION_PREFIX = Generations.PREFIX;
    static final byte[] GRANTED = "granted".getBytes(StandardCharsets.US_ASCII);
    static final byte[] NO_DATA = new byte[0];
    static final long RETRY_MS = 200;
    static final long MAX_RETRY_MS = 5_000;
    static final System.Logger LOG = System.getLogger(ZooKeeperSemaphore.class.getName());

    /** Heartbeats, read retries and local fronts' hold limits: one daemon thread for every semaphore. */
    static final ScheduledExecutorService TIMER;

    static {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "handoff-zookeeper-timer");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        TIMER = timer;
    }

    final CuratorFramework client;
    final String path;
    /** The capacity: its value as last read or written, its reads, writes and watch. */
    final Capacity capacity;

    final Generations generations;
    /** The queue bound; a field so that a test can lower it. */
    volatile int maxQueueLength = MAX_QUEUE_LENGTH;
    /** The clock of the local deadline; a test may replace it. */
    volatile LongSupplier nanoClock = System::nanoTime;

    /** Requests not yet granted or failed. */
    final Set<Request> waiting = ConcurrentHashMap.newKeySet();
    /** Waiting requests by node name, once created. */
    final Map<String, Request> byName = new ConcurrentHashMap<>();
    /** Leases granted and not yet released (nor lost). */
    final Set<Lease> held = ConcurrentHashMap.newKeySet();
    /** Local fronts' blocks that must learn when another request waits behind them. */
    final Map<Lease, Runnable> handOn = new ConcurrentHashMap<>();

    final SessionGuard guard;
    final Evaluation evaluation;
    volatile boolean suspended;
    /** The requests in the cluster queue in the last decision's read, or -1 before one; written by the evaluation. */
    volatile int clusterQueueLength = -1;

    private volatile boolean closed;

    final List<ZooKeeperListener> listeners = new CopyOnWriteArrayList<>();
    /** The alarms raised, their listeners and their count. */
    final Alarms alarms;

    // Measurements, read by the tests and the benchmark.
    /** Watches (node, capacity or generation) that fired, state events excluded. */
    final AtomicLong watchEvents = new AtomicLong();
    /** getChildren reads issued (the generations' list and each generation count one each). */
    final AtomicLong reads = new AtomicLong();
    /** Requests granted. */
    final AtomicLong grants = new AtomicLong();
    /** Decisions made (one per evaluation that read the whole queue). */
    final AtomicLong decisions = new AtomicLong();
    /** Run on the event thread just before each generation's read is sent; a test's seam. */
    volatile Runnable queueReadHook = () -> {};

    /**
     * Opens the semaphore at {@code path}: creates the path with the capacity as its data if it is
     * absent (parents as container nodes), otherwise checks that the capacity stored there is this
     * one. Blocks for those few round trips. Refuses a session timeout (as the server granted it)
     * below {@link #MIN_SESSION_TIMEOUT_MS}, with which no lease could keep its promise, and logs a
     * warning below {@link #WARN_SESSION_TIMEOUT_MS}; what the client cannot see, the server's
     * {@code tickTime} first, {@link Lease} states as assumptions.
     *
     * <pre>{@code
     * ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-mib", 64);
     * }</pre>
     *
     * @param client   a started Curator client; the semaphore's requests are ephemeral nodes of
     *                 its session
     * @param path     the semaphore's znode, for example {@code "/semaphores/downstream"}
     * @param capacity the number of permits shared by every client of {@code path}, from 1 to
     *                 {@link #MAX_CAPACITY}; after a {@link #setCapacity(long)}, the capacity it set
     * @throws NullPointerException     if {@code client} or {@code path} is null
     * @throws IllegalArgumentException if {@code path} is not a valid ZooKeeper path, if
     *                                  {@code capacity} is out of range, if the data at
     *                                  {@code path} is not a capacity, if it is a different
     *                                  capacity (the message names both), or if the session
     *                                  timeout the server granted is below
     *                                  {@link #MIN_SESSION_TIMEOUT_MS} (the message names it)
     * @throws IllegalStateException    if the client is not started, or ZooKeeper could not be
     *                                  reached (the cause is Curator's exception)
     */
    public ZooKeeperSemaphore(CuratorFramework client, String path, long capacity) {
        this.client = Objects.requireNonNull(client, "client");
        Objects.requireNonNull(path, "path");
        try {
            PathUtils.validatePath(path);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "ZooKeeperSemaphore(" + path + ", " + capacity + "): not a valid ZooKeeper path: " + e.getMessage(),
                    e);
        }
        if ("/".equals(path)) {
            throw new IllegalArgumentException(
                    "ZooKeeperSemaphore(/, " + capacity + "): the root cannot be a semaphore's path");
        }
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("ZooKeeperSemaphore(" + path + ", " + capacity
                    + "): the capacity must be from 1 to " + MAX_CAPACITY);
        }
        if (client.getState() != CuratorFrameworkState.STARTED) {
            throw new IllegalStateException("ZooKeeperSemaphore(" + path + ", " + capacity + "): the Curator client is "
                    + client.getState() + ", not STARTED");
        }
        this.path = path;
        this.capacity = new Capacity(this, client, path, capacity);
        this.alarms = new Alarms(path);
        this.guard = new SessionGuard(this, client, path);
        this.generations = new Generations(this, client, path);
        this.evaluation = new Evaluation(this, client, path);
        String call = "ZooKeeperSemaphore(" + path + ", " + capacity + ")";
        openPath(call);
        SessionGuard.checkTimeout(call, negotiatedTimeoutMs());
        guard.start(negotiatedTimeoutMs());
    }

    private void openPath(String call) {
        try {
            capacity.open(call);
            generations.open();
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(call + ": interrupted while opening " + path, e);
        } catch (Exception e) {
            throw new IllegalStateException(call + ": could not create or read " + path + ": " + e, e);
        }
    }

    String generationPath(long generation) {
        return generations.path(generation);
    }

    int negotiatedTimeoutMs() {
        int t = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        int known = guard.timeoutMs();
        return t > 0 ? t : (known > 0 ? known : client.getZookeeperClient().getConnectionTimeoutMs());
    }

    /**
     * The number of permits shared by every client of the path, as this client last read it: a
     * {@link #setCapacity(long)} by any client is seen here within about one round trip.
     *
     * @return the capacity
     */
    public long capacity() {
        return capacity.value();
    }

    /**
     * The semaphore's znode.
     *
     * @return the path given to the constructor
     */
    public String path() {
        return path;
    }

    /**
     * How many leases this object holds now: granted, not released, not lost. A local front's block
     * counts as one lease, however many of its local leases are out. A snapshot, for a gauge.
     *
     * @return the leases held through this object
     */
    public int leaseCount() {
        return held.size();
    }

    /**
     * The permits of the leases this object holds now (see {@link #leaseCount()}). A snapshot,
     * for a gauge; the permits held by every client of the path are not known to any one client.
     *
     * @return the permits held through this object
     */
    public long heldPermits() {
        return held.stream().mapToLong(Lease::permits).sum();
    }

    /**
     * How many requests of this object wait now: asked for, neither granted nor failed nor
     * withdrawn. A local front's pending block counts as one. A snapshot, for a gauge.
     *
     * @return the waiting requests of this object
     */
    public int queueLength() {
        return (int) waiting.stream().filter(r -> !r.future.isDone()).count();
    }

    /**
     * The permits that this object's waiting requests ask for (see {@link #queueLength()}). A
     * snapshot, for a gauge.
     *
     * @return the permits waited for through this object
     */
    public long queuedPermits() {
        return waiting.stream()
                .filter(r -> !r.future.isDone())
                .mapToLong(r -> r.n)
                .sum();
    }

    /**
     * The length of the cluster queue, every client's requests granted and waiting, in this
     * object's last read of it. The semaphore reads the queue only while this object has a
     * request waiting (or a local front's block must learn of waiters), so the value is as old as
     * that read; -1 before the first.
     *
     * @return the requests in the cluster queue at the last read, or -1
     */
    public int clusterQueueLength() {
        return clusterQueueLength;
    }

    /**
     * Whether this object's Curator client is connected now: not suspended, not lost, not closed.
     * While it is not, no lease of this object is {@linkplain Lease#isValid() valid}.
     *
     * @return true while connected
     */
    public boolean isConnected() {
        return !suspended && client.getState() == CuratorFrameworkState.STARTED;
    }

    /**
     * Sets the capacity of the semaphore for every client of the path: a versioned write of the
     * path's data, which every client watches. The core's rules apply: growing grants waiting
     * requests in FIFO order; shrinking below the permits held is a debt, paid by releases before
     * anyone new is granted (held permits are never revoked); waiting requests heavier than the new
     * capacity fail with {@link IllegalStateException}. A grant decided by another client in the
     * same instant may still use the old capacity (each client decides with the capacity it read
     * with its queue).
     *
     * <pre>{@code
     * budget.setCapacity(budget.capacity() * 2);   // the downstream was scaled up
     * }</pre>
     *
     * @param n the new capacity, from 1 to {@link #MAX_CAPACITY}
     * @throws IllegalArgumentException if {@code n} is out of range
     * @throws IllegalStateException    if this semaphore is closed (a {@link SemaphoreClosedException}),
     *                                  or ZooKeeper could not be reached (the cause is Curator's exception)
     * @throws InterruptedException     if interrupted while writing
     */
    public void setCapacity(long n) throws InterruptedException {
        if (n < 1 || n > MAX_CAPACITY) {
            throw new IllegalArgumentException(
                    "setCapacity(" + n + ") on " + path + ": the capacity must be from 1 to " + MAX_CAPACITY);
        }
        if (closed) {
            throw new SemaphoreClosedException(
                    "setCapacity(" + n + ") on " + path + ": this ZooKeeperSemaphore is closed");
        }
        try {
            capacity.write(n);
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(
                    "setCapacity(" + n + ") on " + path + ": could not write the capacity: " + e, e);
        }
    }

    /**
     * Requests {@code n} permits: creates this request's node at once (in the background) and
     * completes the future with a {@link Lease} when the request is granted.
     *
     * <p><b>Fairness.</b> Strictly FIFO across every client of the path, in the order in which
     * the requests' nodes were created; all {@code n} permits are granted together.
     *
     * <p><b>Cancellation.</b> {@code future.cancel(...)} withdraws the request (deletes its node);
     * if the grant raced the cancel, the lease that lost is released, so a cancelled future never
     * holds permits.
     *
     * <p>The future fails with {@link SessionLostException} if the client's session is lost (or the
     * client is closed) before the grant, with {@link SemaphoreClosedException} if this semaphore is
     * {@linkplain #close() closed}, with {@link SemaphoreRejectedException} if the queue already
     * holds {@link #MAX_QUEUE_LENGTH} requests, with {@link IllegalStateException} if a
     * {@link #setCapacity(long)} made the capacity smaller than {@code n}, with Curator's
     * exception if the node cannot be created, and with {@link IllegalStateException} (whose cause
     * is ZooKeeper's exception) if reads of the queue have failed for a whole session timeout with
     * an error other than a lost connection, for example {@code NOAUTH} after an ACL change. Reads
     * that fail are retried with a backoff from 200 ms to 5 s, and reported once per change of
     * the failure to the {@linkplain #addListener(ZooKeeperListener) listeners} and the log.
     *
     * <pre>{@code
     * budget.acquireAsync(mib).thenCompose(lease ->
     *         downstream.sendAsync(body).whenComplete((response, failure) -> lease.close()));
     * }</pre>
     *
     * @param n the number of permits, from 1 to {@link #capacity()}
     * @return a future completed with the lease, on Curator's event thread
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > capacity()} (it could never
     *                                  be granted); nothing is created
     */
    public CompletableFuture<Lease> acquireAsync(long n) {
        checkWeight("acquireAsync", n);
        return start("acquireAsync", n, false);
    }

    private CompletableFuture<Lease> start(String call, long n, boolean oneShot) {
        Request request = new Request(this, call, n, oneShot);
        if (closed) {
            request.future.completeExceptionally(closedException(call, n));
            return request.future;
        }
        if (client.getState() != CuratorFrameworkState.STARTED) {
            request.future.completeExceptionally(new SessionLostException(
                    call + "(" + n + ") on " + path + ": the Curator client is " + client.getState()));
            return request.future;
        }
        request.start();
        return request.future;
    }

    /**
     * Requests {@code n} permits and parks the calling thread (platform or virtual) until granted.
     *
     * <p>On interrupt (also one pending on entry) the request is withdrawn, nothing is held, and
     * {@link InterruptedException} is thrown; if the grant won the race, this method returns the
     * lease normally with the thread's interrupt flag set.
     *
     * <pre>{@code
     * try (Lease lease = budget.acquireBlocking(mib)) {
     *     downstream.send(body);
     * }
     * }</pre>
     *
     * @param n the number of permits, from 1 to {@link #capacity()}
     * @return the lease; close it to release the permits
     * @throws IllegalArgumentException    if {@code n < 1} or {@code n > capacity()}
     * @throws InterruptedException        if interrupted before the grant
     * @throws SessionLostException        if the session was lost (or the client closed) before the grant
     * @throws SemaphoreClosedException    if this semaphore was closed
     * @throws SemaphoreRejectedException  if the queue is full ({@link #MAX_QUEUE_LENGTH})
     */
    public Lease acquireBlocking(long n) throws InterruptedException {
        checkWeight("acquireBlocking", n);
        return LeaseFutures.awaitLease(start("acquireBlocking", n, false));
    }

    /**
     * Requests {@code n} permits and parks the calling thread until granted or until
     * {@code timeout} has passed; on timeout the request is withdrawn and nothing is held.
     * A zero or negative timeout makes exactly one decision: the request's node is created, the
     * queue read once, and the request granted if it is at the head and fits, otherwise withdrawn
     * (one round trip more than a local semaphore, and never a wait for another holder).
     * Interrupts as for {@link #acquireBlocking(long)}.
     *
     * <pre>{@code
     * Optional<Lease> lease = budget.tryAcquireBlocking(4, Duration.ofSeconds(2));
     * if (lease.isEmpty()) {
     *     return Response.busy();
     * }
     * try (Lease held = lease.get()) {
     *     return handle(request);
     * }
     * }</pre>
     *
     * @param n       the number of permits, from 1 to {@link #capacity()}
     * @param timeout how long to wait at most; zero or negative: one decision
     * @return the lease, or empty on timeout
     * @throws IllegalArgumentException    if {@code n < 1} or {@code n > capacity()}
     * @throws NullPointerException        if {@code timeout} is null
     * @throws InterruptedException        if interrupted before the grant
     * @throws SessionLostException        if the session was lost (or the client closed) before the grant
     * @throws SemaphoreClosedException    if this semaphore was closed
     * @throws SemaphoreRejectedException  if the queue is full ({@link #MAX_QUEUE_LENGTH})
     */
    public Optional<Lease> tryAcquireBlocking(long n, Duration timeout) throws InterruptedException {
        checkWeight("tryAcquireBlocking", n);
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isZero() || timeout.isNegative()) {
            return LeaseFutures.awaitOneDecision(start("tryAcquireBlocking", n, true));
        }
        return LeaseFutures.awaitLease(start("tryAcquireBlocking", n, false), timeout);
    }

    /**
     * Acquires {@code n} permits, runs {@code body} once they are granted, and releases them when
     * the stage it returns completes, however it completes: normally, exceptionally, or cancelled.
     * The permits are released exactly once, also when {@code body} throws or returns {@code null}
     * (the result then fails with that exception, or a {@link NullPointerException}).
     *
     * <p><b>Cancellation.</b> Cancelling the result before the grant withdraws the request (its
     * node is deleted) and {@code body} never runs; a grant that races the cancel is released
     * without running {@code body}. Once {@code body} has started, cancelling the result does not
     * stop it: the permits are released when its stage completes. If the request fails (session
     * lost, closed, rejected, a capacity shrink), the result fails with the same exception and
     * nothing is released.
     *
     * <pre>{@code
     * CompletableFuture<Response> sent = budget.withPermitsAsync(mib, () -> downstream.sendAsync(body));
     * }</pre>
     *
     * @param <T>  the body's result type
     * @param n    the number of permits, from 1 to {@link #capacity()}
     * @param body starts the work, on Curator's event thread once granted, and returns its stage
     * @return the body's result, completed after the permits were released
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > capacity()}; nothing is created
     * @throws NullPointerException     if {@code body} is null
     */
    public <T> CompletableFuture<T> withPermitsAsync(long n, Supplier<? extends CompletionStage<T>> body) {
        checkWeight("withPermitsAsync", n);
        Objects.requireNonNull(body, "withPermitsAsync(" + n + ", null): the body is null");
        return ScopedLease.start(n, start("withPermitsAsync", n, false), body);
    }

    /**
     * Acquires {@code n} permits (parking the thread as {@link #acquireBlocking(long)} does), runs
     * {@code body}, and releases them however it ends.
     *
     * <pre>{@code
     * Response response = budget.withPermitsBlocking(mib, () -> downstream.send(body));
     * }</pre>
     *
     * @param <T>  the body's result type
     * @param n    the number of permits, from 1 to {@link #capacity()}
     * @param body the work
     * @return what {@code body} returned
     * @throws IllegalArgumentException   if {@code n < 1} or {@code n > capacity()}
     * @throws NullPointerException       if {@code body} is null
     * @throws InterruptedException       if interrupted before the grant (nothing held, body not run)
     * @throws SessionLostException       if the session was lost before the grant
     * @throws SemaphoreClosedException   if this semaphore was closed
     * @throws SemaphoreRejectedException if the queue is full
     * @throws Exception                  whatever {@code body} threw, after the release
     */
    public <T> T withPermitsBlocking(long n, Callable<T> body) throws Exception {
        checkWeight("withPermitsBlocking", n);
        Objects.requireNonNull(body, "withPermitsBlocking(" + n + ", null): the body is null");
        Lease lease = LeaseFutures.awaitLease(start("withPermitsBlocking", n, false));
        try {
            return body.call();
        } finally {
            lease.close();
        }
    }

    /**
     * A local front of {@code localCapacity} permits that hands its block back after at most
     * {@link LocalFront#DEFAULT_MAX_HOLD}; see {@link #withLocalFront(long, Duration)}.
     *
     * <pre>{@code
     * LocalFront front = budget.withLocalFront(8);
     * }</pre>
     *
     * @param localCapacity the block of cluster permits this JVM takes at a time, from 1 to
     *                      {@link #capacity()}
     * @return a new local front over this semaphore
     * @throws IllegalArgumentException if {@code localCapacity} is out of range
     */
    public LocalFront withLocalFront(long localCapacity) {
        return withLocalFront(localCapacity, LocalFront.DEFAULT_MAX_HOLD);
    }

    /**
     * A local front of {@code localCapacity} permits: the callers of one JVM share one cluster
     * request of {@code localCapacity} permits instead of each creating a node. The front stops
     * admitting local callers and hands its block back once another request waits in the cluster
     * queue, or once it has held the block for {@code maxHold}. See {@link LocalFront}.
     *
     * <pre>{@code
     * LocalFront front = budget.withLocalFront(8, Duration.ofMillis(500));
     * }</pre>
     *
     * @param localCapacity the block of cluster permits this JVM takes at a time, from 1 to
     *                      {@link #capacity()}
     * @param maxHold       how long the front admits local callers on one block at most, positive
     * @return a new local front over this semaphore
     * @throws IllegalArgumentException if {@code localCapacity} or {@code maxHold} is out of range
     * @throws NullPointerException     if {@code maxHold} is null
     */
    public LocalFront withLocalFront(long localCapacity, Duration maxHold) {
        return new LocalFront(this, localCapacity, maxHold);
    }

    /**
     * Registers a listener for alarms: a child of the path that the semaphore cannot order (a
     * sequence that does not parse, is negative or is shared by two children), which stops
     * granting until it is gone. Each alarm is also logged (WARNING, {@link System.Logger}) and
     * counted by {@link #alarmCount()}. Called on Curator's event thread, once per offending child.
     *
     * <pre>{@code
     * budget.addAlarmListener(message -> meterRegistry.counter("zookeeper.semaphore.alarms").increment());
     * }</pre>
     *
     * @param listener receives a message naming the path, the child and the reason
     * @throws NullPointerException if {@code listener} is null
     */
    public void addAlarmListener(Consumer<? super String> listener) {
        alarms.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Registers a listener for this object's session changes, lost leases, read failures and
     * grants; see {@link ZooKeeperListener}. Listeners are told in the order they were added.
     *
     * <pre>{@code
     * budget.addListener(new ZooKeeperListener() {
     *     @Override
     *     public void leaseLost(Lease lease, String reason) {
     *         lostLeases.increment();
     *     }
     * });
     * }</pre>
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    public void addListener(ZooKeeperListener listener) {
        listeners.add(Objects.requireNonNull(listener, "addListener(null): the listener is null"));
    }

    /**
     * How many alarms this object has raised (see {@link #addAlarmListener(Consumer)}); for a gauge.
     *
     * @return the count since construction
     */
    public long alarmCount() {
        return alarms.count();
    }

    /**
     * Stops this semaphore object (not the shared semaphore): every request of this object still
     * waiting fails with {@link SemaphoreClosedException} and withdraws its node, and later
     * acquisitions fail the same way. Leases already granted keep being watched (suspension,
     * session loss, local deadline) until they are released, and still release on
     * {@link Lease#close()}. Idempotent.
     *
     * <pre>{@code
     * budget.close();   // at shutdown, before closing the Curator client
     * }</pre>
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Request r : waiting) {
            r.future.completeExceptionally(closedException(r.call, r.n));
        }
        detachIfDone();
    }

    /**
     * Shows the path, the capacity, and this object's waiting requests and live leases.
     *
     * @return a description for logs
     */
    @Override
    public String toString() {
        return "ZooKeeperSemaphore[path=" + path + ", capacity=" + capacity.value() + ", waiting here=" + waiting.size()
                + ", held here=" + held.size() + (closed ? ", closed" : "") + "]";
    }

    /**
     * This object's whole local state, for a test's failure message: the session view, the
     * evaluation in progress, each waiting request (its node and where its creation stands), the
     * leases held and the nodes watched.
     */
    String describe() {
        StringBuilder b = new StringBuilder(toString());
        b.append("\n  session: ")
                .append(suspended ? "suspended" : "connected")
                .append(", client ")
                .append(client.getState())
                .append(", evaluation ")
                .append(evaluation.state())
                .append(", reads sent ")
                .append(evaluation.readsSent())
                .append(", newest generation ")
                .append(generations.newest())
                .append(generations.switching() ? ", switching" : "");
        for (Request r : waiting) {
            b.append("\n  waiting ")
                    .append(r.call)
                    .append('(')
                    .append(r.n)
                    .append("): node ")
                    .append(r.node)
                    .append(r.creating ? ", creating" : "")
                    .append(r.pendingCreate ? ", to create" : "")
                    .append(r.readyAfter == Long.MAX_VALUE ? ", not ready" : ", ready after read " + r.readyAfter)
                    .append(r.future.isDone() ? ", done" : "");
        }
        for (Lease lease : held) {
            b.append("\n  held ").append(lease.permits()).append(" at ").append(lease.node());
        }
        for (String node : evaluation.watchedNodes()) {
            b.append("\n  watching ").append(node);
        }
        return b.toString();
    }

    /** How many nodes this object has an exists watch pending on. */
    int watchedCount() {
        return evaluation.watchedNodes().size();
    }

    private void checkWeight(String call, long n) {
        if (n < 1) {
            throw new IllegalArgumentException(call + "(" + n + "): the number of permits must be at least 1");
        }
        long c = capacity.value();
        if (n > c) {
            throw new IllegalArgumentException(
                    call + "(" + n + "): exceeds the capacity " + c + " of " + path + ", so it could never be granted");
        }
    }

    private SemaphoreClosedException closedException(String call, long n) {
        return new SemaphoreClosedException(call + "(" + n + ") on " + path + ": this ZooKeeperSemaphore is closed");
    }

    /** After close(): the listeners and the heartbeat go once no lease is left to watch. */
    void detachIfDone() {
        if (closed && held.isEmpty()) {
            guard.detach();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Release, local fronts, evaluation

    void release(Lease lease) {
        held.remove(lease);
        handOn.remove(lease);
        Request.delete(client, lease.node());
        detachIfDone();
    }

    /** Runs onWaiter once a request waits behind block in the cluster queue (or at once if one does). */
    void whenOthersWait(Lease block, Runnable onWaiter) {
        handOn.put(block, onWaiter);
        evaluate();
    }

    void stopWatchingForWaiters(Lease block) {
        handOn.remove(block);
    }

    /** Asks for an evaluation: starts one, or makes the running one run once more. */
    void evaluate() {
        evaluation.evaluate();
    }
}
