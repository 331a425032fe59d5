// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

/*
 * The generations of one ZooKeeperSemaphore's path: <path>/gen-<10 digits>, the highest the newest,
 * where new requests go.
 *
 * The sequence suffix of a request is its generation's cversion, a signed 32-bit counter moved by
 * every child create and delete. When a client sees a sequence >= SWITCH_AT_SEQUENCE in the newest
 * generation (or a poisoned one), it creates a seal there (PERSISTENT_SEQUENTIAL seal-<sequence>),
 * then the next generation. Requests created in the old generation after the seal (their client
 * had not seen the switch) are void: their owner deletes them and asks again in the new
 * generation. Drained old generations (only seals left) are deleted with their seals in one
 * multi-op transaction, which fails if a request appeared meanwhile. Which requests count, and in
 * which order, is QueueSnapshot's; this class only writes the generations' nodes, and asks the
 * semaphore to evaluate again once a write landed (or failed: after RETRY_MS).
 */
final class Generations {

    static final String PREFIX = "gen-";
    private static final Pattern GENERATION = Pattern.compile("^gen-(\\d{10})$");

    private final ZooKeeperSemaphore owner;
    private final CuratorFramework client;
    private final String path;
    /** The newest generation seen; raised by reads and by our own creates, never lowered. */
    private volatile long newest;
    /** A switch (seal, then create) is in flight; one at a time per semaphore object. */
    private final AtomicBoolean switching = new AtomicBoolean();

    Generations(ZooKeeperSemaphore owner, CuratorFramework client, String path) {
        this.owner = owner;
        this.client = client;
        this.path = path;
    }

    /** Finds the newest generation of the path, creating generation 0 if there is none. Blocks. */
    void open() throws Exception {
        long found = -1;
        for (String child : client.getChildren().forPath(path)) {
            found = Math.max(found, number(child));
        }
        if (found < 0) {
            found = 0;
            try {
                client.create().withMode(CreateMode.PERSISTENT).forPath(path(0));
            } catch (KeeperException.NodeExistsException raced) {
                // another client made it
            }
        }
        seen(found);
    }

    /** The generation number in a child's name, or -1 if the child is not a generation. */
    static long number(String child) {
        Matcher m = GENERATION.matcher(child);
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }

    String path(long generation) {
        return path + "/" + PREFIX + String.format("%010d", generation);
    }

    long newest() {
        return newest;
    }

    boolean switching() {
        return switching.get();
    }

    /** A read (or a create) showed generation g. */
    void seen(long g) {
        if (g > newest) {
            newest = g; // written by the event thread (and the constructor), so no lost update
        }
    }

    /** Seals generation g (unless sealed already) and creates g + 1; then evaluates again. */
    void switchFrom(long g, boolean sealed) {
        if (!switching.compareAndSet(false, true)) {
            return;
        }
        try {
            if (sealed) {
                create(g + 1);
                return;
            }
            client.create()
                    .withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                    .inBackground((c, e) -> {
                        if (e.getResultCode() == 0) {
                            ZooKeeperSemaphore.LOG.log(
                                    System.Logger.Level.INFO,
                                    "ZooKeeperSemaphore " + path + ": generation " + g + " sealed at " + e.getName());
                            create(g + 1);
                        } else {
                            switching.set(false);
                            retry();
                        }
                    })
                    .forPath(path(g) + "/seal-", ZooKeeperSemaphore.NO_DATA);
        } catch (Exception e) {
            switching.set(false);
            retry();
        }
    }

    /** Creates generation g (it may exist already); then evaluates again. */
    void create(long g) {
        try {
            client.create()
                    .withMode(CreateMode.PERSISTENT)
                    .inBackground((c, e) -> {
                        switching.set(false);
                        int rc = e.getResultCode();
                        if (rc == 0 || rc == KeeperException.Code.NODEEXISTS.intValue()) {
                            seen(g);
                            owner.evaluate();
                        } else {
                            retry();
                        }
                    })
                    .forPath(path(g), ZooKeeperSemaphore.NO_DATA);
        } catch (Exception e) {
            switching.set(false);
            retry();
        }
    }

    /** Deletes a drained old generation and its seals in one transaction (it fails if a request appeared). */
    void deleteDrained(long g, Set<String> allNodes) {
        String genPath = path(g);
        List<CuratorOp> ops = new ArrayList<>();
        try {
            for (String node : allNodes) {
                if (node.startsWith(genPath + "/")) {
                    ops.add(client.transactionOp().delete().forPath(node));
                }
            }
            ops.add(client.transactionOp().delete().forPath(genPath));
            client.transaction().inBackground().forOperations(ops);
        } catch (Exception e) {
            // Another client deletes it, or the next evaluation tries again.
        }
    }

    private void retry() {
        ZooKeeperSemaphore.TIMER.schedule(owner::evaluate, ZooKeeperSemaphore.RETRY_MS, TimeUnit.MILLISECONDS);
    }
}
