// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.CuratorEventType;
import org.apache.curator.framework.api.CuratorListener;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.jspecify.annotations.Nullable;

/*
 * The session guard of one ZooKeeperSemaphore: the session as its leases see it. It owns the
 * leases' local deadline, the heartbeat, the watches on held nodes and the connection's state
 * changes, decides when a lease is no longer certainly held, and loses it (lose(): marked,
 * forgotten, logged, told to the listeners). On RECONNECTED, one evaluation with confirm set
 * (Evaluation.decide) turns VALID again the leases whose node is in its snapshot, if within the
 * deadline, and loses the others. LOST, or the client closing: leases lost, waiters fail. After
 * the semaphore's close() the listeners and the heartbeat stay until the last lease is released
 * (ZooKeeperSemaphore.detachIfDone). Its own file because the bound below is read alone.
 *
 * A lease is VALID, SUSPENDED (connection suspended), LOST (final) or RELEASED. The local
 * deadline is lastContact + 9/10 of the negotiated session timeout T, where lastContact is an
 * instant at or before which the LEADER is known to have heard from the session. Only the leader
 * expires sessions, and it does so no earlier than T after it last heard from one; a follower
 * answers reads and pings from its own copy even while cut from the leader (until syncLimit
 * ticks pass), so an answered read proves nothing and never moves lastContact. What moves it is
 * an operation the leader ordered (ordered(): a create, a setData, a sync; each fails once the
 * session is expired):
 *   - A follower passes the sessions it heard from to the leader in its answers to the leader's
 *     pings, every tickTime/2, on the same ordered stream as the requests it forwards. So when
 *     an ordered op sent at t succeeds, the leader had processed every ping answer the follower
 *     sent before forwarding it, and so had heard of every op of ours that the follower received
 *     by the last leader ping before t: by the assumption tickTime <= T/2 (ZooKeeper's default
 *     minSessionTimeout is 2 ticks) plus a twentieth of T for a late ping, every op of ours
 *     answered before t - 3T/10. The anchor is the latest send time among those (a ring of the
 *     last ANSWERS answered ops, reads included).
 *   - Without such an op, the ZooKeeper client's own pings (sent after T/3 of silence) give
 *     the anchor t - 3T/10 - T/3.
 *   - The 1/10 of T left covers the rate difference of the two clocks (up to 10%); the leader's
 *     expiry buckets round up, never down.
 * So a lease says valid at most until anchor + 9T/10 <= (the last instant the leader heard from
 * the session) + T: no later than the leader may expire it. While anything is held or waiting,
 * a heartbeat every T/10 sends a sync (ordered by the leader) and, when it succeeds, an exists
 * with a watch on every held node; it also marks every lease LOST once the deadline has passed.
 * A held node's deletion (a watch, or the heartbeat's exists) makes its lease LOST at once.
 *
 */
final class SessionGuard {

    /** How many answered operations the deadline's anchors are chosen from. */
    private static final int ANSWERS = 32;

    private final ZooKeeperSemaphore owner;
    private final CuratorFramework client;
    private final String path;
    private final Watcher heldWatcher = this::heldChanged;
    private final ConnectionStateListener connectionListener = (c, state) -> connectionChanged(state);
    private final CuratorListener closingListener = this::curatorEvent;
    /** The heartbeat's schedule; set by start(), cancelled by detach(). */
    private volatile @Nullable ScheduledFuture<?> heartbeat;

    private final AtomicBoolean detached = new AtomicBoolean();

    /** The negotiated session timeout T; written on (re)connection, read by any thread. */
    private volatile int timeoutMs;
    /**
     * The nanoClock time from which the local deadline is counted: an instant at or before which
     * the leader is known to have last heard from the session. Raised only by ordered(); read by any
     * thread.
     */
    private final AtomicLong lastContact = new AtomicLong();
    /** Guards the ring below: the send and answer times of the last ANSWERS operations the server answered. */
    private final ReentrantLock contactLock = new ReentrantLock();

    private final long[] answeredSent = new long[ANSWERS];
    private final long[] answeredAt = new long[ANSWERS];
    private int answeredNext;

    SessionGuard(ZooKeeperSemaphore owner, CuratorFramework client, String path) {
        this.owner = owner;
        this.client = client;
        this.path = path;
    }

