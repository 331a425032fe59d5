// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;

/**
 * A weighted, strictly FIFO semaphore shared by every client of one ZooKeeper path: the
 * cluster-wide counterpart of {@link dev.handoff.Semaphore}.
 *
 * <p>Every process that constructs a {@code ZooKeeperSemaphore} on the same ensemble and path with
 * the same capacity shares one budget of {@link #capacity()} permits. A request for {@code n}
 * permits is granted all at once or not at all, and requests are granted strictly in the order in
 * which they reached ZooKeeper, across all clients: a heavy request at the head blocks lighter
 * ones behind it (no barging, no starvation).
 *
 * <pre>{@code
 * ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-bytes", 64 << 20);
 * try (Lease lease = budget.acquireBlocking(body.length)) {
 *     downstream.send(body);
 * }
 * }</pre>
 *
 * <p><b>Session loss.</b> Each request is an ephemeral znode of the client's session. When the
 * session expires (a crashed or partitioned process), ZooKeeper deletes the nodes, so the permits
 * of a crashed holder come back by themselves; the holder's leases then report
 * {@link Lease#isValid()} {@code false} and complete {@link Lease#whenLost()}, and its waiting
 * requests fail with {@link SessionLostException}. While the connection is only suspended, leases
 * stay valid (their nodes still exist unless the session expires); a holder that must never
 * overlap with a successor should also stop work when Curator reports
 * {@link ConnectionState#SUSPENDED}, as with any ZooKeeper lock.
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
     *   <path>                                   PERSISTENT, created by the first client if absent;
     *                                            data = the capacity in decimal ASCII ("16")
     *   <path>/[_c_<uuid>-]req-w<weight:19 digits>-<sequence:10 digits>
     *                                            EPHEMERAL_SEQUENTIAL, one per request, created by
     *                                            the requesting client; no data until granted, then
     *                                            "granted" (a signal for the request behind it)
     *
     * The weight is in the node's NAME, not its data: one getChildren read then returns every
     * request and every weight from one consistent snapshot, with no getData per child and no
     * window in which a child read later disagrees with the list. The "_c_<uuid>-" prefix is
     * Curator's protected mode: if the connection drops after the server created the node but
     * before the reply arrived, the retried create finds its own node by the uuid instead of
     * leaving an orphan that would block the queue until the session ends.
     *
     * The rule
     * --------
     * Sort the children by sequence. Request k is granted exactly when
     *
     *     sum of the weights of all requests with sequence <= k   <=   capacity.
     *
     * The left side only ever decreases for a given k: a new request gets a larger sequence (it
     * is never counted before k), and deletions only remove weight. So a grant, once seen, stays
     * true, and each client decides alone from its own read, with no further coordination; the
     * granted requests are always a prefix of the queue, and their weights never sum above the
     * capacity (at every zxid, not only at the reads). A client reads after its own create
     * succeeded (ZooKeeper's per-session FIFO order), so its read contains every request that got
     * an earlier sequence, or that request's deletion.
     *
     * Who watches what
     * ----------------
     * After a read, a request that is not granted is in one of two places:
     *
     *   head:  every request before it is granted; only the deletion of one of those can grant
     *          it. It re-reads the children WITH a child watch (getChildren + watch is one atomic
     *          operation, so no deletion slips between read and watch), and is woken by the next
     *          child created or deleted under the path.
     *   behind: the request just before it (its predecessor) is itself waiting. Under strict FIFO
     *          it cannot be granted before its predecessor is, so it sets an exists watch on the
     *          predecessor only. That watch fires when the predecessor is deleted (released,
     *          cancelled, its session lost) or when its data changes: a request that is granted
     *          by a read that showed requests after it writes "granted" into its node, in the
     *          background, to wake the one behind. (A request behind that read the queue after
     *          the grant saw the grant itself and never set that watch.) If the exists call finds
     *          the predecessor gone, or its data version above 0 (already granted), the request
     *          reads again at once.
     *
     * If that background "granted" write fails (the connection dropped and Curator's retries ran
     * out), the request behind is woken by the predecessor's deletion instead, later but never
     * wrongly; a RECONNECTED makes every waiter read again in any case.
     *
     * So a deletion wakes the head only (plus the one request behind a cancelled waiter), and a
     * grant wakes the next request only: no herd. The counters watchEvents / reads / grants below
     * measure it (the benchmark in the tests prints watches fired per grant).
     *
     * Each request runs at most one read-decide-watch step at a time (evaluation, below): a watch
     * that fires during a step makes the step run once more.
     *
     * Cancellation
     * ------------
     * The Lease exists only if request.future.complete(lease) succeeded. A cancelled or failed
     * future withdraws its node (a guaranteed delete, retried by Curator across connection loss);
     * a grant that finds the future already cancelled closes its fresh lease, which deletes the
     * node. A create still in flight when the future is cancelled deletes its node when it lands.
     *
     * Session loss and reconnection
     * -----------------------------
     * LOST (the session expired, or Curator gave it up after the session timeout), or the Curator
     * client closing (CuratorEventType.CLOSING; closing ends the session): ZooKeeper has
     * deleted or will delete all of this client's nodes; every lease is marked lost and every
     * waiting request fails with SessionLostException. RECONNECTED: ZooKeeper re-registers our
     * watches itself, but every waiting request reads once more anyway, and each lease checks that
     * its node is still there (after an expiry Curator reconnects with a new session).
     */

    /** The largest capacity: that of the local semaphore, {@link dev.handoff.Semaphore#MAX_PERMITS}. */
    public static final long MAX_CAPACITY = dev.handoff.Semaphore.MAX_PERMITS;

    static final String NODE_PREFIX = "req-w";
    private static final Pattern NODE_NAME = Pattern.compile("req-w(\\d{19})-(\\d{10})$");
    private static final byte[] GRANTED = "granted".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] NO_DATA = new byte[0];

    private final CuratorFramework client;
    private final String path;
    private final long capacity;
    /** Requests not yet granted or failed; read by the connection listener. */
    private final Set<Request> waiting = ConcurrentHashMap.newKeySet();
    /** Leases granted and not yet closed; read by the connection listener. */
    private final Set<Lease> held = ConcurrentHashMap.newKeySet();
    private final ConnectionStateListener connectionListener = this::connectionChanged;
    /** Curator tells its CuratorListeners when the client closes; its session ends with it. */
    private final CuratorListener closingListener = (c, event) -> {
        if (event.getType() == CuratorEventType.CLOSING) {
            sessionLost("the Curator client was closed");
        }
    };
    private volatile boolean closed;

    // Measurements, read by the tests and the benchmark.
    /** Node watches (child or exists) that fired, state events excluded. */
    final AtomicLong watchEvents = new AtomicLong();
    /** getChildren reads issued. */
    final AtomicLong reads = new AtomicLong();
    /** Requests granted. */
    final AtomicLong grants = new AtomicLong();

    /**
     * Opens the semaphore at {@code path}: creates the path with the capacity as its data if it is
     * absent (parents as container nodes), otherwise checks that the capacity stored there is this
     * one. Blocks for those one or two round trips.
     *
     * @param client   a started Curator client; the semaphore's requests are ephemeral nodes of
     *                 its session
     * @param path     the semaphore's znode, for example {@code "/semaphores/downstream"}
     * @param capacity the number of permits shared by every client of {@code path}, from 1 to
     *                 {@link #MAX_CAPACITY}
     * @throws NullPointerException     if {@code client} or {@code path} is null
     * @throws IllegalArgumentException if {@code path} is not a valid ZooKeeper path, if
     *                                  {@code capacity} is out of range, if the data at
     *                                  {@code path} is not a capacity, or if it is a different
     *                                  capacity (the message names both)
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
        openPath();
        client.getConnectionStateListenable().addListener(connectionListener);
        client.getCuratorListenable().addListener(closingListener);
    }

    private void openPath() {
        String call = "ZooKeeperSemaphore(" + path + ", " + capacity + ")";
        byte[] mine = Long.toString(capacity).getBytes(StandardCharsets.US_ASCII);
        try {
            try {
                client.create().creatingParentContainersIfNeeded().withMode(CreateMode.PERSISTENT).forPath(path, mine);
                return;
            } catch (KeeperException.NodeExistsException alreadyThere) {
                // read it below
            }
            while (true) {
                Stat stat = new Stat();
                byte[] data = client.getData().storingStatIn(stat).forPath(path);
                if (data == null || data.length == 0) {
                    // An empty node (made by hand, or by a parent-creating call): claim it, once.
                    try {
                        client.setData().withVersion(stat.getVersion()).forPath(path, mine);
                        return;
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
                return;
            }
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(call + ": interrupted while opening " + path, e);
        } catch (Exception e) {
            throw new IllegalStateException(call + ": could not create or read " + path + ": " + e, e);
        }
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

    private static String printable(byte[] data) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(data.length, 40); i++) {
            int c = data[i] & 0xff;
            b.append(c >= 0x20 && c < 0x7f ? String.valueOf((char) c) : String.format("\\x%02x", c));
        }
        return data.length > 40 ? b + "..." : b.toString();
    }

    /**
     * The number of permits shared by every client of the path.
     *
     * @return the capacity, as stored at the path
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
     * Requests {@code n} permits: creates this request's node at once (in the background) and
     * completes the future with a {@link Lease} when the request is granted.
     *
     * <p><b>Fairness.</b> Strictly FIFO across every client of the path, in the order in which
     * the requests' nodes were created; all {@code n} permits are granted together.
     *
     * <p><b>Cancellation.</b> {@code future.cancel(...)} withdraws the request (deletes its node);
     * if the grant raced the cancel, the lease that lost is closed, so a cancelled future never
     * holds permits.
     *
     * <p>The future fails with {@link SessionLostException} if the client's session is lost (or the
     * client is closed) before the grant, with {@link IllegalStateException} if this semaphore is
     * {@linkplain #close() closed}, and with Curator's exception if the node cannot be created.
     *
     * @param n the number of permits, from 1 to {@link #capacity()}
     * @return a future completed with the lease, on Curator's event thread
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > capacity()} (it could never
     *                                  be granted); nothing is created
     */
    public CompletableFuture<Lease> acquireAsync(long n) {
        checkWeight("acquireAsync", n);
        Request request = new Request(n);
        if (closed) {
            request.future.completeExceptionally(closedException("acquireAsync", n));
            return request.future;
        }
        if (client.getState() != CuratorFrameworkState.STARTED) {
            request.future.completeExceptionally(new SessionLostException(
                    "acquireAsync(" + n + ") on " + path + ": the Curator client is " + client.getState()));
            return request.future;
        }
        waiting.add(request);
        request.future.whenComplete((lease, failure) -> {
            waiting.remove(request);
            if (failure != null) {
                request.withdraw();
            }
        });
        request.create();
        return request.future;
    }

    /**
     * Requests {@code n} permits and parks the calling thread (platform or virtual) until granted.
     *
     * <p>On interrupt (also one pending on entry) the request is withdrawn, nothing is held, and
     * {@link InterruptedException} is thrown; if the grant won the race, this method returns the
     * lease normally with the thread's interrupt flag set.
     *
     * @param n the number of permits, from 1 to {@link #capacity()}
     * @return the lease; close it to release the permits
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > capacity()}
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the session was lost (or the client closed) before the grant
     * @throws IllegalStateException    if this semaphore was closed
     */
    public Lease acquireBlocking(long n) throws InterruptedException {
        checkWeight("acquireBlocking", n);
        return awaitLease(acquireAsync(n));
    }

    /**
     * Requests {@code n} permits and parks the calling thread until granted or until
     * {@code timeout} has passed; on timeout the request is withdrawn and nothing is held.
     * Interrupts as for {@link #acquireBlocking(long)}.
     *
     * @param n       the number of permits, from 1 to {@link #capacity()}
     * @param timeout how long to wait at most; zero or negative: one attempt, still a round trip
     * @return the lease, or empty on timeout
     * @throws IllegalArgumentException if {@code n < 1} or {@code n > capacity()}
     * @throws NullPointerException     if {@code timeout} is null
     * @throws InterruptedException     if interrupted before the grant
     * @throws SessionLostException     if the session was lost (or the client closed) before the grant
     * @throws IllegalStateException    if this semaphore was closed
     */
    public Optional<Lease> tryAcquire(long n, Duration timeout) throws InterruptedException {
        checkWeight("tryAcquire", n);
        Objects.requireNonNull(timeout, "timeout");
        return awaitLease(acquireAsync(n), timeout);
    }

    /**
     * A local front of {@code localCapacity} permits: the callers of one JVM share one cluster
     * request of {@code localCapacity} permits instead of each creating a node. See
     * {@link LocalFront}.
     *
     * @param localCapacity the block of cluster permits this JVM takes at a time, from 1 to
     *                      {@link #capacity()}
     * @return a new local front over this semaphore
     * @throws IllegalArgumentException if {@code localCapacity} is out of range
     */
    public LocalFront withLocalFront(long localCapacity) {
        if (localCapacity < 1 || localCapacity > capacity) {
            throw new IllegalArgumentException("withLocalFront(" + localCapacity + "): the local capacity must be from 1 to the capacity " + capacity + " of " + path);
        }
        return new LocalFront(this, localCapacity);
    }

    /**
     * Stops this semaphore object (not the shared semaphore): every request of this object still
     * waiting fails with {@link IllegalStateException} and withdraws its node, later acquisitions
     * fail the same way, and the connection listener is removed. Leases already granted stay
     * valid and still release on {@link Lease#close()}. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        client.getConnectionStateListenable().removeListener(connectionListener);
        client.getCuratorListenable().removeListener(closingListener);
        for (Request r : waiting) {
            r.future.completeExceptionally(closedException("acquire", r.n));
        }
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

    private void checkWeight(String call, long n) {
        if (n < 1) {
            throw new IllegalArgumentException(call + "(" + n + "): the number of permits must be at least 1");
        }
        if (n > capacity) {
            throw new IllegalArgumentException(call + "(" + n + "): exceeds the capacity " + capacity + " of " + path + ", so it could never be granted");
        }
    }

    private IllegalStateException closedException(String call, long n) {
        return new IllegalStateException(call + "(" + n + ") on " + path + ": this ZooKeeperSemaphore is closed");
    }

    // ---------------------------------------------------------------------------------------------
    // Session

    private void connectionChanged(CuratorFramework c, ConnectionState state) {
        if (state == ConnectionState.LOST) {
            sessionLost("the ZooKeeper session was lost");
        } else if (state == ConnectionState.RECONNECTED) {
            for (Request r : waiting) {
                r.evaluate();
            }
            for (Lease lease : held) {
                checkLease(lease);
            }
        }
    }

    private void sessionLost(String why) {
        for (Request r : waiting) {
            r.future.completeExceptionally(new SessionLostException(
                    "acquire(" + r.n + ") on " + path + ": " + why + " before the grant; the request is gone"));
        }
        for (Lease lease : held) {
            held.remove(lease);
            lease.markLost();
        }
    }

    private void checkLease(Lease lease) {
        try {
            client.checkExists().inBackground((c, event) -> {
                if (event.getResultCode() == KeeperException.Code.NONODE.intValue() || (event.getResultCode() == 0 && event.getStat() == null)) {
                    held.remove(lease);
                    lease.markLost();
                }
            }).forPath(lease.node());
        } catch (Exception e) {
            // Curator's background calls report failures through the callback; nothing to do here.
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Lease release

    void release(Lease lease) {
        held.remove(lease);
        delete(lease.node());
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
    // A request

    /** One node's parsed name. */
    static final class Entry {
        final String name;
        final long weight;
        final long sequence;

        Entry(String name, long weight, long sequence) {
            this.name = name;
            this.weight = weight;
            this.sequence = sequence;
        }
    }

    /** Parses a child's name; null if it is not a request node (other children are ignored). */
    static Entry parse(String name) {
        Matcher m = NODE_NAME.matcher(name);
        if (!m.find()) {
            return null;
        }
        return new Entry(name, Long.parseLong(m.group(1)), Long.parseLong(m.group(2)));
    }

    static String nodeName(long n) {
        return NODE_PREFIX + String.format("%019d", n) + "-";
    }

    private final class Request implements Watcher {
        final long n;
        final CompletableFuture<Lease> future = new CompletableFuture<>();
        /** The created node's full path; written once by the create callback. */
        volatile String node;
        /** 0: no step running; 1: a step running; 2: a step running, and it must run once more. */
        private final AtomicInteger evaluation = new AtomicInteger();
        /** The last step found this request at the head: read with a child watch next time. Step-confined. */
        private boolean head;

        Request(long n) {
            this.n = n;
        }

        void create() {
            try {
                client.create().withProtection().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                        .inBackground(this::created)
                        .forPath(path + "/" + nodeName(n), NO_DATA);
            } catch (Exception e) {
                fail(e);
            }
        }

        /** Fails the request with e, or with SessionLostException if the client was closed. */
        void fail(Throwable e) {
            if (e instanceof CuratorClosedException || client.getState() == CuratorFrameworkState.STOPPED) {
                future.completeExceptionally(new SessionLostException("acquire(" + n + ") on " + path
                        + ": the Curator client was closed before the grant", e));
            } else {
                future.completeExceptionally(e);
            }
        }

        private void created(CuratorFramework c, CuratorEvent event) {
            if (event.getResultCode() != 0) {
                KeeperException.Code code = KeeperException.Code.get(event.getResultCode());
                fail(code == KeeperException.Code.NONODE
                        ? new IllegalStateException("acquire(" + n + "): " + path + " no longer exists (deleted by hand?)")
                        : KeeperException.create(code, event.getPath()));
                return;
            }
            node = event.getName();
            if (future.isDone()) {
                // Cancelled (or failed) while the create was in flight: withdraw() saw no node.
                delete(node);
                return;
            }
            evaluate();
        }

        void withdraw() {
            String mine = node;
            if (mine != null) {
                delete(mine);
            }
        }

        /** Runs a read-decide-watch step, or makes the running one run again. */
        void evaluate() {
            if (node == null) {
                return; // the create callback evaluates
            }
            while (true) {
                int s = evaluation.get();
                if (s == 2) {
                    return;
                }
                if (evaluation.compareAndSet(s, s + 1)) {
                    if (s == 0) {
                        read(head);
                    }
                    return;
                }
            }
        }

        /** The end of a step: run another if a watch fired during this one. */
        private void stepDone() {
            if (evaluation.compareAndSet(1, 0)) {
                return;
            }
            evaluation.set(1);
            read(head);
        }

        private void read(boolean watch) {
            if (future.isDone()) {
                evaluation.set(0);
                return;
            }
            reads.incrementAndGet();
            try {
                if (watch) {
                    client.getChildren().usingWatcher(this).inBackground((c, e) -> readDone(e, true)).forPath(path);
                } else {
                    client.getChildren().inBackground((c, e) -> readDone(e, false)).forPath(path);
                }
            } catch (Exception e) {
                fail(e);
                evaluation.set(0);
            }
        }

        private void readDone(CuratorEvent event, boolean watched) {
            if (future.isDone()) {
                evaluation.set(0);
                return;
            }
            int rc = event.getResultCode();
            if (rc != 0) {
                if (rc == KeeperException.Code.NONODE.intValue()) {
                    future.completeExceptionally(new IllegalStateException("acquire(" + n + "): " + path + " no longer exists (deleted by hand?)"));
                }
                // Connection loss: the RECONNECTED listener evaluates again; LOST fails the request.
                evaluation.set(0);
                return;
            }
            decide(event.getChildren(), watched);
        }

        private void decide(List<String> children, boolean watched) {
            String mine = node.substring(node.lastIndexOf('/') + 1);
            Entry me = parse(mine);
            List<Entry> entries = new ArrayList<>(children.size());
            for (String child : children) {
                Entry e = parse(child);
                if (e != null) {
                    entries.add(e);
                }
            }
            entries.sort((a, b) -> Long.compare(a.sequence, b.sequence));
            long before = 0; // sum of the weights before mine, saturated above capacity
            Entry predecessor = null;
            boolean predecessorGranted = true;
            boolean found = false;
            boolean successors = false;
            for (Entry e : entries) {
                if (e.sequence < me.sequence) {
                    before = Math.min(before + e.weight, capacity + 1);
                    predecessor = e;
                    predecessorGranted = before <= capacity;
                } else if (e.name.equals(mine)) {
                    found = true;
                } else {
                    successors = true;
                }
            }
            if (!found) {
                future.completeExceptionally(new SessionLostException("acquire(" + n + ") on " + path
                        + ": the request's node " + mine + " is gone (its session expired) before the grant"));
                evaluation.set(0);
                return;
            }
            if (before + n <= capacity) {
                grant(successors);
                evaluation.set(0);
                return;
            }
            if (predecessorGranted) {
                // The head: only a deletion can grant it. Make sure the read that decided set the watch.
                head = true;
                if (watched) {
                    stepDone();
                } else {
                    read(true);
                }
                return;
            }
            head = false;
            String watchPath = path + "/" + predecessor.name;
            try {
                client.checkExists().usingWatcher(this).inBackground((c, event) -> {
                    Stat stat = event.getStat();
                    if (event.getResultCode() == 0 && stat != null && stat.getVersion() == 0) {
                        stepDone(); // waiting and watched
                    } else if (event.getResultCode() == 0 || event.getResultCode() == KeeperException.Code.NONODE.intValue()) {
                        read(false); // gone, or already granted: decide again at once
                    } else {
                        evaluation.set(0); // connection loss: RECONNECTED evaluates again
                    }
                }).forPath(watchPath);
            } catch (Exception e) {
                fail(e);
                evaluation.set(0);
            }
        }

        private void grant(boolean successors) {
            grants.incrementAndGet();
            String mine = node;
            if (successors) {
                try {
                    client.setData().inBackground().forPath(mine, GRANTED);
                } catch (Exception e) {
                    // Background; the successor is woken by our deletion at the latest.
                }
            }
            Lease lease = new Lease(n, mine, ZooKeeperSemaphore.this::release);
            held.add(lease);
            if (!future.complete(lease)) {
                lease.close(); // cancelled meanwhile: never leak the grant
            }
        }

        @Override
        public void process(WatchedEvent event) {
            if (event.getType() == Event.EventType.None) {
                Event.KeeperState s = event.getState();
                if (s == Event.KeeperState.Closed) {
                    future.completeExceptionally(new SessionLostException("acquire(" + n + ") on " + path
                            + ": the Curator client was closed before the grant"));
                } else if (s == Event.KeeperState.Expired) {
                    future.completeExceptionally(new SessionLostException("acquire(" + n + ") on " + path
                            + ": the ZooKeeper session expired before the grant"));
                }
                return;
            }
            watchEvents.incrementAndGet();
            evaluate();
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
