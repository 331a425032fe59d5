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
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorClosedException;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.framework.api.CuratorListener;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.PathUtils;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

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
     * The rule (QueueSnapshot)
     * ------------------------
     * Valid requests are ordered by (generation, sequence). Request k is granted exactly when the
     * weights of the valid requests up to and including k sum to at most the capacity. The left side
     * only decreases for a given k: a new request is queued after k (a higher sequence in k's
     * generation, or a later generation), deletions only remove weight, and the requests of an older,
     * sealed generation that count are those below its seal, all created before the seal and so
     * all visible in any read that shows the seal. So a grant, once seen, stays true, and each client
     * decides alone from its own reads. A client reads a generation after its own create succeeded
     * (ZooKeeper's per-session FIFO order), so the read contains every request queued before it.
     * Reading several generations one after the other is safe for the same reason: an older
     * generation read earlier can only have lost requests since.
     *
     * Generations (Generations, which seals, creates and deletes them): the sequence suffix is the
     * parent's cversion, a signed 32-bit counter moved by every child create and delete; a
     * generation is sealed and the next one started before it can run out.
     *
     * Fail closed: a child that looks like a request but does not parse, a negative sequence, a
     * sequence shared by two children, or a seal that does not parse, poisons its generation: no
     * request of it or of a later generation is granted while the child is there (their weights
     * still count), an alarm names it, and its owner, if it is one of our waiting requests, deletes
     * it and asks again in the newest generation.
     *
     * Who reads, who watches (Evaluation)
     * ------------------------------------
     * One evaluation per semaphore object at a time (evaluation: 0 idle, 1 running, 2 must run
     * again): read <path>'s children (the generations), then each generation's children, then the
     * capacity (below), then decide for every local
     * waiting request from that one snapshot. After a decision a waiting request is either
     *   head:    every valid request before it is granted; only the deletion of one of those (or a
     *            capacity growth) can grant it: exists watches on those nodes;
     *   behind:  its predecessor waits; if that predecessor is one of ours, nothing to watch (the
     *            same evaluation decides both); otherwise an exists watch on the predecessor, which
     *            fires when it is deleted or when it is granted (a client that grants a request
     *            with requests behind it writes "granted" into its node);
     *   blocked: behind a poisoned generation: exists watches on the poisoning children.
     * An arrival behind the head wakes nobody: there is no child watch, except while a local front
     * holds a block and must learn that another request waits (then on the newest generation, until
     * the first waiter is seen). A fired watch, a create that landed, a capacity change and a
     * RECONNECTED each ask for an evaluation; requests coalesce into at most one more read. A failed
     * read is retried with a backoff (readFailed): a pending re-evaluation is never dropped.
     *
     * The capacity is the evaluation's LAST read (readCapacityThenDecide), sent after every read of
     * the queue it counts: ZooKeeper answers one session's requests in order, so the capacity used
     * is at least as new as the queue. Since the prefix before a request only shrinks, the grant was
     * allowed at the instant the capacity was read. (A cached capacity would let a shrink that landed
     * between the queue's read and the capacity watch grant more than the new capacity.)
     *
     * A request is decided only by a read sent after its create succeeded (readyAfter / readsSent).
     *
     * Leases
     * ------
     * A lease is VALID, SUSPENDED (connection suspended), LOST (final) or RELEASED. Its local
     * deadline, the heartbeat and the watches on held nodes are SessionGuard's (see its notes);
     * this class loses leases (lose(): marked, forgotten, logged, told to the listeners).
     * RECONNECTED: one evaluation with confirm set: leases whose node is in the snapshot turn VALID
     * again (if within the deadline), the others LOST. LOST or the client closing: leases LOST,
     * waiters fail. After close() the listeners and the heartbeat stay until the last lease is
     * released.
     *
     * Cancellation
     * ------------
     * The Lease exists only if request.future.complete(lease) succeeded. A cancelled or failed
     * future withdraws its node (a guaranteed delete, retried by Curator across connection loss);
     * a grant that finds the future already cancelled releases its fresh lease. A create still in
     * flight when the future is cancelled deletes its node when it lands.
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
     * The shortest session timeout, as the server granted it, with which a semaphore opens, in
     * milliseconds. A lease's validity bound (see {@link Lease}) assumes that the leader's pings to
     * its followers are at most a twentieth of the session timeout late, and that a heartbeat
     * confirms the session every tenth of it, at least 20 ms apart: below 200 ms the first allows
     * less than 10 ms, which a garbage collection pause on the leader exceeds, and the second no
     * longer holds. The constructor refuses a shorter timeout, and logs a warning below
     * {@value #WARN_SESSION_TIMEOUT_MS} ms.
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
    /** The capacity as last read, and the data version of <path> it was read at. Written by the event thread (and the constructor). */
    volatile long capacity;
    private volatile int capacityVersion;
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
    private final ReentrantLock capacityLock = new ReentrantLock();
    final SessionGuard guard;
    private final Evaluation evaluation;
    volatile boolean suspended;
    /** The requests in the cluster queue in the last decision's read, or -1 before one; written by the evaluation. */
    volatile int clusterQueueLength = -1;
    private volatile ScheduledFuture<?> heartbeat;
    private volatile boolean closed;
    private final AtomicBoolean detached = new AtomicBoolean();

    private final List<Consumer<? super String>> alarmListeners = new CopyOnWriteArrayList<>();
    final List<ZooKeeperListener> listeners = new CopyOnWriteArrayList<>();
    private final Set<String> alarmed = ConcurrentHashMap.newKeySet();
    private final AtomicLong alarms = new AtomicLong();

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
    volatile Runnable queueReadHook = () -> { };

    private final ConnectionStateListener connectionListener = this::connectionChanged;
    /** Curator tells its CuratorListeners when the client closes; its session ends with it. */
    private final CuratorListener closingListener = (c, event) -> {
        if (event.getType() == CuratorEventType.CLOSING) {
            sessionLost("the Curator client was closed");
        }
    };
    final Watcher capacityWatcher = event -> {
        if (event.getType() == Watcher.Event.EventType.NodeDataChanged) {
            watchEvents.incrementAndGet();
            readCapacity(true);
        }
    };


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
            throw new IllegalArgumentException("ZooKeeperSemaphore(" + path + ", " + capacity + "): not a valid ZooKeeper path: " + e.getMessage(), e);
        }
        if ("/".equals(path)) {
            throw new IllegalArgumentException("ZooKeeperSemaphore(/, " + capacity + "): the root cannot be a semaphore's path");
        }
        if (capacity < 1 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("ZooKeeperSemaphore(" + path + ", " + capacity + "): the capacity must be from 1 to " + MAX_CAPACITY);
        }
        if (client.getState() != CuratorFrameworkState.STARTED) {
            throw new IllegalStateException("ZooKeeperSemaphore(" + path + ", " + capacity + "): the Curator client is " + client.getState() + ", not STARTED");
        }
        this.path = path;
        this.capacity = capacity;
        this.guard = new SessionGuard(this, client, path);
        this.generations = new Generations(this, client, path);
        this.evaluation = new Evaluation(this, client, path);
        openPath();
        checkSessionTimeout(negotiatedTimeoutMs());
        guard.start(negotiatedTimeoutMs());
        client.getConnectionStateListenable().addListener(connectionListener);
        client.getCuratorListenable().addListener(closingListener);
        long period = Math.max(20, guard.timeoutMs() / 10);
        heartbeat = TIMER.scheduleWithFixedDelay(guard::heartbeat, period, period, TimeUnit.MILLISECONDS);
    }

    private void openPath() {
        String call = "ZooKeeperSemaphore(" + path + ", " + capacity + ")";
        byte[] mine = Long.toString(capacity).getBytes(StandardCharsets.US_ASCII);
        try {
            try {
                client.create().creatingParentContainersIfNeeded().withMode(CreateMode.PERSISTENT).forPath(path, mine);
            } catch (KeeperException.NodeExistsException alreadyThere) {
                // read it below
            }
            while (true) {
                Stat stat = new Stat();
                byte[] data = client.getData().storingStatIn(stat).usingWatcher(capacityWatcher).forPath(path);
                if (data == null || data.length == 0) {
                    // An empty node (made by hand, or by a parent-creating call): claim it, once.
                    try {
                        client.setData().withVersion(stat.getVersion()).forPath(path, mine);
                        continue;
                    } catch (KeeperException.BadVersionException raced) {
                        continue;
                    }
                }
                long theirs = parseCapacity(data);
                if (theirs < 0) {
                    throw new IllegalArgumentException(call + ": the data at " + path + " is not a capacity: \""
                            + printable(data) + "\" (expected a decimal number from 1 to " + MAX_CAPACITY + ")");
                }
                if (theirs != capacity) {
                    throw new IllegalArgumentException(call + ": " + path + " already holds the capacity " + theirs
                            + ", not " + capacity + "; every client of a path must pass the same capacity");
                }
                capacityVersion = stat.getVersion();
                break;
            }
            long newest = -1;
            for (String child : client.getChildren().forPath(path)) {
                newest = Math.max(newest, generationNumber(child));
            }
            if (newest < 0) {
                newest = 0;
                try {
                    client.create().withMode(CreateMode.PERSISTENT).forPath(generationPath(0));
                } catch (KeeperException.NodeExistsException raced) {
                    // another client made it
                }
            }
            generations.seen(newest);
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(call + ": interrupted while opening " + path, e);
        } catch (Exception e) {
            throw new IllegalStateException(call + ": could not create or read " + path + ": " + e, e);
        }
    }

    /**
     * Refuses a session timeout with which the validity bound cannot hold, and warns about one that
     * leaves it little room. What the client cannot see (the server's tickTime, the clocks' rates)
     * the documentation states as assumptions.
     */
    private void checkSessionTimeout(int timeoutMs) {
        String call = "ZooKeeperSemaphore(" + path + ", " + capacity + ")";
        String why = "a lease's validity assumes that the leader's pings to its followers are at most a twentieth of the"
                + " session timeout late (" + timeoutMs / 20 + " ms here) and that a heartbeat confirms the session every tenth of it";
        if (timeoutMs < MIN_SESSION_TIMEOUT_MS) {
            throw new IllegalArgumentException(call + ": the session timeout the server granted, " + timeoutMs + " ms, is below "
                    + MIN_SESSION_TIMEOUT_MS + " ms, the shortest with which a lease can keep its promise: " + why
                    + " (at least 20 ms apart); ask for a longer session timeout (CuratorFrameworkFactory.builder().sessionTimeoutMs(..))"
                    + " and let the server allow it (minSessionTimeout)");
        }
        if (timeoutMs < WARN_SESSION_TIMEOUT_MS) {
            LOG.log(System.Logger.Level.WARNING, call + ": the session timeout the server granted, " + timeoutMs + " ms, is below "
                    + WARN_SESSION_TIMEOUT_MS + " ms: " + why + ", which a loaded leader may exceed");
        }
    }

    static long generationNumber(String child) {
        return Generations.number(child);
    }

    String generationPath(long generation) {
        return generations.path(generation);
    }

    private int negotiatedTimeoutMs() {
        int t = client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
        int known = guard.timeoutMs();
        return t > 0 ? t : (known > 0 ? known : client.getZookeeperClient().getConnectionTimeoutMs());
    }

    /** The capacity in {@code data}, or -1 if it is not one. */
    static long parseCapacity(byte[] data) {
        String s = new String(data, StandardCharsets.US_ASCII).trim();
        if (s.isEmpty() || s.length() > 19) {
            return -1;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return -1;
            }
        }
        long v = Long.parseLong(s);
        return v >= 1 && v <= MAX_CAPACITY ? v : -1;
    }

    static String printable(byte[] data) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(data.length, 40); i++) {
            int c = data[i] & 0xff;
            b.append(c >= 0x20 && c < 0x7f ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return data.length > 40 ? b + "..." : b.toString();
    }

    /**
     * The number of permits shared by every client of the path, as this client last read it: a
     * {@link #setCapacity(long)} by any client is seen here within about one round trip.
     *
     * @return the capacity
     */
    public long capacity() {
        return capacity;
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
        long sum = 0;
        for (Lease lease : held) {
            sum += lease.permits();
        }
        return sum;
    }

    /**
     * How many requests of this object wait now: asked for, neither granted nor failed nor
     * withdrawn. A local front's pending block counts as one. A snapshot, for a gauge.
     *
     * @return the waiting requests of this object
     */
    public int queueLength() {
        int n = 0;
        for (Request r : waiting) {
            if (!r.future.isDone()) {
                n++;
            }
        }
        return n;
    }

    /**
     * The permits that this object's waiting requests ask for (see {@link #queueLength()}). A
     * snapshot, for a gauge.
     *
     * @return the permits waited for through this object
     */
    public long queuedPermits() {
        long sum = 0;
        for (Request r : waiting) {
            if (!r.future.isDone()) {
                sum += r.n;
            }
        }
        return sum;
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
            throw new IllegalArgumentException("setCapacity(" + n + ") on " + path + ": the capacity must be from 1 to " + MAX_CAPACITY);
        }
        if (closed) {
            throw new SemaphoreClosedException("setCapacity(" + n + ") on " + path + ": this ZooKeeperSemaphore is closed");
        }
        byte[] data = Long.toString(n).getBytes(StandardCharsets.US_ASCII);
        try {
            while (true) {
                Stat stat = new Stat();
                client.getData().storingStatIn(stat).forPath(path);
                try {
                    long sentAt = nanoClock.getAsLong();
                    Stat written = client.setData().withVersion(stat.getVersion()).forPath(path, data);
                    guard.ordered(sentAt);
                    capacityChanged(n, written.getVersion());
                    return;
                } catch (KeeperException.BadVersionException raced) {
                    // another setCapacity won: write ours over the one we now read
                }
            }
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("setCapacity(" + n + ") on " + path + ": could not write the capacity: " + e, e);
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
        Request request = new Request(call, n, oneShot);
        if (closed) {
            request.future.completeExceptionally(closedException(call, n));
            return request.future;
        }
        if (client.getState() != CuratorFrameworkState.STARTED) {
            request.future.completeExceptionally(new SessionLostException(
                    call + "(" + n + ") on " + path + ": the Curator client is " + client.getState()));
            return request.future;
        }
        waiting.add(request);
        request.future.whenComplete((lease, failure) -> {
            waiting.remove(request);
            if (failure != null) {
                request.withdraw();
            }
        });
        request.create(generations.newest());
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
        return awaitLease(start("acquireBlocking", n, false));
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
            return awaitOneDecision(start("tryAcquireBlocking", n, true));
        }
        return awaitLease(start("tryAcquireBlocking", n, false), timeout);
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
        CompletableFuture<Lease> acquired = start("withPermitsAsync", n, false);
        ScopedLease<T> result = new ScopedLease<>(acquired);
        acquired.whenComplete((lease, failure) -> {
            if (failure != null) { // nothing granted, nothing to release
                if (!result.withdrawing) {
                    result.completeExceptionally(failure);
                }
                return;
            }
            if (result.isDone()) { // cancelled while the grant was landing
                lease.close();
                return;
            }
            CompletionStage<T> stage;
            try {
                stage = body.get();
                if (stage == null) {
                    throw new NullPointerException("withPermitsAsync(" + n + "): the body returned null instead of a CompletionStage");
                }
            } catch (Throwable t) {
                lease.close();
                result.completeExceptionally(t);
                return;
            }
            stage.whenComplete((value, error) -> {
                lease.close();
                if (error != null) {
                    result.completeExceptionally(error);
                } else {
                    result.complete(value);
                }
            });
        });
        return result;
    }

    /** The result of withPermitsAsync: a cancel before the grant withdraws the request first. */
    private static final class ScopedLease<T> extends CompletableFuture<T> {
        private final CompletableFuture<Lease> acquired;
        /** Set before this future withdraws the request, so that the failure that causes is not copied here. */
        volatile boolean withdrawing;

        ScopedLease(CompletableFuture<Lease> acquired) {
            this.acquired = acquired;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            withdrawing = true;
            acquired.cancel(false); // still waiting: withdrawn; granted already: the grant sees us done
            return super.cancel(mayInterruptIfRunning);
        }
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
        Lease lease = awaitLease(start("withPermitsBlocking", n, false));
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
        Objects.requireNonNull(maxHold, "maxHold");
        if (localCapacity < 1 || localCapacity > capacity) {
            throw new IllegalArgumentException("withLocalFront(" + localCapacity + "): the local capacity must be from 1 to the capacity " + capacity + " of " + path);
        }
        if (maxHold.isZero() || maxHold.isNegative()) {
            throw new IllegalArgumentException("withLocalFront(" + localCapacity + ", " + maxHold + "): the maximum hold must be positive");
        }
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
        alarmListeners.add(Objects.requireNonNull(listener, "listener"));
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
        return alarms.get();
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
        return "ZooKeeperSemaphore[path=" + path + ", capacity=" + capacity + ", waiting here=" + waiting.size()
                + ", held here=" + held.size() + (closed ? ", closed" : "") + "]";
    }

    /**
     * This object's whole local state, for a test's failure message: the session view, the
     * evaluation in progress, each waiting request (its node and where its creation stands), the
     * leases held and the nodes watched.
     */
    String describe() {
        StringBuilder b = new StringBuilder(toString());
        b.append("\n  session: ").append(suspended ? "suspended" : "connected")
                .append(", client ").append(client.getState())
                .append(", evaluation ").append(evaluation.state())
                .append(", reads sent ").append(evaluation.readsSent())
                .append(", newest generation ").append(generations.newest())
                .append(generations.switching() ? ", switching" : "");
        for (Request r : waiting) {
            b.append("\n  waiting ").append(r.call).append('(').append(r.n).append("): node ").append(r.node)
                    .append(r.creating ? ", creating" : "").append(r.pendingCreate ? ", to create" : "")
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
        long c = capacity;
        if (n > c) {
            throw new IllegalArgumentException(call + "(" + n + "): exceeds the capacity " + c + " of " + path + ", so it could never be granted");
        }
    }

    private SemaphoreClosedException closedException(String call, long n) {
        return new SemaphoreClosedException(call + "(" + n + ") on " + path + ": this ZooKeeperSemaphore is closed");
    }

    /** After close(): the listeners and the heartbeat go once no lease is left to watch. */
    void detachIfDone() {
        if (closed && held.isEmpty() && detached.compareAndSet(false, true)) {
            client.getConnectionStateListenable().removeListener(connectionListener);
            client.getCuratorListenable().removeListener(closingListener);
            ScheduledFuture<?> h = heartbeat;
            if (h != null) {
                h.cancel(false);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Session, contact and the local deadline

    private void connectionChanged(CuratorFramework c, ConnectionState state) {
        for (ZooKeeperListener l : listeners) {
            try {
                l.connectionChanged(state);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
            }
        }
        if (state == ConnectionState.SUSPENDED) {
            suspended = true;
            for (Lease lease : held) {
                lease.markSuspended();
            }
        } else if (state == ConnectionState.LOST) {
            sessionLost("the ZooKeeper session was lost");
        } else if (state == ConnectionState.RECONNECTED || state == ConnectionState.CONNECTED) {
            suspended = false;
            guard.timeoutChanged(negotiatedTimeoutMs());
            evaluation.confirmNext();
            evaluate(); // one shared read: it decides every waiter and confirms every lease
        }
    }

    private void sessionLost(String why) {
        for (Request r : waiting) {
            r.future.completeExceptionally(new SessionLostException(
                    r.call + "(" + r.n + ") on " + path + ": " + why + " before the grant; the request is gone"));
        }
        for (Lease lease : held) {
            lose(lease, why);
        }
        evaluation.forgetWatches();
        detachIfDone();
    }

    /** Whether the local deadline has passed: the leader may have expired the session by now. */
    boolean pastDeadline() {
        return guard.pastDeadline();
    }

    void expireLeases() {
        for (Lease lease : held) {
            lose(lease, "the local deadline passed: the leader has not confirmed the session for "
                    + guard.timeoutMs() * 9 / 10 + " ms of the " + guard.timeoutMs() + " ms session timeout");
        }
        detachIfDone();
    }

    /** The lease is lost for good (if still held): marked, forgotten, and the listeners told. */
    void lose(Lease lease, String reason) {
        held.remove(lease);
        handOn.remove(lease);
        if (lease.markLost()) {
            LOG.log(System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": lease of " + lease.permits()
                    + " at " + lease.node() + " lost: " + reason);
            for (ZooKeeperListener l : listeners) {
                try {
                    l.leaseLost(lease, reason);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
                }
            }
        }
        detachIfDone();
    }

    /** Whether nothing is held or waiting here: the heartbeat rests. */
    boolean idle() {
        return held.isEmpty() && waiting.isEmpty();
    }

    Set<Lease> heldLeases() {
        return held;
    }

    // ---------------------------------------------------------------------------------------------
    // Release and delete

    void release(Lease lease) {
        held.remove(lease);
        handOn.remove(lease);
        delete(lease.node());
        detachIfDone();
    }

    private void delete(String node) {
        try {
            // guaranteed(): Curator retries the delete across connection loss until it succeeds or
            // the session ends (which deletes the node anyway).
            client.delete().guaranteed().inBackground().forPath(node);
        } catch (Exception e) {
            // Background: failures go to Curator's listeners, and guaranteed() retries.
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Local fronts

    /** Runs onWaiter once a request waits behind block in the cluster queue (or at once if one does). */
    void whenOthersWait(Lease block, Runnable onWaiter) {
        handOn.put(block, onWaiter);
        evaluate();
    }

    void stopWatchingForWaiters(Lease block) {
        handOn.remove(block);
    }

    // ---------------------------------------------------------------------------------------------
    // Capacity and alarms (the evaluation is Evaluation's)

    /** Asks for an evaluation: starts one, or makes the running one run once more. */
    void evaluate() {
        evaluation.evaluate();
    }

    void readCapacity(boolean thenEvaluate) {
        try {
            client.getData().usingWatcher(capacityWatcher).inBackground((c, e) -> {
                if (e.getResultCode() == 0 && e.getStat() != null) {
                    long n = parseCapacity(e.getData());
                    if (n > 0) {
                        capacityChanged(n, e.getStat().getVersion());
                    } else {
                        alarm(path, "the data at the path is not a capacity: \"" + printable(e.getData()) + "\"; keeping " + capacity);
                    }
                }
                if (thenEvaluate) {
                    evaluate();
                }
            }).forPath(path);
        } catch (Exception e) {
            TIMER.schedule(() -> readCapacity(thenEvaluate), RETRY_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** A newer capacity was read or written: waiters that can no longer fit fail; the others are decided again. */
    void capacityChanged(long n, int version) {
        capacityLock.lock();
        try {
            if (version < capacityVersion || (version == capacityVersion && n == capacity)) {
                return; // not newer than the one we have
            }
            capacity = n;
            capacityVersion = version;
        } finally {
            capacityLock.unlock();
        }
        for (Request r : waiting) {
            if (r.n > n) {
                r.future.completeExceptionally(new IllegalStateException(r.call + "(" + r.n + ") on " + path
                        + ": the weight " + r.n + " exceeds the capacity " + n + " (set by setCapacity), so it could never be granted"));
            }
        }
        evaluate();
    }

    void alarm(String child, String reason) {
        if (!alarmed.add(child + " " + reason)) {
            return;
        }
        alarms.incrementAndGet();
        String message = "ZooKeeperSemaphore " + path + ": granting stopped by " + child + ": " + reason;
        LOG.log(System.Logger.Level.WARNING, message);
        for (Consumer<? super String> l : alarmListeners) {
            try {
                l.accept(message);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "alarm listener failed", e);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // A request

    /** A request node's name before its sequence suffix. */
    static String nodeName(long n) {
        return QueueSnapshot.REQUEST_MARK + String.format("%019d", n) + "-";
    }

    /** A one-shot request that was not granted by its one decision; never seen by callers. */
    static final RuntimeException NOT_GRANTED = new IllegalStateException("not granted by its one decision") {
        private static final long serialVersionUID = 1L;

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    };

    final class Request {
        final String call;
        final long n;
        final boolean oneShot;
        final CompletableFuture<Lease> future = new CompletableFuture<>();
        final long startedAt = nanoClock.getAsLong();
        /** The created node's full path and name; written by the create callback (null while none). */
        volatile String node;
        volatile String name;
        volatile long czxid;
        /** readsSent when the create landed: only a later read may decide the request. */
        volatile long readyAfter = Long.MAX_VALUE;
        /** The node must be created (again) in the newest open generation by the next decision. */
        volatile boolean pendingCreate;
        volatile boolean creating;

        Request(String call, long n, boolean oneShot) {
            this.call = call;
            this.n = n;
            this.oneShot = oneShot;
        }

        void create(long generation) {
            creating = true;
            pendingCreate = false;
            long sentAt = nanoClock.getAsLong();
            try {
                client.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                        .inBackground((c, e) -> created(e, sentAt))
                        .forPath(generationPath(generation) + "/" + nodeName(n), NO_DATA);
            } catch (Exception e) {
                creating = false;
                fail(e);
            }
        }

        /** Fails the request with e, or with SessionLostException if the client was closed. */
        void fail(Throwable e) {
            if (e instanceof CuratorClosedException || client.getState() == CuratorFrameworkState.STOPPED) {
                future.completeExceptionally(new SessionLostException(call + "(" + n + ") on " + path
                        + ": the Curator client was closed before the grant", e));
            } else {
                future.completeExceptionally(e);
            }
        }

        private void created(CuratorEvent event, long sentAt) {
            creating = false;
            int rc = event.getResultCode();
            if (rc == KeeperException.Code.NONODE.intValue()) {
                // The generation was deleted (drained, and newer ones exist): read, then create in the newest.
                pendingCreate = true;
                evaluate();
                return;
            }
            if (rc != 0) {
                fail(KeeperException.create(KeeperException.Code.get(rc), event.getPath()));
                return;
            }
            guard.ordered(sentAt); // a create: the leader ordered it, so the session was alive after sentAt
            String created = event.getName();
            node = created;
            name = created.substring(created.lastIndexOf('/') + 1);
            if (future.isDone()) {
                delete(created); // cancelled (or failed) while the create was in flight
                return;
            }
            byName.put(name, this);
            Stat stat = event.getStat();
            if (stat != null && stat.getCzxid() != 0) {
                ready(stat.getCzxid());
                return;
            }
            // A create recovered by protected mode may come without its stat: ask for it.
            try {
                client.checkExists().inBackground((c, e) -> {
                    if (e.getResultCode() == 0 && e.getStat() != null) {
                        ready(e.getStat().getCzxid());
                    } else {
                        ready(0); // gone already: the read finds out and fails the request
                    }
                }).forPath(created);
            } catch (Exception e) {
                fail(e);
            }
        }

        private void ready(long zxid) {
            czxid = zxid;
            readyAfter = evaluation.readsSent();
            evaluate();
        }

        /** Our node cannot be ordered (or is void): delete it and ask again in the newest open generation. */
        void recreate(long openGeneration) {
            String old = node;
            byName.remove(name);
            node = null;
            name = null;
            readyAfter = Long.MAX_VALUE;
            delete(old);
            if (openGeneration >= 0) {
                create(openGeneration);
            } else {
                pendingCreate = true; // after the switch
            }
        }

        void withdraw() {
            String mine = node;
            String mineName = name;
            if (mineName != null) {
                byName.remove(mineName, this);
            }
            if (mine != null) {
                delete(mine);
            }
        }
    }
    // ---------------------------------------------------------------------------------------------
    // Blocking faces, shared with LocalFront

    static Lease awaitLease(CompletableFuture<Lease> future) throws InterruptedException {
        try {
            return future.get();
        } catch (InterruptedException e) {
            if (future.cancel(false)) {
                throw e;
            }
            Thread.currentThread().interrupt();
            return joinGranted(future);
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    /** Waits for a one-shot request's one decision: its lease, or empty if it was not granted. */
    static Optional<Lease> awaitOneDecision(CompletableFuture<Lease> future) throws InterruptedException {
        try {
            return Optional.of(awaitLease(future));
        } catch (RuntimeException e) {
            if (e == NOT_GRANTED) {
                return Optional.empty();
            }
            throw e;
        }
    }

    static Optional<Lease> awaitLease(CompletableFuture<Lease> future, Duration timeout) throws InterruptedException {
        try {
            long nanos = timeout.isNegative() ? 0 : saturatedNanos(timeout);
            return Optional.of(future.get(nanos, TimeUnit.NANOSECONDS));
        } catch (TimeoutException e) {
            if (future.cancel(false)) {
                return Optional.empty();
            }
            return Optional.of(joinGranted(future));
        } catch (InterruptedException e) {
            if (future.cancel(false)) {
                throw e;
            }
            Thread.currentThread().interrupt();
            return Optional.of(joinGranted(future));
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** The future lost its cancel, so it is complete: its lease, or its failure thrown. */
    private static Lease joinGranted(CompletableFuture<Lease> future) {
        try {
            return future.join();
        } catch (CompletionException e) {
            throw unwrap(e.getCause());
        } catch (CancellationException e) {
            throw e;
        }
    }

    static RuntimeException unwrap(Throwable t) {
        if (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof RuntimeException) {
            return (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IllegalStateException(t.toString(), t);
    }
}