    /**
     * Refuses a session timeout with which the validity bound cannot hold, and warns about one that
     * leaves it little room. What the client cannot see (the server's tickTime, the clocks' rates)
     * the documentation states as assumptions.
     */
    static void checkTimeout(String call, int timeoutMs) {
        String why =
                "a lease's validity assumes that the leader's pings to its followers are at most a twentieth of the"
                        + " session timeout late (" + timeoutMs / 20
                        + " ms here) and that a heartbeat confirms the session every tenth of it";
        if (timeoutMs < ZooKeeperSemaphore.MIN_SESSION_TIMEOUT_MS) {
            throw new IllegalArgumentException(
                    call + ": the session timeout the server granted, " + timeoutMs + " ms, is below "
                            + ZooKeeperSemaphore.MIN_SESSION_TIMEOUT_MS
                            + " ms, the shortest with which a lease can keep its promise: " + why
                            + " (at least 20 ms apart); ask for a longer session timeout (CuratorFrameworkFactory.builder().sessionTimeoutMs(..))"
                            + " and let the server allow it (minSessionTimeout)");
        }
        if (timeoutMs < ZooKeeperSemaphore.WARN_SESSION_TIMEOUT_MS) {
            ZooKeeperSemaphore.LOG.log(
                    System.Logger.Level.WARNING,
                    call + ": the session timeout the server granted, " + timeoutMs + " ms, is below "
                            + ZooKeeperSemaphore.WARN_SESSION_TIMEOUT_MS + " ms: " + why
                            + ", which a loaded leader may exceed");
        }
    }

    /**
     * Once the path is open: no lease is valid before an operation the leader ordered proves the
     * session alive. Listens to the client's connection and closing, and starts the heartbeat,
     * every tenth of the session timeout (at least 20 ms apart).
     */
    void start(int negotiatedTimeoutMs) {
        timeoutMs = negotiatedTimeoutMs;
        lastContact.set(now() - 2 * TimeUnit.MILLISECONDS.toNanos(negotiatedTimeoutMs));
        client.getConnectionStateListenable().addListener(connectionListener);
        client.getCuratorListenable().addListener(closingListener);
        long period = Math.max(20, negotiatedTimeoutMs / 10);
        heartbeat =
                ZooKeeperSemaphore.TIMER.scheduleWithFixedDelay(this::heartbeat, period, period, TimeUnit.MILLISECONDS);
    }

    /** The semaphore is closed and holds nothing: the listeners and the heartbeat go (once). */
    void detach() {
        if (detached.compareAndSet(false, true)) {
            client.getConnectionStateListenable().removeListener(connectionListener);
            client.getCuratorListenable().removeListener(closingListener);
            ScheduledFuture<?> h = heartbeat;
            if (h != null) {
                h.cancel(false);
            }
        }
    }

    /** Curator tells its CuratorListeners when the client closes; the session ends with it. */
    private void curatorEvent(CuratorFramework c, CuratorEvent event) {
        if (event.getType() == CuratorEventType.CLOSING) {
            sessionLost("the Curator client was closed");
        }
    }

    void timeoutChanged(int negotiatedTimeoutMs) {
        timeoutMs = negotiatedTimeoutMs;
    }

    int timeoutMs() {
        return timeoutMs;
    }

    private long now() {
        return owner.nanoClock.getAsLong();
    }

    /** Whether the local deadline has passed: the leader may have expired the session by now. */
    boolean pastDeadline() {
        long allowed = TimeUnit.MILLISECONDS.toNanos(timeoutMs) / 10 * 9;
        return now() - lastContact.get() > allowed;
    }

    /** The server answered an operation of ours sent at sentAt (nanoClock): a candidate anchor, proving nothing alone. */
    void answered(long sentAt) {
        long at = now();
        contactLock.lock();
        try {
            answeredSent[answeredNext] = sentAt;
            answeredAt[answeredNext] = at;
            answeredNext = (answeredNext + 1) % ANSWERS;
        } finally {
            contactLock.unlock();
        }
    }

    /**
     * An operation the leader ordered (a create, a write, a sync), sent at sentAt, succeeded: the
     * session was alive at the leader after sentAt, and the leader had heard from it no later than
     * the anchor computed here (see the notes above). Moves lastContact up to that anchor.
     */
    void ordered(long sentAt) {
        long timeout = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        long relay = timeout * 3 / 10; // tickTime / 2 <= timeout / 4, plus a twentieth for the leader's lateness
        long anchor = sentAt - relay - timeout / 3; // the client's own pings: at least every third of the timeout
        contactLock.lock();
        try {
            for (int i = 0; i < ANSWERS; i++) {
                if (answeredAt[i] != 0 && answeredAt[i] - (sentAt - relay) <= 0 && answeredSent[i] - anchor > 0) {
                    anchor = answeredSent[i];
                }
            }
        } finally {
            contactLock.unlock();
        }
        answered(sentAt);
        if (!owner.held.isEmpty() && pastDeadline()) {
            expireLeases(); // lost for good: the deadline passed before this answer came
        }
        long a = anchor;
        lastContact.accumulateAndGet(a, (x, y) -> y - x > 0 ? y : x);
    }

