// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import static dev.handoff.docs.Scenario.expectUsual;
import static dev.handoff.docs.Scenario.failureOf;
import static dev.handoff.docs.Scenario.of;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreClosedException;
import dev.handoff.docs.Scenario.Ending;
import dev.handoff.micrometer.SemaphoreMetrics;
import dev.handoff.zookeeper.Lease;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Runs the snippets of docs/integrations and docs/guide/cookbook.md through success, a failure of
 * the work after the grant and a failure of the acquisition itself.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class IntegrationSnippetsTest {

    // ---- Reactor

    @ParameterizedTest
    @EnumSource(Ending.class)
    void reactorWithPermits(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Integrations i = new Integrations(work);
        expectUsual(of(i.memory), ending, work, () -> i.read(new Integrations.Item(1024)).toFuture());
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void reactorWithPermitsMany(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Integrations i = new Integrations(work);
        expectUsual(of(i.memory), ending, work, () -> i.list("p/").collectList().toFuture());
    }

    @Test
    void reactorReleasesWhenTheSubscriberCancels() {
        Integrations i = new Integrations(new Fakes.Work(Ending.SUCCESS));
        i.read(new Integrations.Item(1024)).timeout(Duration.ZERO).onErrorReturn(new byte[0]).block();
        for (int n = 0; n < 60_000 && i.memory.availablePermits() != i.memory.capacity(); n++) {
            Thread.onSpinWait();
        }
        assertEquals(i.memory.capacity(), i.memory.availablePermits());
    }

    // ---- Micrometer and JFR

    @ParameterizedTest
    @EnumSource(Ending.class)
    void micrometerStore(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Integrations i = new Integrations(work);
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Semaphore uploads = i.metered(registry);
        expectUsual(of(uploads), ending, work, () -> i.store(uploads, new byte[4096]));
        assertEquals((double) uploads.capacity(), registry.get("handoff.semaphore.capacity").gauge().value());
        if (ending == Ending.ACQUISITION_FAILS) {
            assertEquals(1, registry.get("handoff.semaphore.wait").tag("outcome", "closed").timer().count());
        }
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void jfrListener(Ending ending) {
        Fakes.Work work = new Fakes.Work(ending);
        Integrations i = new Integrations(work);
        SemaphoreMetrics metrics = SemaphoreMetrics.builder("uploads").build();
        Semaphore uploads = i.recorded(metrics);
        metrics.monitor(uploads).bindTo(new SimpleMeterRegistry());
        expectUsual(of(uploads), ending, work, () -> i.withHandle(uploads, new byte[4096]));
    }

    // ---- the cookbook: an HTTP byte budget

    @ParameterizedTest
    @EnumSource(Ending.class)
    void cookbookHttpBudget(Ending ending) throws IOException {
        AtomicInteger requests = new AtomicInteger();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/upload", exchange -> {
            requests.incrementAndGet();
            byte[] in = exchange.getRequestBody().readAllBytes();
            if (ending == Ending.WORK_FAILS) {
                exchange.close(); // no response: the client's stage fails
                return;
            }
            byte[] out = ("got " + in.length).getBytes();
            exchange.sendResponseHeaders(200, out.length);
            exchange.getResponseBody().write(out);
            exchange.close();
        });
        server.start();
        try {
            Cookbook.Uploader uploader = new Cookbook.Uploader();
            URI target = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/upload");
            CompletableFuture<Object> last = new CompletableFuture<>();
            Throwable failure = failureOf(of(uploader.bytesInFlight), ending,
                    () -> uploader.upload(target, new byte[100_000]).thenApply(r -> {
                        last.complete(r);
                        return r;
                    }));
            switch (ending) {
                case SUCCESS -> {
                    assertNull(failure);
                    assertEquals("got 100000", ((HttpResponse<?>) last.join()).body());
                }
                case WORK_FAILS -> assertInstanceOf(IOException.class, failure);
                case ACQUISITION_FAILS -> {
                    assertInstanceOf(SemaphoreClosedException.class, failure);
                    assertEquals(0, requests.get(), "no request without a grant");
                }
            }
        } finally {
            server.stop(0);
        }
    }

    // ---- the cookbook: guarding a JDBC pool

    @ParameterizedTest
    @EnumSource(Ending.class)
    void cookbookJdbc(Ending ending) {
        AtomicInteger queries = new AtomicInteger();
        AtomicInteger open = new AtomicInteger();
        Cookbook.Reports reports = new Cookbook.Reports(dataSource(ending == Ending.WORK_FAILS, queries, open));
        Throwable failure = failureOf(of(reports.connections), ending, () -> reports.count("orders"));
        switch (ending) {
            case SUCCESS -> assertNull(failure);
            case WORK_FAILS -> assertInstanceOf(SQLException.class, failure);
            case ACQUISITION_FAILS -> assertInstanceOf(SemaphoreClosedException.class, failure);
        }
        assertEquals(ending == Ending.ACQUISITION_FAILS ? 0 : 1, queries.get());
        assertEquals(0, open.get(), "every connection, statement and result set closed");
    }

    /** A data source of proxies: a query returns 42 or fails; open counts what is not closed. */
    static DataSource dataSource(boolean fails, AtomicInteger queries, AtomicInteger open) {
        return (DataSource) proxy(DataSource.class, open, false, (name, args) -> switch (name) {
            case "getConnection" -> proxy(Connection.class, open, true, (n, a) -> switch (n) {
                case "createStatement" -> proxy(Statement.class, open, true, (n2, a2) -> {
                    if (!n2.equals("executeQuery")) return null;
                    queries.incrementAndGet();
                    if (fails) throw new SQLException("the query failed (as the scenario asked)");
                    return proxy(ResultSet.class, open, true, (n3, a3) -> switch (n3) {
                        case "next" -> true;
                        case "getLong" -> 42L;
                        default -> null;
                    });
                });
                default -> null;
            });
            default -> null;
        });
    }

    interface Answer {
        Object answer(String method, Object[] args) throws Exception;
    }

    static Object proxy(Class<?> type, AtomicInteger open, boolean closeable, Answer answer) {
        if (closeable) open.incrementAndGet();
        return Proxy.newProxyInstance(IntegrationSnippetsTest.class.getClassLoader(), new Class<?>[] {type},
                (self, method, args) -> {
                    if (method.getName().equals("close")) {
                        open.decrementAndGet();
                        return null;
                    }
                    return answer.answer(method.getName(), args);
                });
    }

    // ---- ZooKeeper

    @Test
    void zookeeperRoundsTheCostUp() {
        assertEquals(1, ZooKeeperBudget.mebibytes(new byte[1]));
        assertEquals(1, ZooKeeperBudget.mebibytes(new byte[1 << 20]));
        assertEquals(2, ZooKeeperBudget.mebibytes(new byte[(1 << 20) + 1]));
        assertEquals(2, ZooKeeperBudget.mebibytes(new byte[3 << 19]));
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void zookeeperBudget(Ending ending) throws Exception {
        try (TestingServer server = new TestingServer(true);
             CuratorFramework curator = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100))) {
            curator.start();
            Fakes.Work work = new Fakes.Work(ending);
            ZooKeeperBudget z = new ZooKeeperBudget(curator, Fakes.client(work));
            byte[] body = new byte[(3 << 20) + 1]; // 4 MiB once rounded up
            if (ending != Ending.ACQUISITION_FAILS) {
                Throwable blocking = failureOf(noGuard(), ending, () -> {
                    z.upload(body);
                    return null;
                });
                Throwable async = failureOf(noGuard(), ending, () -> z.uploadAsync(body));
                if (ending == Ending.SUCCESS) {
                    assertNull(blocking);
                    assertNull(async);
                } else {
                    assertInstanceOf(Fakes.WorkFailed.class, blocking);
                    assertInstanceOf(Fakes.WorkFailed.class, async);
                }
                assertEquals(2, work.runs.get());
            } else {
                try (Lease all = z.budget.acquireBlocking(64)) {
                    CompletableFuture<Fakes.Response> sent = z.uploadAsync(body);   // waits behind `all`
                    assertTrue(sent.cancel(false));                                 // the caller gives up
                    Thread uploader = new Thread(() -> {
                        try {
                            z.upload(body);
                        } catch (InterruptedException expected) {
                            Thread.currentThread().interrupt();
                        }
                    });
                    uploader.start();
                    uploader.interrupt();                                           // and a blocked caller too
                    uploader.join();
                    assertTrue(all.isValid());
                }
                assertEquals(0, work.runs.get());
            }
            // Everything came back: the whole budget is granted again.
            Lease whole = z.budget.acquireAsync(64).get(1, TimeUnit.MINUTES);
            assertEquals(64, whole.permits());
            whole.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void zookeeperMetrics(Ending ending) throws Exception {
        try (TestingServer server = new TestingServer(true);
             CuratorFramework curator = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100))) {
            curator.start();
            Fakes.Work work = new Fakes.Work(ending);
            ZooKeeperBudget z = new ZooKeeperBudget(curator, Fakes.client(work));
            SimpleMeterRegistry registry = new SimpleMeterRegistry();
            z.monitor(registry);
            assertEquals(64.0, registry.get("handoff.zookeeper.capacity").gauge().value());
            byte[] body = new byte[1 << 20];
            long grants;
            if (ending != Ending.ACQUISITION_FAILS) {
                Throwable failure = failureOf(noGuard(), ending, () -> {
                    z.upload(body);
                    return null;
                });
                assertEquals(ending == Ending.SUCCESS, failure == null, String.valueOf(failure));
                grants = 1;
            } else {
                try (Lease all = z.budget.acquireBlocking(64)) {
                    CompletableFuture<Fakes.Response> sent = z.uploadAsync(body);   // waits behind `all`
                    assertTrue(sent.cancel(false));                                 // the caller gives up
                }
                grants = 1;                                                         // `all` only
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (registry.get("handoff.zookeeper.wait").timer().count() < grants && System.nanoTime() < deadline) {
                Thread.sleep(5); // the listener hears of a grant just after its future completes
            }
            assertEquals(grants, registry.get("handoff.zookeeper.wait").timer().count());
            assertEquals(0.0, registry.get("handoff.zookeeper.leases").gauge().value());
            assertEquals(0.0, registry.get("handoff.zookeeper.leases.lost").counter().count());
            assertEquals(1.0, registry.get("handoff.zookeeper.connected").gauge().value());
        }
    }

    @Test
    void zookeeperAsyncGivesBackALeaseWhenSendAsyncThrows() throws Exception {
        try (TestingServer server = new TestingServer(true);
             CuratorFramework curator = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100))) {
            curator.start();
            Fakes.Client throwing = new Fakes.Client() {
                @Override public void send(byte[] body) {
                    throw new Fakes.WorkFailed();
                }
                @Override public CompletableFuture<Fakes.Response> sendAsync(byte[] body) {
                    throw new Fakes.WorkFailed(); // throws instead of returning a failed stage
                }
            };
            ZooKeeperBudget z = new ZooKeeperBudget(curator, throwing);
            Throwable failure = failureOf(noGuard(), Ending.WORK_FAILS, () -> z.uploadAsync(new byte[10]));
            assertInstanceOf(Fakes.WorkFailed.class, failure);
            Lease whole = z.budget.acquireAsync(64).get(1, TimeUnit.MINUTES);
            assertEquals(64, whole.permits());
            whole.close();
            assertNotNull(whole.toString());
        }
    }

    /** No local primitive to check: the ZooKeeper tests check the cluster budget themselves. */
    static Scenario.Guarded noGuard() {
        return new Scenario.Guarded() {
            @Override public void holdBystander() { }
            @Override public void releaseBystander() { }
            @Override public void holdRest() { }
            @Override public void releaseRest() { }
            @Override public int queueLength() { return 0; }
            @Override public void close() { }
            @Override public boolean idle() { return true; }
            @Override public boolean snippetHolds() { return true; }
            @Override public String describe() { return "the ZooKeeper budget"; }
        };
    }
}
