// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import dev.handoff.SemaphoreRejectedException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.jspecify.annotations.Nullable;

/*
 * The evaluation of one ZooKeeperSemaphore: one shared read of the cluster queue, one decision for
 * every local waiting request from that snapshot (QueueSnapshot's rule), the grants, and the
 * watches that ask for the next evaluation. The semaphore owns the requests and the leases; this
 * class reads, decides, grants and watches.
 *
 * One evaluation per semaphore object at a time (evaluation: 0 idle, 1 running, 2 must run
 * again): read <path>'s children (the generations), then each generation's children, then the
 * capacity, then decide for every local waiting request from that one snapshot. After a decision
 * a waiting request is either
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
 * the queue it counts: ZooKeeper answers one session's requests in order, so the capacity used is
 * at least as new as the queue. Since the prefix before a request only shrinks, the grant was
 * allowed at the instant the capacity was read. (A cached capacity would let a shrink that landed
 * between the queue's read and the capacity watch grant more than the new capacity.)
 *
 * A request is decided only by a read sent after its create succeeded (readyAfter / readsSent).
 * An evaluation with confirm set (after RECONNECTED) also confirms the held leases: those whose
 * node is in the snapshot turn VALID again (if within the deadline), the others are lost.
 *
 * Every field below is written by the evaluation in progress (Curator's event thread, or the
 * timer thread for a retry) and may be read by any thread for describe().
 */
final class Evaluation {

    private final ZooKeeperSemaphore owner;
    private final CuratorFramework client;
    private final String path;
    private final AtomicInteger evaluation = new AtomicInteger();
    /** Reads of the queue sent so far: a request is decided only by a read sent after its create landed. */
    private final AtomicLong readsSent = new AtomicLong();
    /** The next evaluation confirms (or loses) the held leases: set on RECONNECTED. */
    private final AtomicBoolean pendingConfirm = new AtomicBoolean();
    /** Node paths on which an exists watch of ours is pending. */
    private final Set<String> watched = ConcurrentHashMap.newKeySet();
    /** Evaluation reads failed in a row, since when (nanoClock), and the kind last reported. */
    private final AtomicInteger failedReads = new AtomicInteger();

    private volatile long failingSince;
    private volatile @Nullable String failureKind;
    private final Watcher nodeWatcher = this::nodeChanged;
    private final Watcher generationWatcher = this::generationChanged;

    Evaluation(ZooKeeperSemaphore owner, CuratorFramework client, String path) {
        this.owner = owner;
        this.client = client;
        this.path = path;
    }

    /** The newest generation changed while a local front listens for waiters behind its block. */
    private void generationChanged(WatchedEvent event) {
        if (event.getType() != Watcher.Event.EventType.None) {
            owner.watchEvents.incrementAndGet();
            evaluate();
        }
    }

    int state() {
        return evaluation.get();
    }

    long readsSent() {
        return readsSent.get();
    }

    Set<String> watchedNodes() {
        return watched;
    }

    void confirmNext() {
        pendingConfirm.set(true);
    }

    void forgetWatches() {
        watched.clear();
    }

    /** Asks for an evaluation: starts one, or makes the running one run once more. */
    void evaluate() {
        while (true) {
            int s = evaluation.get();
            if (s == 2) {
                return;
            }
            if (evaluation.compareAndSet(s, s + 1)) {
                if (s == 0) {
                    read();
                }
                return;
            }
        }
    }

    private void evaluationDone() {
        if (evaluation.compareAndSet(1, 0)) {
            return;
        }
        evaluation.set(1);
        read();
    }