    /**
     * While anything is held or waiting: a sync (which the leader orders, and which fails once the
     * leader has expired the session), then an exists with a watch on every held node, so that a
     * node deleted by hand is noticed even if its watch was missed. Runs on the timer thread.
     */
    void heartbeat() {
        if (owner.held.isEmpty() && owner.waiting.isEmpty()) { // nothing held or waiting here: the heartbeat rests
            return;
        }
        if (!owner.held.isEmpty() && pastDeadline()) {
            expireLeases();
        }
        long sentAt = now();
        try {
            client.sync()
                    .inBackground((c, e) -> {
                        if (e.getResultCode() != 0) {
                            return; // the next heartbeat tries again; the deadline decides meanwhile
                        }
                        ordered(sentAt);
                        for (Lease lease : owner.held) {
                            watchHeld(lease);
                        }
                    })
                    .forPath(path);
        } catch (Exception e) {
            // Background: failures come to the callback; the next heartbeat tries again.
        }
    }

    /** An exists watch on a held node: its deletion makes the lease lost at once. */
    void watchHeld(Lease lease) {
        try {
            client.checkExists()
                    .usingWatcher(heldWatcher)
                    .inBackground((c, e) -> {
                        if (e.getResultCode() == KeeperException.Code.NONODE.intValue()) {
                            lose(lease, "its node " + lease.node() + " was deleted");
                        }
                    })
                    .forPath(lease.node());
        } catch (Exception e) {
            // Background; the heartbeat sets it again.
        }
    }

    private void heldChanged(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.None || event.getPath() == null) {
            return;
        }
        for (Lease lease : owner.held) {
            if (lease.node().equals(event.getPath())) {
                if (event.getType() == Watcher.Event.EventType.NodeDeleted) {
                    lose(lease, "its node " + lease.node() + " was deleted");
                } else {
                    watchHeld(lease); // a one-time watch: set it again
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // The connection's state changes, and losing leases

    /** Curator's connection state changed: the listeners are told, then the leases follow it. */
    void connectionChanged(ConnectionState state) {
        for (ZooKeeperListener l : owner.listeners) {
            try {
                l.connectionChanged(state);
            } catch (RuntimeException e) {
                ZooKeeperSemaphore.LOG.log(
                        System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
            }
        }
        if (state == ConnectionState.SUSPENDED) {
            owner.suspended = true;
            for (Lease lease : owner.held) {
                lease.markSuspended();
            }
        } else if (state == ConnectionState.LOST) {
            sessionLost("the ZooKeeper session was lost");
        } else if (state == ConnectionState.RECONNECTED || state == ConnectionState.CONNECTED) {
            owner.suspended = false;
            timeoutChanged(owner.negotiatedTimeoutMs());
            owner.evaluation.confirmNext();
            owner.evaluate(); // one shared read: it decides every waiter and confirms every lease
        }
    }

    /** The session is gone (lost, or the client closed): waiters fail, leases are lost. */
    void sessionLost(String why) {
        for (Request r : owner.waiting) {
            r.future.completeExceptionally(new SessionLostException(
                    r.call + "(" + r.n + ") on " + path + ": " + why + " before the grant; the request is gone"));
        }
        for (Lease lease : owner.held) {
            lose(lease, why);
        }
        owner.evaluation.forgetWatches();
        owner.detachIfDone();
    }

    private void expireLeases() {
        for (Lease lease : owner.held) {
            lose(
                    lease,
                    "the local deadline passed: the leader has not confirmed the session for " + timeoutMs * 9 / 10
                            + " ms of the " + timeoutMs + " ms session timeout");
        }
        owner.detachIfDone();
    }

    /** The lease is lost for good (if still held): marked, forgotten, logged, and the listeners told. */
    void lose(Lease lease, String reason) {
        owner.held.remove(lease);
        owner.handOn.remove(lease);
        if (lease.markLost()) {
            ZooKeeperSemaphore.LOG.log(
                    System.Logger.Level.WARNING,
                    "ZooKeeperSemaphore " + path + ": lease of " + lease.permits() + " at " + lease.node() + " lost: "
                            + reason);
            for (ZooKeeperListener l : owner.listeners) {
                try {
                    l.leaseLost(lease, reason);
                } catch (RuntimeException e) {
                    ZooKeeperSemaphore.LOG.log(
                            System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
                }
            }
        }
        owner.detachIfDone();
    }
}
