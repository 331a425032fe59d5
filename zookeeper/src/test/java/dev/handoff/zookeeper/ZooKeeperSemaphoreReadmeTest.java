// SPDX-License-Identifier: Apache-2.0
package dev.handoff.zookeeper;

import static dev.handoff.zookeeper.Clients.await;
import static dev.handoff.zookeeper.Clients.children;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Java example of README's "Beyond one JVM", kept here verbatim between {@code // ---- doc}
 * and {@code // ---- end} (the first test checks that the README shows exactly these lines), and
 * run through a send that succeeds, a send that fails after the grant, and an acquisition that
 * fails. The rule: the permits come back exactly when they were granted.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ZooKeeperSemaphoreReadmeTest extends ServerPerTest {

    record Response(int bytes) {
    }

    /** The downstream of the example: counts sends, fails when told to. */
    final class Downstream {
        final AtomicInteger sends = new AtomicInteger();
        volatile boolean failing;

        void send(byte[] body) {
            sends.incrementAndGet();
            assertEquals(1, heldNodes(), "the send runs holding its lease");
            if (failing) {
                throw new IllegalStateException("downstream refused");
            }
        }

        CompletableFuture<Response> sendAsync(byte[] body) {
            try {
                send(body);
                return CompletableFuture.completedFuture(new Response(body.length));
            } catch (IllegalStateException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
    }

    private CuratorFramework curator;
    private final Downstream downstream = new Downstream();

    @BeforeEach
    void connect() throws Exception {
        curator = clients.start(); // after ServerPerTest's set-up
    }

    private ZooKeeperSemaphore open() {
        // ---- doc
        // In every replica: the same path, the same capacity (the first one writes it; a different one is refused).
        ZooKeeperSemaphore budget = new ZooKeeperSemaphore(curator, "/budgets/downstream-mib", 64);
        // ---- end
        return budget;
    }

    private void blocking(ZooKeeperSemaphore budget, byte[] body) throws InterruptedException {
        // ---- doc
        long mib = Math.max(1, body.length >> 20);
        try (Lease lease = budget.acquireBlocking(mib)) {      // strictly FIFO across every replica
            downstream.send(body);
        }                                                      // released here, however send() ends
        // ---- end
    }

    private CompletableFuture<Response> async(ZooKeeperSemaphore budget, byte[] body) {
        long mib = Math.max(1, body.length >> 20);
        // ---- doc
        CompletableFuture<Response> sent = budget.acquireAsync(mib).thenCompose(lease ->
                downstream.sendAsync(body).whenComplete((response, failure) -> lease.close()));
        // ---- end
        return sent;
    }

    @Test
    void theReadmeShowsExactlyThisCode() throws IOException {
        assertEquals(docLines(Path.of("src/test/java/dev/handoff/zookeeper/ZooKeeperSemaphoreReadmeTest.java")),
                readmeJavaLines(), "README \"Beyond one JVM\" and this test's // ---- doc regions differ");
    }

    @Test
    void sendSucceeds() throws Exception {
        ZooKeeperSemaphore budget = open();
        blocking(budget, new byte[3 << 20]);
        assertEquals(3 << 20, async(budget, new byte[3 << 20]).get(10, TimeUnit.SECONDS).bytes());
        assertEquals(2, downstream.sends.get());
        assertAllReturned(budget);
    }

    @Test
    void sendFailsAfterTheGrant() throws Exception {
        ZooKeeperSemaphore budget = open();
        downstream.failing = true;
        assertThrows(IllegalStateException.class, () -> blocking(budget, new byte[5 << 20]));
        ExecutionException e = assertThrows(ExecutionException.class, () -> async(budget, new byte[5 << 20]).get(10, TimeUnit.SECONDS));
        assertEquals("downstream refused", e.getCause().getMessage());
        assertAllReturned(budget);
    }

    @Test
    void theAcquisitionItselfFails() throws Exception {
        ZooKeeperSemaphore budget = open();
        Thread.currentThread().interrupt();
        assertThrows(InterruptedException.class, () -> blocking(budget, new byte[10]));
        assertThrows(IllegalArgumentException.class, () -> blocking(budget, new byte[65 << 20]));
        budget.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> async(budget, new byte[10]).get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, e.getCause());
        assertEquals(0, downstream.sends.get(), "no send without a grant");
        ZooKeeperSemaphore again = open();
        assertAllReturned(again);
        assertFalse(Thread.interrupted());
    }

    private void assertAllReturned(ZooKeeperSemaphore budget) throws Exception {
        await("every node deleted", () -> heldNodes() == 0);
        Lease all = budget.tryAcquireBlocking(64, java.time.Duration.ofSeconds(10)).orElseThrow();
        assertTrue(all.isValid());
        all.close();
        await("empty", () -> heldNodes() == 0);
        assertSame(budget.capacity(), budget.capacity());
    }

    private int heldNodes() {
        try {
            return children(curator, "/budgets/downstream-mib").size();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** The trimmed lines between // ---- doc and // ---- end markers of a source file. */
    static List<String> docLines(Path source) throws IOException {
        List<String> out = new ArrayList<>();
        boolean in = false;
        for (String line : Files.readAllLines(source, StandardCharsets.UTF_8)) {
            String t = line.trim();
            if (t.equals("// ---- doc")) {
                in = true;
            } else if (t.equals("// ---- end")) {
                in = false;
            } else if (in && !t.isEmpty()) {
                out.add(t.replaceAll("\\s+//", " //"));
            }
        }
        return out;
    }

    /** The trimmed code lines (imports left out) of the ```java block of README's "Beyond one JVM". */
    static List<String> readmeJavaLines() {
        List<String> readme;
        try {
            readme = Files.readAllLines(Path.of("../README.md"), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> out = new ArrayList<>();
        int i = readme.indexOf("## Beyond one JVM");
        assertTrue(i >= 0, "README has a section \"## Beyond one JVM\"");
        while (!readme.get(i).equals("```java")) {
            i++;
        }
        for (i++; !readme.get(i).equals("```"); i++) {
            String t = readme.get(i).trim();
            if (!t.isEmpty() && !t.startsWith("import ")) {
                out.add(t.replaceAll("\\s+//", " //"));
            }
        }
        return out;
    }
}
