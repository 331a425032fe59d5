// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.concurrent.CompletableFuture;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorClosedException;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/*
 * One request of a ZooKeeperSemaphore, from the call that asked to its grant or failure: the
 * future its caller holds, and its node, which this class creates, creates again in a newer
 * generation when the old one cannot order it, and withdraws. Deciding it is the evaluation's
 * (Evaluation); a request only writes and deletes its own node, and is its own file because that
 * life (a create in flight, a protected-mode recovery, a cancel racing the create) reads best
 * apart from the decision.
 *
 * A request whose node cannot be ordered (a child that poisons its generation) or is void (created
 * after its generation's seal) deletes it and asks again in the newest open generation (recreate),
 * at once or, while a switch is under way, at the next decision (pendingCreate).
 *
 * A request is decided only by a read of the queue sent after its create landed (readyAfter,
 * against the evaluation's readsSent): ZooKeeper answers one session's operations in order, so
 * that read contains the node and every request queued before it.
 *
 * Cancellation: the Lease exists only if future.complete(lease) succeeded. A cancelled or failed
 * future withdraws the node (a guaranteed delete, retried by Curator across connection loss); a
 * grant that finds the future already cancelled releases its fresh lease. A create still in
 * flight when the future is cancelled deletes its node when it lands.
 *
 * The volatile fields are written by the event thread (a create's callback, a decision) and by
 * the caller's thread when it starts the request; any thread reads them for describe().
 */
final class Request {
    private final ZooKeeperSemaphore owner;
    final String call;
    final long n;
    final boolean oneShot;
    final CompletableFuture<Lease> future = new CompletableFuture<>();
    final long startedAt;
    /** The created node's full path and name; written by the create callback (null while none). */
    volatile String node;

    volatile String name;
    volatile long czxid;
    /** readsSent when the create landed: only a later read may decide the request. */
    volatile long readyAfter = Long.MAX_VALUE;
    /** The node must be created (again) in the newest open generation by the next decision. */
    volatile boolean pendingCreate;

    volatile boolean creating;

    Request(ZooKeeperSemaphore owner, String call, long n, boolean oneShot) {
        this.owner = owner;
        this.call = call;
        this.n = n;
        this.oneShot = oneShot;
        this.startedAt = owner.nanoClock.getAsLong();
    }

    /** Starts the request: it waits (until its future completes, when a failure withdraws it) and its node is created. */
    void start() {
        owner.waiting.add(this);
        future.whenComplete((lease, failure) -> {
            owner.waiting.remove(this);
            if (failure != null) {
                withdraw();
            }
        });
        create(owner.generations.newest());
    }

    /**
     * Deletes a node of ours (a withdrawn request, a released lease) in the background; Curator
     * retries the delete across connection loss until it succeeds or the session ends, which
     * deletes the node anyway (guaranteed()).
     */
    static void delete(CuratorFramework client, String node) {
        try {
            client.delete().guaranteed().inBackground().forPath(node);
        } catch (Exception e) {
            // Background: failures go to Curator's listeners, and guaranteed() retries.
        }
    }

    /** A request node's name before its sequence suffix. */
    static String nodeName(long n) {
        return QueueSnapshot.REQUEST_MARK + String.format("%019d", n) + "-";
    }

    void create(long generation) {
        creating = true;
        pendingCreate = false;
        long sentAt = owner.nanoClock.getAsLong();
        try {
            owner.client
                    .create()
                    .withProtection()
                    .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .inBackground((c, e) -> created(e, sentAt))
                    .forPath(owner.generationPath(generation) + "/" + nodeName(n), ZooKeeperSemaphore.NO_DATA);
        } catch (Exception e) {
            creating = false;
            fail(e);
        }
    }

    /** Fails the request with e, or with SessionLostException if the client was closed. */
    void fail(Throwable e) {
        if (e instanceof CuratorClosedException || owner.client.getState() == CuratorFrameworkState.STOPPED) {
            future.completeExceptionally(new SessionLostException(
                    call + "(" + n + ") on " + owner.path + ": the Curator client was closed before the grant", e));
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
            owner.evaluate();
            return;
        }
        if (rc != 0) {
            fail(KeeperException.create(KeeperException.Code.get(rc), event.getPath()));
            return;
        }
        owner.guard.ordered(sentAt); // a create: the leader ordered it, so the session was alive after sentAt
        String created = event.getName();
        node = created;
        name = created.substring(created.lastIndexOf('/') + 1);
        if (future.isDone()) {
            delete(owner.client, created); // cancelled (or failed) while the create was in flight
            return;
        }
        owner.byName.put(name, this);
        Stat stat = event.getStat();
        if (stat != null && stat.getCzxid() != 0) {
            ready(stat.getCzxid());
            return;
        }
        // A create recovered by protected mode may come without its stat: ask for it.
        try {
            owner.client
                    .checkExists()
                    .inBackground((c, e) -> {
                        if (e.getResultCode() == 0 && e.getStat() != null) {
                            ready(e.getStat().getCzxid());
                        } else {
                            ready(0); // gone already: the read finds out and fails the request
                        }
                    })
                    .forPath(created);
        } catch (Exception e) {
            fail(e);
        }
    }

    private void ready(long zxid) {
        czxid = zxid;
        readyAfter = owner.evaluation.readsSent();
        owner.evaluate();
    }

    /** Our node cannot be ordered (or is void): delete it and ask again in the newest open generation. */
    void recreate(long openGeneration) {
        String old = node;
        owner.byName.remove(name);
        node = null;
        name = null;
        readyAfter = Long.MAX_VALUE;
        delete(owner.client, old);
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
            owner.byName.remove(mineName, this);
        }
        if (mine != null) {
            delete(owner.client, mine);
        }
    }
}