    /**
     * A read of the queue failed with rc (or threw): evaluate again after a backoff that doubles
     * from RETRY_MS up to ZooKeeperSemaphore.MAX_RETRY_MS, never dropping the request for it. The failure is logged and
     * told to the listeners once per change of its kind, not once per attempt. A failure that is not
     * a lost connection (those end with the session or recover with it), for example NOAUTH, that
     * persists for a session timeout fails the waiting requests instead of leaving them hanging.
     */
    private void readFailed(boolean confirm, String node, int rc, @Nullable Exception thrown) {
        int attempts = failedReads.incrementAndGet();
        long now = owner.nanoClock.getAsLong();
        if (attempts == 1) {
            failingSince = now;
        }
        KeeperException.Code code = thrown == null ? KeeperException.Code.get(rc) : null;
        String kind = (code != null ? String.valueOf(code) : String.valueOf(thrown)) + " reading " + node;
        if (!kind.equals(failureKind)) {
            failureKind = kind;
            String message = "ZooKeeperSemaphore " + path + ": reads of the queue fail (" + kind + "), attempt "
                    + attempts + "; retrying with backoff";
            ZooKeeperSemaphore.LOG.log(System.Logger.Level.WARNING, message);
            for (ZooKeeperListener l : owner.listeners) {
                try {
                    l.readsFailing(message, attempts);
                } catch (RuntimeException e) {
                    ZooKeeperSemaphore.LOG.log(
                            System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
                }
            }
        }
        boolean connection = thrown != null
                || code == null
                || code == KeeperException.Code.CONNECTIONLOSS
                || code == KeeperException.Code.SESSIONMOVED
                || code == KeeperException.Code.OPERATIONTIMEOUT
                || code == KeeperException.Code.SESSIONEXPIRED;
        long failingMs = TimeUnit.NANOSECONDS.toMillis(now - failingSince);
        if (!connection && failingMs >= owner.guard.timeoutMs()) {
            KeeperException cause = KeeperException.create(code, node);
            for (Request r : owner.waiting) {
                r.future.completeExceptionally(new IllegalStateException(
                        r.call + "(" + r.n + ") on " + path
                                + ": reads of the queue have failed for " + failingMs + " ms (" + attempts
                                + " attempts, at least the "
                                + owner.guard.timeoutMs() + " ms session timeout): " + kind,
                        cause));
            }
        }
        if (confirm) {
            pendingConfirm.set(true);
        }
        long delay =
                Math.min(ZooKeeperSemaphore.MAX_RETRY_MS, ZooKeeperSemaphore.RETRY_MS << Math.min(attempts - 1, 10));
        ZooKeeperSemaphore.TIMER.schedule(this::evaluate, delay, TimeUnit.MILLISECONDS);
        evaluationDone();
    }

    /** A whole evaluation's reads succeeded: a run of failures, if any, is over. */
    private void readsSucceeded() {
        int attempts = failedReads.getAndSet(0);
        if (attempts == 0) {
            return;
        }
        failureKind = null;
        ZooKeeperSemaphore.LOG.log(
                System.Logger.Level.INFO,
                "ZooKeeperSemaphore " + path + ": reads of the queue succeed again after " + attempts
                        + " failed attempts");
        for (ZooKeeperListener l : owner.listeners) {
            try {
                l.readsRecovered(attempts);
            } catch (RuntimeException e) {
                ZooKeeperSemaphore.LOG.log(
                        System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
            }
        }
    }

    /** Evaluate again after RETRY_MS (not a failure: the path was emptied by hand). */
    private void retryLater(boolean confirm) {
        if (confirm) {
            pendingConfirm.set(true);
        }
        ZooKeeperSemaphore.TIMER.schedule(this::evaluate, ZooKeeperSemaphore.RETRY_MS, TimeUnit.MILLISECONDS);
        evaluationDone();
    }

    private void read() {
        boolean confirm = pendingConfirm.getAndSet(false);
        if (owner.waiting.isEmpty() && owner.handOn.isEmpty() && !confirm) {
            evaluationDone();
            return;
        }
        long sentAt = owner.nanoClock.getAsLong();
        long ticket = readsSent.incrementAndGet();
        owner.reads.incrementAndGet();
        try {
            client.getChildren()
                    .inBackground((c, e) -> generationsRead(e, sentAt, ticket, confirm))
                    .forPath(path);
        } catch (Exception e) {
            readFailed(confirm, path, 0, e);
        }
    }

    private void generationsRead(CuratorEvent event, long sentAt, long ticket, boolean confirm) {
        int rc = event.getResultCode();
        if (rc == KeeperException.Code.NONODE.intValue()) {
            pathGone();
            evaluationDone();
            return;
        }
        if (rc != 0) {
            readFailed(confirm, path, rc, null);
            return;
        }
        owner.guard.answered(sentAt);
        List<Long> numbers = new ArrayList<>();
        for (String child : event.getChildren()) {
            long g = Generations.number(child);
            if (g >= 0) {
                numbers.add(g);
            }
        }
        numbers.sort(null);
        if (numbers.isEmpty()) {
            // The path was emptied by hand: start generation 0 again.
            owner.generations.create(0);
            retryLater(confirm);
            return;
        }
        readGeneration(numbers, 0, new ArrayList<>(), new HashSet<>(), ticket, confirm);
    }

    private void readGeneration(
            List<Long> numbers,
            int i,
            List<QueueSnapshot.Generation> acc,
            Set<String> allNodes,
            long ticket,
            boolean confirm) {
        if (i == numbers.size()) {
            readCapacityThenDecide(acc, allNodes, ticket, confirm);
            return;
        }
        owner.queueReadHook.run();
        long g = numbers.get(i);
        String genPath = owner.generationPath(g);
        boolean newest = i == numbers.size() - 1;
        long sentAt = owner.nanoClock.getAsLong();
        owner.reads.incrementAndGet();
        try {
            var builder = client.getChildren();
            var watchedBuilder = newest && !owner.handOn.isEmpty() ? builder.usingWatcher(generationWatcher) : builder;
            watchedBuilder
                    .inBackground((c, e) -> {
                        int rc = e.getResultCode();
                        if (rc == KeeperException.Code.NONODE.intValue()) {
                            acc.add(new QueueSnapshot.Generation(g, List.of())); // deleted once drained
                        } else if (rc != 0) {
                            readFailed(confirm, genPath, rc, null);
                            return;
                        } else {
                            owner.guard.answered(sentAt);
                            acc.add(new QueueSnapshot.Generation(g, e.getChildren()));
                            for (String child : e.getChildren()) {
                                allNodes.add(genPath + "/" + child);
                            }
                        }
                        readGeneration(numbers, i + 1, acc, allNodes, ticket, confirm);
                    })
                    .forPath(genPath);
        } catch (Exception e) {
            readFailed(confirm, genPath, 0, e);
        }
    }

    /**
     * The last read of an evaluation: the capacity, read after every read of the queue that the
     * decision uses (ZooKeeper answers one session's reads in order), so that no grant is decided
     * with a capacity older than the queue it counts. A shrink that lands between the queue's read
     * and this one only makes the decision stricter than it needs to be, never looser.
     */
    private void readCapacityThenDecide(
            List<QueueSnapshot.Generation> acc, Set<String> allNodes, long ticket, boolean confirm) {
        long sentAt = owner.nanoClock.getAsLong();
        try {
            client.getData()
                    .usingWatcher(owner.capacity.watcher)
                    .inBackground((c, e) -> {
                        int rc = e.getResultCode();
                        if (rc == KeeperException.Code.NONODE.intValue()) {
                            pathGone();
                            evaluationDone();
                            return;
                        }
                        if (rc != 0 || e.getStat() == null) {
                            readFailed(confirm, path, rc, null);
                            return;
                        }
                        owner.guard.answered(sentAt);
                        readsSucceeded();
                        long n = Capacity.parse(e.getData());
                        if (n > 0) {
                            owner.capacity.changed(n, e.getStat().getVersion());
                        } else {
                            owner.alarms.raise(
                                    path,
                                    "the data at the path is not a capacity: \"" + Capacity.printable(e.getData())
                                            + "\"; keeping " + owner.capacity.value());
                        }
                        long decideWith = n > 0 ? n : owner.capacity.value();
                        try {
                            decide(
                                    QueueSnapshot.of(acc, decideWith, ZooKeeperSemaphore.SWITCH_AT_SEQUENCE),
                                    allNodes,
                                    ticket,
                                    confirm);
                            owner.decisions.incrementAndGet();
                        } finally {
                            evaluationDone();
                        }
                    })
                    .forPath(path);
        } catch (Exception e) {
            readFailed(confirm, path, 0, e);
        }
    }

    private void pathGone() {
        for (Request r : owner.waiting) {
            r.future.completeExceptionally(new IllegalStateException(
                    r.call + "(" + r.n + "): " + path + " no longer exists (deleted by hand?)"));
        }
    }

    /** Runs on Curator's event thread, one at a time (evaluation). */
    private void decide(QueueSnapshot s, Set<String> allNodes, long ticket, boolean confirm) {
        if (confirm) {
            for (Lease lease : owner.held) {
                if (allNodes.contains(lease.node())) {
                    lease.markConfirmed();
                } else {
                    owner.guard.lose(lease, "its node " + lease.node() + " was gone after the reconnection");
                }
            }
            owner.detachIfDone();
        }
        owner.clusterQueueLength = s.order.size();
        owner.generations.seen(s.newest);
        for (Map.Entry<String, String> p : s.poison.entrySet()) {
            owner.alarms.raise(p.getKey(), p.getValue());
        }
        boolean open = !(s.newestNeedsSwitch || s.newestSealed);
        if (!open) {
            owner.generations.switchFrom(s.newest, s.newestSealed);
        }
        for (long g : s.drained) {
            owner.generations.deleteDrained(g, allNodes);
        }
        List<Request> decided = new ArrayList<>();
        for (Request r : owner.waiting) {
            if (r.future.isDone()) {
                continue;
            }
            if (r.node == null) {
                if (r.pendingCreate && open && !r.creating) {
                    r.create(s.newest);
                }
                continue;
            }
            if (r.readyAfter >= ticket) {
                continue; // created after this read was sent: the next read decides it
            }
            if (s.misplaced.contains(r.name)) {
                r.recreate(open ? s.newest : -1);
                continue;
            }
            QueueSnapshot.Entry e = s.byName.get(r.name);
            if (e == null) {
                if (!allNodes.contains(r.node)) {
                    r.future.completeExceptionally(new SessionLostException(r.call + "(" + r.n + ") on " + path
                            + ": the request's node " + r.name + " is gone (its session expired) before the grant"));
                }
                continue;
            }
            decided.add(r);
        }
        decided.sort((a, b) -> Integer.compare(s.byName.get(a.name).index, s.byName.get(b.name).index));
        boolean headWatched = false;
        for (Request r : decided) {
            QueueSnapshot.Entry e = s.byName.get(r.name);
            boolean successors = e.index < s.order.size() - 1;
            if (e.granted) {
                grant(r, successors, s.order.size());
                continue;
            }
            if (r.oneShot) {
                r.future.completeExceptionally(LeaseFutures.NOT_GRANTED);
                continue;
            }
            if (e.index >= owner.maxQueueLength) {
                r.future.completeExceptionally(new SemaphoreRejectedException(
                        r.call + "(" + r.n + ") on " + path + ": the queue already holds " + e.index
                                + " requests, the most it may hold is " + owner.maxQueueLength));
                continue;
            }
            if (e.blocked) {
                for (Map.Entry<String, Long> child : s.poisonGeneration.entrySet()) {
                    watchNode(owner.generationPath(child.getValue()) + "/" + child.getKey(), true);
                }
                continue;
            }
            QueueSnapshot.Entry predecessor = s.order.get(e.index - 1); // index 0 is always granted or blocked
            if (predecessor.granted) {
                if (!headWatched) {
                    headWatched = true;
                    for (int i = 0; i < e.index; i++) {
                        QueueSnapshot.Entry before = s.order.get(i);
                        watchNode(owner.generationPath(before.generation) + "/" + before.name, false);
                    }
                }
            } else if (!owner.byName.containsKey(predecessor.name)) {
                watchNode(owner.generationPath(predecessor.generation) + "/" + predecessor.name, true);
            }
        }
        for (Map.Entry<Lease, Runnable> w : owner.handOn.entrySet()) {
            Lease block = w.getKey();
            QueueSnapshot.Entry b =
                    s.byName.get(block.node().substring(block.node().lastIndexOf('/') + 1));
            if (b == null) {
                continue;
            }
            for (int i = b.index + 1; i < s.order.size(); i++) {
                if (!s.order.get(i).granted) {
                    if (owner.handOn.remove(block, w.getValue())) {
                        w.getValue().run();
                    }
                    break;
                }
            }
        }
    }

    private void grant(Request r, boolean successors, int queueLength) {
        owner.grants.incrementAndGet();
        if (successors) {
            try {
                client.setData().inBackground().forPath(r.node, ZooKeeperSemaphore.GRANTED);
            } catch (Exception e) {
                // Background; the successor is woken by our deletion at the latest.
            }
        }
        Lease lease = new Lease(r.n, r.node, r.czxid, owner, owner::release);
        owner.held.add(lease);
        if (owner.suspended) {
            lease.markSuspended();
        }
        owner.guard.watchHeld(lease);
        if (!r.future.complete(lease)) {
            lease.close(); // cancelled meanwhile: never leak the grant
            return;
        }
        long waited = owner.nanoClock.getAsLong() - r.startedAt;
        for (ZooKeeperListener l : owner.listeners) {
            try {
                l.granted(r.n, waited, queueLength);
            } catch (RuntimeException e) {
                ZooKeeperSemaphore.LOG.log(
                        System.Logger.Level.WARNING, "ZooKeeperSemaphore " + path + ": a listener failed", e);
            }
        }
    }

    /** An exists watch on node: it wakes us when the node goes (and, if wakeIfGranted, when it is granted). */
    private void watchNode(String node, boolean wakeIfGranted) {
        if (!watched.add(node)) {
            return;
        }
        try {
            client.checkExists()
                    .usingWatcher(nodeWatcher)
                    .inBackground((c, e) -> {
                        int rc = e.getResultCode();
                        if (rc == 0 && e.getStat() != null && (e.getStat().getVersion() == 0 || !wakeIfGranted)) {
                            return; // there (and not granted, if that matters): the watch waits
                        }
                        watched.remove(node);
                        if (rc == 0 || rc == KeeperException.Code.NONODE.intValue()) {
                            evaluate(); // gone, or granted already: decide again
                        } else {
                            ZooKeeperSemaphore.TIMER.schedule(
                                    this::evaluate, ZooKeeperSemaphore.RETRY_MS, TimeUnit.MILLISECONDS);
                        }
                    })
                    .forPath(node);
        } catch (Exception e) {
            watched.remove(node);
            ZooKeeperSemaphore.TIMER.schedule(this::evaluate, ZooKeeperSemaphore.RETRY_MS, TimeUnit.MILLISECONDS);
        }
    }

    private void nodeChanged(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.None) {
            return; // connection states come through the ConnectionStateListener
        }
        if (event.getPath() != null) {
            watched.remove(event.getPath());
        }
        owner.watchEvents.incrementAndGet();
        evaluate();
    }
}
