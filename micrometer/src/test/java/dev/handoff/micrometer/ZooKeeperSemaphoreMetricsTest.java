// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.handoff.zookeeper.Lease;
import dev.handoff.zookeeper.ZooKeeperSemaphore;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.TestingServer;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;
import org.apache.zookeeper.util.ServiceUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/** The meters of a ZooKeeperSemaphore, on a real in-process ZooKeeper server. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ZooKeeperSemaphoreMetricsTest {

    private TestingServer server;
    private final List<CuratorFramework> clients = new ArrayList<>();
    private String path;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void start(TestInfo test) throws Exception {
        server = new TestingServer(true);
        keepTestJvm();
        path = "/metrics-test/" + test.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void stop() throws Exception {
        for (int i = clients.size() - 1; i >= 0; i--) {
            CloseableUtils.closeQuietly(clients.get(i));
        }
        server.close();
    }

    /**
     * The in-process server asks ZooKeeper to end the JVM when its thread fails, and sets that
     * procedure on every start: after each start, a request is printed instead.
     */
    private static void keepTestJvm() {
        ServiceUtils.setSystemExitProcedure(code -> {
            if (code != 0) {
                new IllegalStateException("the ZooKeeper server asked to end the JVM with code " + code)
                        .printStackTrace(System.out);
            }
        });
    }

    private CuratorFramework client() throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(server.getConnectString())
                .sessionTimeoutMs(8_000)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new ExponentialBackoffRetry(50, 8, 1_000))
                .build();
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            fail("no connection to " + server.getConnectString());
        }
        clients.add(c);
        return c;
    }

    private double gauge(String name) {
        return registry.get(name).tag("path", path).gauge().value();
    }

    private long waits() {
        return registry.get("handoff.zookeeper.wait").tag("path", path).timer().count();
    }

    private double counter(String name, String... tags) {
        return registry.get(name).tag("path", path).tags(tags).counter().count();
    }

    /** A hang detector: the condition must come true, however long it takes up to a generous bound. */
    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting until " + what);
            }
            Thread.sleep(5);
        }
    }

    @Test
    void oneCallRegistersTheGaugesAndTheGrantsAreTimed() throws Exception {
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(client(), path, 4);
        ZooKeeperSemaphore other = new ZooKeeperSemaphore(client(), path, 4);
        ZooKeeperSemaphoreMetrics.monitor(registry, budget);
        assertEquals(4.0, gauge("handoff.zookeeper.capacity"));
        assertEquals(1.0, gauge("handoff.zookeeper.connected"));
        assertTrue(Double.isNaN(gauge("handoff.zookeeper.cluster.queue.length")), "no read of the queue yet");
        assertEquals(
                "permits",
                registry.get("handoff.zookeeper.held").gauge().getId().getBaseUnit());

        Lease three = budget.acquireBlocking(3);
        assertEquals(1.0, gauge("handoff.zookeeper.leases"));
        assertEquals(3.0, gauge("handoff.zookeeper.held"));
        await("the grant is timed (the listener is told after the future completes)", () -> waits() == 1);

        Lease othersOne = other.acquireBlocking(1);
        CompletableFuture<Lease> waiting = budget.acquireAsync(2);
        await("the request waits", () -> gauge("handoff.zookeeper.queue.length") == 1.0);
        assertEquals(2.0, gauge("handoff.zookeeper.queue.permits"));
        await("the cluster queue is read", () -> gauge("handoff.zookeeper.cluster.queue.length") == 3.0);

        three.close();
        Lease two = waiting.get(30, TimeUnit.SECONDS);
        await("the second grant is timed", () -> waits() == 2);
        assertEquals(0.0, gauge("handoff.zookeeper.queue.length"));
        assertEquals(2.0, gauge("handoff.zookeeper.held"));
        two.close();
        othersOne.close();
        assertEquals(0.0, gauge("handoff.zookeeper.leases"));
        assertEquals(0.0, counter("handoff.zookeeper.leases.lost"));
        assertEquals(
                0.0,
                registry.get("handoff.zookeeper.alarms")
                        .tag("path", path)
                        .functionCounter()
                        .count());
    }

    @Test
    void aLeaseWhoseNodeIsDeletedCountsAsLost() throws Exception {
        CuratorFramework curator = client();
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, path, 2);
        ZooKeeperSemaphoreMetrics.monitor(registry, budget);
        Lease lease = budget.acquireBlocking(1);
        curator.delete().forPath(lease.node()); // an operator, a cleanup script
        await("the lease is counted as lost", () -> counter("handoff.zookeeper.leases.lost") == 1.0);
        assertFalse(lease.isValid());
        assertEquals(0.0, gauge("handoff.zookeeper.leases"));
        lease.close();
    }

    @Test
    void aLostConnectionShowsAndIsCountedByState() throws Exception {
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(client(), path, 2);
        ZooKeeperSemaphoreMetrics.monitor(registry, budget);
        Lease lease = budget.acquireBlocking(1);

        server.stop();
        await("suspended", () -> counter("handoff.zookeeper.connection.changes", "state", "suspended") == 1.0);
        assertEquals(0.0, gauge("handoff.zookeeper.connected"));
        assertFalse(lease.isValid());

        server.restart();
        keepTestJvm();
        await("reconnected", () -> counter("handoff.zookeeper.connection.changes", "state", "reconnected") == 1.0);
        await("connected again", () -> gauge("handoff.zookeeper.connected") == 1.0);
        assertEquals(0.0, counter("handoff.zookeeper.connection.changes", "state", "lost"));
        lease.close();
    }

    @Test
    void readsRefusedByAnAclAreCountedOncePerRun() throws Exception {
        CuratorFramework ownerClient = client();
        ZooKeeperSemaphore owner = new ZooKeeperSemaphore(ownerClient, path, 1);
        ZooKeeperSemaphore waiter = new ZooKeeperSemaphore(client(), path, 1);
        ZooKeeperSemaphoreMetrics.monitor(registry, waiter);
        Lease held = owner.acquireBlocking(1);
        CompletableFuture<Lease> waiting = waiter.acquireAsync(1);
        await("the waiter has read the queue", () -> gauge("handoff.zookeeper.cluster.queue.length") == 2.0);

        // The generation becomes readable by the owner only (an ACL changed by an operator).
        ownerClient
                .getZookeeperClient()
                .getZooKeeper()
                .addAuthInfo("digest", "owner:secret".getBytes(StandardCharsets.UTF_8));
        String generation = held.node().substring(0, held.node().lastIndexOf('/'));
        Id ownerId = new Id("digest", DigestAuthenticationProvider.generateDigest("owner:secret"));
        ownerClient
                .setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, ownerId)))
                .forPath(generation);
        held.close(); // the waiter's watch fires; its reads of the generation are refused, and retried

        await("the run of failing reads is counted", () -> counter("handoff.zookeeper.reads.failing") == 1.0);
        Thread.sleep(1_000); // several retries
        assertEquals(1.0, counter("handoff.zookeeper.reads.failing"), "once per run, not per retry");
        waiting.cancel(false);
        ownerClient.setACL().withACL(ZooDefs.Ids.OPEN_ACL_UNSAFE).forPath(generation);
    }

    @Test
    void theBuilderSetsThePrefixTheUnitAndTheTags() throws Exception {
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(client(), path, 8);
        ZooKeeperSemaphoreMetrics metrics = ZooKeeperSemaphoreMetrics.builder()
                .prefix("budget")
                .baseUnit("mebibytes")
                .tags("service", "ingest")
                .build();
        assertSame(metrics, metrics.monitor(budget));
        assertSame(metrics, metrics.monitor(budget), "the same semaphore again: nothing changes");
        metrics.bindTo(registry);
        metrics.bindTo(registry); // the same registry again: nothing added
        SimpleMeterRegistry second = new SimpleMeterRegistry();
        metrics.bindTo(second);
        budget.acquireBlocking(2).close();
        for (MeterRegistry r : List.of(registry, second)) {
            assertEquals(
                    8.0,
                    r.get("budget.capacity")
                            .tags("path", path, "service", "ingest")
                            .gauge()
                            .value());
            assertEquals("mebibytes", r.get("budget.capacity").gauge().getId().getBaseUnit());
            await(
                    "the grant is timed in each registry",
                    () -> r.get("budget.wait")
                                    .tags("path", path, "service", "ingest")
                                    .timer()
                                    .count()
                            == 1);
        }
        assertTrue(metrics.toString().contains(path), metrics::toString);
    }

    @Test
    void wrongUseIsRefusedWithAMessageThatNamesTheCall() throws Exception {
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(client(), path, 2);
        ZooKeeperSemaphore other = new ZooKeeperSemaphore(client(), path + "-other", 2);
        ZooKeeperSemaphoreMetrics metrics = ZooKeeperSemaphoreMetrics.builder().build();
        IllegalStateException unbound = assertThrows(IllegalStateException.class, () -> metrics.bindTo(registry));
        assertTrue(unbound.getMessage().startsWith("bindTo("), unbound.getMessage());
        metrics.monitor(budget);
        IllegalStateException second = assertThrows(IllegalStateException.class, () -> metrics.monitor(other));
        assertTrue(second.getMessage().contains("already monitors"), second.getMessage());
        assertThrows(NullPointerException.class, () -> ZooKeeperSemaphoreMetrics.monitor(null, budget));
        assertThrows(NullPointerException.class, () -> ZooKeeperSemaphoreMetrics.monitor(registry, null));
        IllegalArgumentException ownTag = assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperSemaphoreMetrics.builder().tags("path", "x"));
        assertTrue(ownTag.getMessage().startsWith("tags("), ownTag.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperSemaphoreMetrics.builder().tags("odd"));
        assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperSemaphoreMetrics.builder().prefix("trailing."));
        assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperSemaphoreMetrics.builder().baseUnit(" "));
        assertEquals(0, registry.getMeters().size());
    }
}
