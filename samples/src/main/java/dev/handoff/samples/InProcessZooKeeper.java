// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.ZooKeeper;

/**
 * Scaffolding of the ZooKeeper samples: an in-process ZooKeeper server (curator-test's
 * {@link TestingServer}) and its Curator clients, one per replica. Closing it closes the clients
 * still open, then the server.
 */
final class InProcessZooKeeper implements AutoCloseable {

    private final TestingServer server;
    private final List<CuratorFramework> clients = new ArrayList<>();

    /** Starts a fresh server. */
    InProcessZooKeeper() throws Exception {
        server = new TestingServer(true);
    }

    /** A new client of the server, started and connected: a replica. */
    CuratorFramework connect() throws InterruptedException {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                server.getConnectString(), 8_000, 5_000, new ExponentialBackoffRetry(50, 8));
        clients.add(client);
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + server.getConnectString() + " within 10 s");
        }
        return client;
    }

    /** Ends a client's session on the server, as a pause longer than the session timeout would. */
    void expireSession(CuratorFramework client) throws Exception {
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        ZooKeeper twin =
                new ZooKeeper(server.getConnectString(), 8_000, event -> {}, zk.getSessionId(), zk.getSessionPasswd());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!twin.getState().isConnected() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        twin.close(); // closing a handle of the session ends the session
    }

    @Override
    public void close() throws IOException {
        for (int i = clients.size() - 1; i >= 0; i--) {
            clients.get(i).close(); // does nothing if the sample closed it already
        }
        server.close();
    }
}
