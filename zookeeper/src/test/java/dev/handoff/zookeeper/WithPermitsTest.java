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

import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The scoped calls: the permits go back exactly once however the body ends, and a cancelled wait holds nothing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WithPermitsTest extends ServerPerTest {

    @Test
    void theBodysStageReleasesHoweverItEnds() throws Exception {
        CuratorFramework c = clients.start();
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(c, path, 2);

        assertEquals(
                "done",
                s.withPermitsAsync(2, () -> CompletableFuture.completedFuture("done"))
                        .get(20, TimeUnit.SECONDS));

        RuntimeException boom = new RuntimeException("boom");
        ExecutionException failed = assertThrows(
                ExecutionException.class,
                () -> s.withPermitsAsync(2, () -> CompletableFuture.<String>failedFuture(boom))
                        .get(20, TimeUnit.SECONDS));
        assertSame(boom, failed.getCause());

        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> scoped = s.withPermitsAsync(2, () -> work);
        await(
                "the body runs, holding both permits",
                () -> children(c, path).size() == 1
                        && !scoped.isDone()
                        && s.toString().contains("held here=1"));
        work.cancel(false); // the body's own future is cancelled: the permits still go back
        assertThrows(CancellationException.class, () -> scoped.get(20, TimeUnit.SECONDS)); // cancelled as the body was

        ExecutionException threw = assertThrows(
                ExecutionException.class,
                () -> s.withPermitsAsync(1, () -> {
                            throw boom;
                        })
                        .get(20, TimeUnit.SECONDS));
        assertSame(boom, threw.getCause());
        ExecutionException nullStage = assertThrows(
                ExecutionException.class,
                () -> s.withPermitsAsync(1, () -> null).get(20, TimeUnit.SECONDS));
        assertInstanceOf(NullPointerException.class, nullStage.getCause());

        assertEquals(7, s.withPermitsBlocking(2, () -> 7));
        assertSame(
                boom,
                assertThrows(
                        RuntimeException.class,
                        () -> s.withPermitsBlocking(2, () -> {
                            throw boom;
                        })));
        await("every permit back", () -> children(c, path).isEmpty());
        Lease all = s.acquireBlocking(2); // nothing was leaked
        all.close();
    }

    @Test
    void cancellingBeforeTheGrantWithdrawsAndTheBodyNeverRuns() throws Exception {
        CuratorFramework c = clients.start();
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(c, path, 1);
        Lease holder = s.acquireBlocking(1);
        AtomicBoolean ran = new AtomicBoolean();
        CompletableFuture<String> scoped = s.withPermitsAsync(1, () -> {
            ran.set(true);
            return CompletableFuture.completedFuture("ran");
        });
        await("queued", () -> children(c, path).size() == 2);
        assertTrue(scoped.cancel(false));
        await("withdrawn", () -> children(c, path).size() == 1);
        holder.close();
        await("empty", () -> children(c, path).isEmpty());
        assertFalse(ran.get(), "the body of a cancelled wait never runs");
        assertTrue(scoped.isCancelled());
    }

    @Test
    void badInputIsRefusedByTheCall() throws Exception {
        ZooKeeperSemaphore s = new ZooKeeperSemaphore(clients.start(), path, 2);
        IllegalArgumentException tooMany = assertThrows(
                IllegalArgumentException.class,
                () -> s.withPermitsAsync(3, () -> CompletableFuture.completedFuture(1)));
        assertTrue(
                tooMany.getMessage().contains("withPermitsAsync(3)")
                        && tooMany.getMessage().contains("capacity 2"),
                tooMany.getMessage());
        assertThrows(IllegalArgumentException.class, () -> s.withPermitsBlocking(0, () -> 1));
        assertThrows(NullPointerException.class, () -> s.withPermitsAsync(1, null));
        assertThrows(NullPointerException.class, () -> s.withPermitsBlocking(1, null));
    }
}
