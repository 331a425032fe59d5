// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.FourLetterWordMain;

/** Curator clients for the tests, closed together; and the waits and server probes the tests share. */
final class Clients implements AutoCloseable {

    static final int SESSION_MS = 8_000;

    private final String connectString;
    private final List<CuratorFramework> open = new ArrayList<>();

    Clients(String connectString) {
        this.connectString = connectString;
    }

    CuratorFramework start() throws InterruptedException {
        return start(SESSION_MS);
    }

    CuratorFramework start(int sessionMs) throws InterruptedException {
        return start(connectString, sessionMs);
    }

    /**
     * A client to another address (a proxy before the server), closed with the others. Curator's
     * ensemble tracker is off: it would replace the addresses given with those of the ensemble's
     * configuration (the servers' own ports), and a client would then bypass its proxies.
     */
    CuratorFramework start(String to, int sessionMs) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(to)
                .ensembleTracker(false)
                .sessionTimeoutMs(sessionMs)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 8, 1_000))
                .build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) { // generous: a loaded machine starts slowly
            fail("no connection to " + to);
        }
        open.add(c);
        return c;
    }

    /**
     * Expires the client's session on the server for real: a second handle on the same session
     * closes it, so the server deletes the session's ephemeral nodes at once, and the client learns
     * of the expiry when it reconnects.
     */
    static void expireSession(CuratorFramework c, String connectString) throws Exception {
        ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
        ZooKeeper twin =
                new ZooKeeper(connectString, SESSION_MS, event -> {}, zk.getSessionId(), zk.getSessionPasswd());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!twin.getState().isConnected() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        twin.close();
    }

    /** A condition that may read ZooKeeper. */
    interface Condition {
        boolean holds() throws Exception;
    }

    /** A hang detector: waits until the condition holds, failing after a generous bound (20 s). */
    static void await(String what, Condition condition) throws InterruptedException {
        await(what, condition, 20_000);
    }

    static void await(String what, Condition condition, long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!holds(condition)) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting until " + what);
            }
            Thread.sleep(5);
        }
    }

    private static boolean holds(Condition condition) {
        try {
            return condition.holds();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            return false; // a read that failed (connection loss during a fault): ask again
        }
    }

    /** The request nodes under path now (in every generation). */
    static List<String> children(CuratorFramework c, String path) throws Exception {
        List<String> requests = new ArrayList<>();
        for (String generation : c.getChildren().forPath(path)) {
            if (!generation.startsWith(ZooKeeperSemaphore.GENERATION_PREFIX)) {
                continue;
            }
            try {
                for (String name : c.getChildren().forPath(path + "/" + generation)) {
                    if (QueueSnapshot.looksLikeRequest(name)) {
                        requests.add(name);
                    }
                }
            } catch (org.apache.zookeeper.KeeperException.NoNodeException deleted) {
                // a drained generation, deleted meanwhile
            }
        }
        return requests;
    }

    /** A server's "Mode:" line (leader, follower, standalone), or "down (...)" if it does not answer. */
    static String mode(InstanceSpec spec) {
        try {
            String srvr = FourLetterWordMain.send4LetterWord("localhost", spec.getPort(), "srvr");
            for (String line : srvr.split("\n")) {
                if (line.startsWith("Mode:")) {
                    return line;
                }
            }
            return srvr.trim();
        } catch (Exception e) {
            return "down (" + e.getMessage() + ")";
        }
    }

    /** The server among specs that is the ensemble's leader now, or null if none is. */
    static InstanceSpec leader(Collection<InstanceSpec> specs) {
        for (InstanceSpec spec : specs) {
            if (mode(spec).contains("leader")) {
                return spec;
            }
        }
        return null;
    }

    @Override
    public void close() {
        for (int i = open.size() - 1; i >= 0; i--) {
            CloseableUtils.closeQuietly(open.get(i));
        }
    }
}
